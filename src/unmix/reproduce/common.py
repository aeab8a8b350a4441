"""What every paper's reproduction shares: collecting finished runs into rows, writing the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unmix import runs
from unmix.sweep import JobOutcome


@dataclass
class ReproduceReport:
    target: str
    out: Path
    rows: list[dict]
    markdown: str
    wall_time_s: float
    failures: list[str]


def collect_rows(
    labels: Sequence[str],
    outcomes: Sequence[JobOutcome],
    make_row: Callable[[int, dict[str, Any]], dict[str, Any]],
) -> tuple[list[dict], list[str]]:
    """``make_row(i, summary)`` for every run that finished; ``"label: error"`` for the others."""
    rows, failures = [], []
    for i, (label, oc) in enumerate(zip(labels, outcomes, strict=True)):
        if oc.summary is None:
            failures.append(f"{label}: {oc.error}")
        else:
            rows.append(make_row(i, oc.summary))
    return rows, failures


def report_dir(out: str | Path, budget: str) -> Path:
    """``out/budget``, created: where a reproduction writes its table, csv and figures."""
    path = Path(out) / budget
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_report(folder: Path, target: str, rows: list[dict], markdown: str) -> None:
    """``<target>.csv`` (one row per run; load with pandas) and ``<target>.md`` in ``folder``."""
    runs.write_csv(folder / f"{target}.csv", rows)
    runs.atomic_write_text(folder / f"{target}.md", markdown)
