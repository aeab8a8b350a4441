"""Zimmermann et al. 2021 (paper 000): the reports of Tables 1, 2, 4 and Fig. 2.

``unmix reproduce zimmermann-table1 --budget quick`` trains every row's unsupervised model (and,
where the paper reports them, the Identity and Supervised baselines) — see
:mod:`unmix.reproduce` — and these functions turn the finished runs' rows into

* the table, with our mean ± std over seeds beside the paper's mean ± std, and the M. column
  computed by :func:`unmix.papers.zimmermann.presets.assumptions_match`;
* ``zimmermann-fig2.png`` (Fig. 2) — R² against the marginal's concentration, with the mass to move;
* for Tables 1 and 2, each row's CPU-minutes and the fields where the budget's recipe departs from
  the paper's setting, the total CPU-minutes of the unsupervised runs, and
  ``<target>-time.png`` — *time to identifiability*: the held-out score of every row's
  unsupervised run against the CPU-seconds it had used, the paper's value as a mark (Fig. 2's
  report draws the same figure, one line per point of the sweep, without marks).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from unmix.papers.base import Preset, in_group
from unmix.papers.figures import save_figure
from unmix.papers.zimmermann import presets
from unmix.papers.zimmermann.presets import PAPER_000, assumptions_match
from unmix.settings import changed_fields, flat_fields, label

COLUMNS = ("identity", "supervised", "unsupervised")


def table4_markdown(
    rows: list[dict], budget: str, seeds: int, cond_scale: float | None = None
) -> str:
    """Table 4 (3DIdent-like scenes): R² and MCC per row beside the paper's, and the supervised
    baseline; the observation model, data set size and encoder are those of ``budget``.
    ``cond_scale``: the conditional's scale the budget's runs drew from (``None``: the paper's)."""
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
        if s.data.positives == "augment":
            cond = "Augm."
        else:  # the conditional the runs drew from: the budget's scale (quick: 0.1)
            drawn = s.latent.conditional
            if cond_scale is not None:
                drawn = drawn.model_copy(update={"scale": cond_scale})
            cond = drawn.label()
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


RECIPE_FIELDS = {
    "objective.tau": "τ {:g}",
    "objective.negatives": "{} negatives",
    "objective.n_negatives": "{:,} drawn negatives",
    "train.batch_size": "batch {:,}",
    "train.steps": "{:,} steps",
    "train.lr": "lr {:g}",
    "train.lr_schedule": "{} lr",
    "model.hidden": "hidden {} ×N",
    "model.standardize_input": "standardised input",
    "model.space": "{} head",
    "objective.align_warmup": "alignment warm-up",
    "objective.tau_warmup": "τ warm-up",
    "objective.kind": "objective {}",
}
"""Fields whose departure from the paper's setting a Table 1/2 report names beside the row."""


def _minutes(seconds: float) -> str:
    m = seconds / 60
    return f"{m:.1f}" if m >= 0.1 else f"{m:.2f}"


def cpu_seconds(row: dict[str, Any]) -> tuple[float | None, bool]:
    """A finished run's CPU-seconds (``cpu_time_s`` of its summary) and True; for runs written
    before unmix recorded CPU time, wall time × threads and False."""
    cpu = row.get("cpu_time_s")
    if isinstance(cpu, int | float) and math.isfinite(cpu):
        return float(cpu), True
    wall = row.get("wall_time_s")
    if isinstance(wall, int | float) and math.isfinite(wall):
        return float(wall) * float(row.get("threads") or 1), False
    return None, False


def departures(preset: Preset, rows: list[dict]) -> str:
    """The recipe fields in which this row's unsupervised run differs from the paper's setting
    (read from the run's config.yaml), e.g. ``τ 0.2, batch 4,096, 800 steps``."""
    from unmix import runs

    for r in rows:
        if r["preset"] != preset.name or r["column"] != "unsupervised" or not r.get("run_dir"):
            continue
        path = Path(r["run_dir"]) / runs.CONFIG
        if not path.exists():
            continue
        used = yaml.safe_load(path.read_text())
        paper = preset.setting.to_dict()
        flat = flat_fields(used)
        parts = []
        for key in changed_fields(paper, used):
            if key in RECIPE_FIELDS and key in flat:
                value = flat[key]
                if key == "model.standardize_input":
                    parts += ["standardised input"] if value else []
                    continue
                if key == "objective.align_warmup":
                    if value:
                        start = flat.get("objective.align_start", 1.0)
                        parts.append(f"alignment warm-up ({start:g} → 1 over {value:.0%} of steps)")
                    continue
                if key == "objective.tau_warmup":
                    if value:
                        start, tau = flat.get("objective.tau_start"), flat.get("objective.tau", 1.0)
                        parts.append(f"τ warm-up ({start:g} → {tau:g} over {value:.0%} of steps)")
                    continue
                if key == "objective.kind" and value == "align_uniform":
                    w, t = flat.get("objective.align_weight"), flat.get("objective.t")
                    parts.append(
                        f"align + uniform terms in place of the Lp-InfoNCE (alignment weight "
                        f"{w:g}, potential e^(−{t:g}·δ))"
                    )
                    continue
                if key == "model.space" and value == "box_sigmoid":
                    if flat.get("model.learn_magnitude", True):
                        parts.append("sigmoid·b head (the reference code's)")
                    else:
                        parts.append("sigmoid head, b fixed at 1 (the unit box)")
                    continue
                if isinstance(value, list):
                    value = "-".join(str(v) for v in value)
                parts.append(RECIPE_FIELDS[key].format(value))
        return ", ".join(parts) or "as in the paper"
    return ""


def table_markdown(target: str, rows: list[dict], budget: str, seeds: int) -> str:
    metric = "r2" if target.endswith("table1") else "mcc"
    head = (
        "| row | space | p(z) | p(z̃\\|z) | model | q_h | M. | Identity | Supervised "
        "| Unsupervised | paper: Identity | paper: Supervised | paper: Unsupervised "
        "| CPU-min | recipe (where it departs from the paper) |"
    )
    lines = [
        f"{'R²' if metric == 'r2' else 'MCC'} [%], budget `{budget}`, {seeds} seed(s) "
        f"(mean ± std over seeds where > 1). Paper values: {PAPER_000}. CPU-min: the "
        "unsupervised run's CPU time (mean over seeds).",
        "",
        head,
        "|" + "---|" * 15,
    ]
    total, measured = 0.0, True
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
        cpu = []
        for r in rows:
            if r["preset"] == preset.name and r["column"] == "unsupervised":
                sec, is_cpu = cpu_seconds(r)
                if sec is not None:
                    cpu.append(sec)
                    total += sec
                    measured &= is_cpu
        cpu_min = _minutes(np.mean(cpu)) if cpu else ""
        match = "✓" if assumptions_match(s, "affine" if metric == "r2" else "permutation") else "✗"
        row = preset.name.rsplit("row", 1)[-1]
        lines.append(
            f"| {row} | {s.latent.space} | {s.latent.marginal.label()} | "
            f"{s.latent.conditional.label()} | {s.model.space} | {label(s.objective)} | {match} | "
            f"{_fmt(ours['identity'])} | {_fmt(ours['supervised'])} | {_fmt(ours['unsupervised'])} | "
            f"{paper['identity']} | {paper['supervised']} | {paper['unsupervised']} | "
            f"{cpu_min} | {departures(preset, rows)} |"
        )
    n_unsup = sum(r["column"] == "unsupervised" for r in rows if r["preset"].startswith(target))
    if n_unsup:
        how = "CPU time" if measured else "wall time × threads for runs without a CPU record"
        lines += [
            "",
            f"Unsupervised runs: {n_unsup}, {total / 60:.1f} CPU-minutes in all "
            f"({total / 60 / max(1, seeds):.1f} per seed; {how}).",
        ]
    return "\n".join(lines) + "\n"


def _line_label(name: str) -> str:
    """A row's legend label: ``row 5`` for a table's preset, ``box-invvar400`` for Fig. 2's."""
    if "-row" in name:
        return f"row {name.rsplit('row', 1)[-1]}"
    return name.removeprefix("zimmermann-fig2-")


def time_to_identifiability(target: str, rows: list[dict], out: Path) -> str:
    """Plot every row's held-out score (MCC for Table 2, R² otherwise: Table 1, Fig. 2) against
    the CPU-seconds its unsupervised run had used (``metrics.csv``; one line per row or point,
    the lowest seed), with the paper's value as a mark at the right where the paper gives one;
    save ``<target>-time.png`` and return its Markdown."""
    import pandas as pd

    from unmix import runs
    from unmix.papers.figures import pyplot

    metric = "mcc" if target.endswith("table2") else "r2"
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colours = plt.get_cmap("tab20")
    marks: list[tuple[float, Any]] = []
    x_max = 1.0
    for i, preset in enumerate(in_group(target)):
        mine = sorted(
            (r for r in rows if r["preset"] == preset.name and r["column"] == "unsupervised"),
            key=lambda r: r["seed"],
        )
        path = Path(mine[0]["run_dir"]) / runs.METRICS if mine else None
        if path is None or not path.exists():
            continue
        hist = pd.read_csv(path)
        if metric not in hist:
            continue
        if "cpu_s" in hist and hist["cpu_s"].notna().all():
            x = hist["cpu_s"]
        else:  # runs written before unmix recorded CPU time
            x = hist["elapsed_s"] * float(mine[0].get("threads") or 1)
        x = x.clip(lower=1e-1)
        colour = colours(i % 20)
        label = _line_label(preset.name)
        ax.plot(x, 100 * hist[metric], "-o", color=colour, lw=1.4, ms=2.5, label=label)
        x_max = max(x_max, float(x.max()))
        if "unsupervised" in preset.paper:
            marks.append((preset.paper["unsupervised"][0], colour))
    if not marks and not ax.lines:
        plt.close(fig)
        return ""
    for value, colour in marks:  # the paper's values, just right of the longest run
        ax.scatter([x_max * 1.6], [value], color=colour, marker="<", s=30)
    ax.set_xscale("log")
    ax.set_xlim(right=x_max * 2.2)
    lo, hi = ax.get_xlim()
    ticks = [m * 10**e for e in range(-1, 7) for m in (1, 2, 5) if lo <= m * 10**e <= hi]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])  # 1-2-5 labels in plain seconds
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("CPU-seconds used by the run")
    ax.set_ylabel(f"{'R²' if metric == 'r2' else 'MCC'} (held out) [%]")
    ax.set_title(f"{target}: time to identifiability" + (" (◀ = paper)" if marks else ""))
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    name = f"{target}-time.png"
    save_figure(fig, out / name, rows)
    return f"\n![time to identifiability]({name})\n"


def fig2_report(rows: list[dict], out: Path) -> str:
    """Plot R² vs concentration with the mass to move (Fig. 2) and return a Markdown summary."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from unmix.distributions.mass import mass_to_move_box_normal, mass_to_move_vmf

    def r2s_of(name: str) -> list[float]:
        return [r["r2"] for r in rows if r["preset"] == name and r["column"] == "unsupervised"]

    def r2_of(name: str) -> float:
        vals = r2s_of(name)
        return float(np.mean(vals)) if vals else float("nan")

    def spread(name: str) -> float:  # the std over seeds, 0 for one seed
        vals = r2s_of(name)
        return float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0

    sphere_names = [f"zimmermann-fig2-sphere-kappa{k:g}" for k in presets.FIG2_SPHERE_KAPPAS]
    box_names = [f"zimmermann-fig2-box-invvar{iv:g}" for iv in presets.FIG2_BOX_INVVARS]
    sphere = [
        (k, r2_of(name), mass_to_move_vmf(10, k).value)
        for k, name in zip(presets.FIG2_SPHERE_KAPPAS, sphere_names, strict=True)
    ]
    box = [
        (iv, r2_of(name), mass_to_move_box_normal(10, iv**-0.5).value)
        for iv, name in zip(presets.FIG2_BOX_INVVARS, box_names, strict=True)
    ]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, data, names, xlabel, cond in (
        (axes[0], sphere, sphere_names, "κ of the vMF marginal", 1.0),
        (
            axes[1],
            box,
            box_names,
            "1/σ² of the normal marginal",
            presets.FIG2_BOX_CONDITIONAL_SCALE**-2,
        ),
    ):
        x = [d[0] for d in data]
        err = [100 * spread(n) for n in names]
        ax.errorbar(
            x, [100 * d[1] for d in data], yerr=err, fmt="ko-", capsize=3, label="R² (ours)"
        )
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

    def cpu_min(name: str) -> str:
        secs = [cpu_seconds(r)[0] for r in rows if r["preset"] == name]
        secs = [x for x in secs if x is not None]
        return _minutes(float(np.mean(secs))) if secs else ""

    def r2_cell(name: str) -> str:
        return _fmt(r2s_of(name)) if r2s_of(name) else "nan"

    lines = [
        "R² [%]: mean ± std over seeds where > 1; the error bars of the figure are the same std.",
        "",
        "| space | concentration | R² [%] | seeds | mass to move [%] | CPU-min |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| sphere | κ = {k:g} | {r2_cell(n)} | {len(r2s_of(n))} | {100 * m:.1f} | {cpu_min(n)} |"
        for (k, _, m), n in zip(sphere, sphere_names, strict=True)
    ]
    lines += [
        f"| box | 1/σ² = {k:g} | {r2_cell(n)} | {len(r2s_of(n))} | {100 * m:.1f} | {cpu_min(n)} |"
        for (k, _, m), n in zip(box, box_names, strict=True)
    ]
    total = sum(x for x in (cpu_seconds(r)[0] for r in rows) if x is not None)
    lines += ["", f"{len(rows)} runs, {total / 60:.1f} CPU-minutes in all."]
    return "\n".join(lines) + "\n\n![Fig. 2](zimmermann-fig2.png)\n"
