"""What every paper's figures share: the Agg backend, and a stamp saying what made the figure.

Every report figure is saved with :func:`save_figure`, which writes a footer with the budget,
the seeds, the number of runs and the unmix commit — so a smoke figure never passes for a result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def stamp_text(rows: list[dict[str, Any]], budget: str | None) -> str:
    """``budget quick · seeds 0–2 · 12 runs · unmix 0.1.0 @ 1a2b3c4``."""
    from unmix import __version__
    from unmix.runs import git_commit

    seeds = sorted({int(r["seed"]) for r in rows if "seed" in r})
    if not seeds:
        seed_text = "no runs"
    elif seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        seed_text = f"seeds {seeds[0]}–{seeds[-1]}"
    else:
        seed_text = "seed" + ("s " if len(seeds) > 1 else " ") + ", ".join(map(str, seeds))
    commit = (git_commit() or "unknown commit")[:12]
    return (
        f"budget {budget or '?'} · {seed_text} · {len(rows)} runs · unmix {__version__} @ {commit}"
    )


def save_figure(fig, path: Path, rows: list[dict[str, Any]], budget: str | None = None) -> Path:
    """Stamp ``fig`` (budget — by default the report folder's name —, seeds, runs, commit) and
    save it to ``path``."""
    path = Path(path)
    budget = budget or path.parent.name
    fig.text(
        0.995, 0.005, stamp_text(rows, budget), ha="right", va="bottom", fontsize=6, color="0.4"
    )
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path
