"""Zimmermann et al. 2021 (paper 000): the reports of Tables 1, 2, 4 and Fig. 2.

``unmix reproduce zimmermann-table1 --budget quick`` trains every row's unsupervised model (and,
where the paper reports them, the Identity and Supervised baselines) — see
:mod:`unmix.reproduce` — and these functions turn the finished runs' rows into

* the table, with our mean ± std over seeds beside the paper's mean ± std, and the M. column
  computed by :func:`unmix.papers.zimmermann.presets.assumptions_match`;
* ``zimmermann-fig2.png`` (Fig. 2) — R² against the marginal's concentration, with the mass to move.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from unmix.papers.base import Preset, in_group
from unmix.papers.figures import save_figure
from unmix.papers.zimmermann import presets
from unmix.papers.zimmermann.presets import PAPER_000, assumptions_match
from unmix.settings import label

COLUMNS = ("identity", "supervised", "unsupervised")


def table4_markdown(rows: list[dict], budget: str, seeds: int) -> str:
    """Table 4 (3DIdent-like scenes): R² and MCC per row beside the paper's, and the supervised
    baseline; the observation model, data set size and encoder are those of ``budget``."""
    from unmix.papers.zimmermann.images import TABLE4_IDENTITY_R2

    def ours(name: str, column: str, key: str) -> str:
        return _fmt([r[key] for r in rows if r["preset"] == name and r["column"] == column])

    def paper(p: Preset, key: str) -> str:
        return f"{p.paper[key][0]:.2f} ± {p.paper[key][1]:.2f}" if key in p.paper else ""

    lines = [
        f"R² and MCC [%] on the test split, budget `{budget}`, {seeds} seed(s) (mean ± std over "
        f"seeds where > 1). Paper values: {PAPER_000}, Table 4 (Identity R² of row 1: "
        f"{TABLE4_IDENTITY_R2[0]:.2f} ± {TABLE4_IDENTITY_R2[1]:.2f}; not computed here).",
        "",
        r"| row | p(z̃\|z) | model | q_h | M. | R² | MCC | paper: R² | paper: MCC |",
        "|" + "---|" * 9,
    ]
    sup = []
    for p in in_group("zimmermann-table4"):
        s = p.setting
        cond = "Augm." if s.data.positives == "augment" else s.latent.conditional.label()
        match = "✓" if assumptions_match(s, "affine") else "✗"
        row = p.name.rsplit("row", 1)[-1]
        lines.append(
            f"| {row} | {cond} | {s.model.space} | {label(s.objective)} | {match} | "
            f"{ours(p.name, 'unsupervised', 'r2')} | {ours(p.name, 'unsupervised', 'mcc')} | "
            f"{paper(p, 'unsupervised')} | {paper(p, 'unsupervised_mcc')} |"
        )
        if "supervised" in p.paper:
            sup.append(
                f"| Supervised ({s.model.space}) | {ours(p.name, 'supervised', 'r2')} | "
                f"{ours(p.name, 'supervised', 'mcc')} | {paper(p, 'supervised')} | "
                f"{paper(p, 'supervised_mcc')} |"
            )
    if sup:
        lines += ["", "| baseline | R² | MCC | paper: R² | paper: MCC |", "|---|---|---|---|---|"]
        lines += sup
    factor_keys = sorted(
        {k for r in rows for k in r if k.startswith("r2_factor")},
        key=lambda k: int(k.removeprefix("r2_factor")),
    )
    if factor_keys:
        from unmix.render import SCENE_FACTOR_NAMES

        names = [SCENE_FACTOR_NAMES[int(k.removeprefix("r2_factor"))] for k in factor_keys]
        lines += [
            "",
            "Per-factor R² [%] (held-out affine fit of each true factor):",
            "",
            "| row | column | " + " | ".join(names) + " |",
            "|" + "---|" * (2 + len(names)),
        ]
        for r in rows:
            vals = " | ".join(f"{100 * r[k]:.1f}" for k in factor_keys)
            lines.append(f"| {r['preset'].rsplit('row', 1)[-1]} | {r['column']} | {vals} |")
    return "\n".join(lines) + "\n"


def _fmt(values: list[float]) -> str:
    if not values:
        return "–"
    v = 100 * np.asarray(values)
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}" if len(v) > 1 else f"{v[0]:.2f}"


def table_markdown(target: str, rows: list[dict], budget: str, seeds: int) -> str:
    metric = "r2" if target.endswith("table1") else "mcc"
    head = (
        "| row | space | p(z) | p(z̃\\|z) | model | q_h | M. | Identity | Supervised "
        "| Unsupervised | paper: Identity | paper: Supervised | paper: Unsupervised |"
    )
    lines = [
        f"{'R²' if metric == 'r2' else 'MCC'} [%], budget `{budget}`, {seeds} seed(s) "
        f"(mean ± std over seeds where > 1). Paper values: {PAPER_000}.",
        "",
        head,
        "|" + "---|" * 13,
    ]
    for preset in in_group(target):
        s = preset.setting
        ours = {
            c: [r[metric] for r in rows if r["preset"] == preset.name and r["column"] == c]
            for c in COLUMNS
        }
        paper = {
            c: (f"{preset.paper[c][0]:.2f} ± {preset.paper[c][1]:.2f}" if c in preset.paper else "")
            for c in COLUMNS
        }
        match = "✓" if assumptions_match(s, "affine" if metric == "r2" else "permutation") else "✗"
        row = preset.name.rsplit("row", 1)[-1]
        lines.append(
            f"| {row} | {s.latent.space} | {s.latent.marginal.label()} | "
            f"{s.latent.conditional.label()} | {s.model.space} | {label(s.objective)} | {match} | "
            f"{_fmt(ours['identity'])} | {_fmt(ours['supervised'])} | {_fmt(ours['unsupervised'])} | "
            f"{paper['identity']} | {paper['supervised']} | {paper['unsupervised']} |"
        )
    return "\n".join(lines) + "\n"


def fig2_report(rows: list[dict], out: Path) -> str:
    """Plot R² vs concentration with the mass to move (Fig. 2) and return a Markdown summary."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from unmix.distributions.mass import mass_to_move_box_normal, mass_to_move_vmf

    def r2_of(name: str) -> float:
        vals = [r["r2"] for r in rows if r["preset"] == name and r["column"] == "unsupervised"]
        return float(np.mean(vals)) if vals else float("nan")

    sphere = [
        (k, r2_of(f"zimmermann-fig2-sphere-kappa{k:g}"), mass_to_move_vmf(10, k).value)
        for k in presets.FIG2_SPHERE_KAPPAS
    ]
    box = []
    for iv in presets.FIG2_BOX_INVVARS:
        mass = mass_to_move_box_normal(10, iv**-0.5).value
        box.append((iv, r2_of(f"zimmermann-fig2-box-invvar{iv:g}"), mass))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, data, xlabel, cond in (
        (axes[0], sphere, "κ of the vMF marginal", 1.0),
        (axes[1], box, "1/σ² of the normal marginal", presets.FIG2_BOX_CONDITIONAL_SCALE**-2),
    ):
        x = [d[0] for d in data]
        ax.plot(x, [100 * d[1] for d in data], "ko-", label="R² (ours)")
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("R² [%]")
        ax.set_ylim(0, 102)
        ax.axvline(cond, color="k", ls="--", label="conditional's concentration")
        twin = ax.twinx()
        twin.plot(x, [100 * d[2] for d in data], "s-", color="tab:blue")
        twin.set_ylabel("mass to move [%]", color="tab:blue")
        twin.set_ylim(0, 102)
    axes[0].set_title("sphere S⁹, vMF marginal at the pole")
    axes[1].set_title("box [0,1]¹⁰, normal marginal at the centre")
    fig.tight_layout()
    handles = axes[0].get_legend_handles_labels()
    twin_line = plt.Line2D([], [], marker="s", color="tab:blue", label="mass to move [%]")
    fig.legend(
        [*handles[0], twin_line],
        [*handles[1], "mass to move [%]"],
        loc="lower center",
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    save_figure(fig, out / "zimmermann-fig2.png", rows)
    lines = ["| space | concentration | R² [%] | mass to move [%] |", "|---|---|---|---|"]
    lines += [f"| sphere | κ = {k:g} | {100 * r:.2f} | {100 * m:.1f} |" for k, r, m in sphere]
    lines += [f"| box | 1/σ² = {k:g} | {100 * r:.2f} | {100 * m:.1f} |" for k, r, m in box]
    return "\n".join(lines) + "\n\n![Fig. 2](zimmermann-fig2.png)\n"
