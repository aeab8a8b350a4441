r"""Reizinger et al. 2022 (paper 004), Fig. 5: a VAE on Sprites, reported beside the paper.

From the runs of ``reizinger-fig5`` (one per seed), :func:`fig5_report` writes

* ``reizinger-fig5.png`` — left: MCC and :math:`C_{IMA}` of the decoder over training (every
  evaluation of every run; paper: they are anti-correlated), both statistics: the global
  :math:`C_{IMA}` (``c_ima``, the mean over samples of each Jacobian's :math:`c_{IMA}`) and the
  :math:`c_{IMA}` of the batch-mean Jacobian (``c_ima_mean_jacobian``, what the reference code
  logs), each one's Spearman correlation with MCC over all evaluations stated below the table
  (:func:`cima_trend`); centre: true factor against its matched, sign-corrected estimate
  (posterior mean, affinely rescaled) for the best run (highest final MCC); right:
  ``reizinger-fig5-traversal.png`` — decoded traversals of each matched latent of the best run,
  one row per true factor, from its 5 % to its 95 % quantile with the others at the posterior
  mean of one evaluation image;
* a Markdown table of MCC per factor (ours: median over seeds and best run; paper: its best run).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

from unmix.papers.reizinger.presets import FIG5_PAPER_MCC
from unmix.render import SPRITES_FACTOR_NAMES

TRAVERSAL_STEPS = 8


def _history(run_dir: str | Path) -> list[dict]:
    path = Path(run_dir) / "metrics.csv"
    if not path.exists():
        return []
    with path.open() as fh:
        return [
            {k: float(v) for k, v in r.items() if v not in ("", None)} for r in csv.DictReader(fh)
        ]


def _matched(exp, n: int = 1024):
    """Evaluation latents, posterior means and MCC's matching for a trained Sprites VAE."""
    from unmix.metrics import mcc

    z = exp.eval_data()[:n]
    vae = exp.encoder
    with torch.no_grad():
        mu, logvar = vae.encode(exp.mixing(z))
        z_hat = vae.prior.posterior_mean(mu, logvar)
    res = mcc(z.double().numpy(), z_hat.double().numpy())
    return z, mu, z_hat, res


def _traversal(exp, mu: torch.Tensor, res, out: Path, names: list[str], runs: list) -> None:
    """Decoder traversal of the best run: one row per true factor (the latent MCC matched to
    it, from its 5 % to its 95 % quantile over the evaluation set, the others at one sample's
    posterior mean); rows and columns labelled."""
    from unmix.papers.figures import pyplot, save_figure

    vae = exp.encoder
    shape = exp.mixing.image_shape
    base = mu[0]
    rows = []
    for k in range(mu.shape[1]):
        j = int(res.permutation[k])
        lo, hi = torch.quantile(mu[:, j], torch.tensor([0.05, 0.95]))
        vals = torch.linspace(float(lo), float(hi), TRAVERSAL_STEPS)
        if res.matched_correlations[k] < 0:
            vals = vals.flip(0)
        u = base.repeat(TRAVERSAL_STEPS, 1)
        u[:, j] = vals
        with torch.no_grad():
            imgs = vae.decode(u).reshape(TRAVERSAL_STEPS, *shape).clamp(0, 1)
        rows.append(torch.cat(list(imgs), dim=2))
    grid = torch.cat(rows, dim=1).permute(1, 2, 0).numpy()
    plt = pyplot()
    h, w = shape[1], shape[2]
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * TRAVERSAL_STEPS, 0.6 + 0.9 * len(rows)))
    ax.imshow(grid)
    ax.set_yticks([h * (k + 0.5) for k in range(len(rows))])
    ax.set_yticklabels(
        [
            f"{names[k] if k < len(names) else k} (latent {int(res.permutation[k])})"
            for k in range(len(rows))
        ],
        fontsize=7,
    )
    qs = np.linspace(5, 95, TRAVERSAL_STEPS)
    ax.set_xticks([w * (i + 0.5) for i in range(TRAVERSAL_STEPS)])
    ax.set_xticklabels([f"{q:.0f}%" for q in qs], fontsize=6)
    ax.set_xlabel("quantile of the matched latent over the evaluation set")
    ax.set_title("decoder traversal of the best run, one row per true factor", fontsize=8)
    fig.tight_layout()
    save_figure(fig, out, runs)


def cima_trend(rows: list[dict]) -> str:
    """One sentence: the Spearman correlation of MCC with each C_IMA statistic over every
    evaluation of every run (the paper: MCC is anti-correlated with C_IMA during training)."""
    from scipy.stats import spearmanr

    hist = [h for r in rows for h in _history(r["run_dir"])]
    parts = []
    for key, name in (
        ("c_ima", "the global C_IMA (`c_ima`)"),
        ("c_ima_mean_jacobian", "the c_IMA of the batch-mean Jacobian (`c_ima_mean_jacobian`)"),
    ):
        pairs = [
            (h["mcc"], h[key])
            for h in hist
            if np.isfinite(h.get("mcc", np.nan)) and np.isfinite(h.get(key, np.nan))
        ]
        if len(pairs) < 3:
            parts.append(f"{name}: fewer than 3 evaluations")
            continue
        rho = spearmanr(*zip(*pairs, strict=True)).statistic
        trend = "falls" if rho < 0 else "rises"
        parts.append(f"{name} {trend} as MCC rises (ρ = {rho:+.2f}, {len(pairs)} evaluations)")
    return "Spearman correlation with MCC over training: " + "; ".join(parts) + "."


def fig5_report(rows: list[dict], out: Path) -> str:
    """Fig. 5 from the finished ``reizinger-fig5`` runs; returns Markdown."""
    from unmix.experiment import Experiment
    from unmix.papers.figures import pyplot as _plt
    from unmix.papers.figures import save_figure

    plt = _plt()
    names = list(SPRITES_FACTOR_NAMES[:4])
    best = max(rows, key=lambda r: r["mcc"] if np.isfinite(r["mcc"]) else -1)
    exp = Experiment.from_run(best["run_dir"])
    z, mu, z_hat, res = _matched(exp)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    ax = axes[0]
    twin = ax.twinx()
    for i, r in enumerate(rows):  # one line per seed and statistic; the legend names statistics
        hist = _history(r["run_dir"])
        steps = [h["step"] for h in hist]
        mcc = [h["mcc"] for h in hist]
        first = i == 0
        ax.plot(steps, mcc, "o-", color="tab:blue", alpha=0.7, label="MCC" if first else None)
        if steps:
            ax.annotate(
                f"seed {r['seed']}",
                (steps[-1], mcc[-1]),
                xytext=(3, 0),
                textcoords="offset points",
                fontsize=6,
                color="tab:blue",
                va="center",
            )
        twin.plot(
            steps,
            [h["c_ima"] for h in hist],
            "s--",
            color="tab:red",
            alpha=0.7,
            label="C_IMA (global)" if first else None,
        )
        if any("c_ima_mean_jacobian" in h for h in hist):
            twin.plot(
                steps,
                [h.get("c_ima_mean_jacobian", float("nan")) for h in hist],
                "^:",
                color="tab:orange",
                alpha=0.7,
                label="c_IMA of the mean Jacobian" if first else None,
            )
    paper_mean = float(np.mean(list(FIG5_PAPER_MCC.values())))
    ax.axhline(
        paper_mean, color="tab:blue", ls=":", label=f"paper, best run: mean MCC {paper_mean:.3f}"
    )
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(
        h1 + h2,
        l1 + l2,
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2,
        frameon=False,
        title=f"one line per seed ({len(rows)})",
        title_fontsize=7,
    )
    ax.set_xlabel("training step")
    ax.set_ylabel("MCC (posterior means)", color="tab:blue")
    twin.set_ylabel("C_IMA of the decoder", color="tab:red")
    ax.set_title("Sprites VAE, γ² = 1")
    ax = axes[1]
    zn, zh = z.double().numpy(), z_hat.double().numpy()
    for k, name in enumerate(names):
        est = zh[:, int(res.permutation[k])]
        slope, icpt = np.polyfit(est, zn[:, k], 1)  # affine rescaling onto the true factor
        ax.scatter(
            zn[:, k],
            slope * est + icpt,
            s=3,
            alpha=0.4,
            label=f"{name} (|ρ| = {abs(res.matched_correlations[k]):.3f}; paper "
            f"{FIG5_PAPER_MCC.get(name, float('nan')):.3f})",
        )
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set_xlabel("true factor (B-value)")
    ax.set_ylabel("matched estimate, affinely rescaled")
    ax.legend(fontsize=7, markerscale=3)
    ax.set_title("best run: true vs estimated")
    fig.tight_layout()
    save_figure(fig, out / "reizinger-fig5.png", rows)
    _traversal(exp, mu, res, out / "reizinger-fig5-traversal.png", names, rows)

    lines = [
        "| factor | MCC (ours, median over seeds) | MCC (ours, best run) | paper (best run) |",
        "|---|---|---|---|",
    ]
    for k, name in enumerate(names):
        vals = [r.get(f"mcc_factor{k}", float("nan")) for r in rows]
        lines.append(
            f"| {name} | {np.nanmedian(vals):.3f} | {best.get(f'mcc_factor{k}', float('nan')):.3f} "
            f"| {FIG5_PAPER_MCC[name]:.3f} |"
        )
    mccs = [r["mcc"] for r in rows]
    lines += [
        "",
        f"Mean MCC: median {np.nanmedian(mccs):.3f} over {len(rows)} run(s); best {best['mcc']:.3f}. "
        f"C_IMA (decoder, final): best run {best.get('c_ima', float('nan')):.3f}.",
        "",
        cima_trend(rows),
        "",
        "![Fig. 5](reizinger-fig5.png)",
        "",
        "Traversals (rows: " + ", ".join(names) + "):",
        "",
        "![traversal](reizinger-fig5-traversal.png)",
    ]
    return "\n".join(lines) + "\n"
