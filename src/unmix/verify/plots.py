"""Figures of the verify checks (matplotlib, Agg backend), drawn from ``CheckResult.details``.

:func:`write_figures` writes, for the checks present in ``results``:

* ``wang_isola_rate.png`` — |bias of L(M) − log M| vs M, log-log, for the two Theorem-1
  configurations: the fitted slope, the delta-method prediction c₁/M, and an M^(-1/2) reference.
* ``wang_isola_configurations.png`` — L_uniform of random vs equispaced points on S¹, and gradient
  descent converging to the equispaced configuration.
* ``zimmermann_convergence.png`` — L(M) − log M + log|Z| vs M for the isometry (→ vMF entropy) and
  non-isometric maps (→ larger limits), and the isometry's bias, log-log.
* ``ima_gap.png`` — ELBO* − (log p(x) − c_IMA) vs γ², log-log (and the column-orthogonal case), and
  the errors of the posterior-variance formula.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from unmix.verify.checks import CheckResult  # noqa: E402

__all__ = ["write_figures"]


def _by_id(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.id: r for r in results}


def _fit_curve(m: np.ndarray, fit: dict) -> np.ndarray:
    return np.exp(fit["intercept"] + fit["slope"] * np.log(m) + fit.get("curvature", 0.0) / m)


def _rate_panel(ax, res: CheckResult, title: str) -> None:
    d = res.details
    m = np.asarray(d["M"], dtype=float)
    for key, label, color in (
        ("", "positive in denominator", "C0"),
        ("_nopos", "negatives only", "C1"),
    ):
        b = np.abs(np.asarray(d[f"bias{key}"]))
        se = np.asarray(d[f"bias{key}_se"])
        fit = d[f"fit{key}"]
        ax.errorbar(
            m,
            b,
            yerr=2 * se,
            fmt="o",
            ms=4,
            color=color,
            capsize=2,
            label=f"|bias|, {label}: slope {fit['slope']:.3f} "
            f"[{fit['ci95_low']:.3f}, {fit['ci95_high']:.3f}]",
        )
        ax.plot(m, _fit_curve(m, fit), "-", color=color, lw=1)
        c1 = abs(d["c1" if not key else "c1_nopos"])
        ax.plot(
            m,
            c1 / m,
            "--",
            color=color,
            lw=1,
            alpha=0.7,
            label=f"delta method |c1|/M, c1={d['c1' + key]:.3f}",
        )
    b0 = abs(d["bias"][0])
    ax.plot(m, b0 * np.sqrt(m[0] / m), ":", color="gray", label="published rate M^-1/2 (reference)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives M")
    ax.set_ylabel("|E[L(M)] - log M - limit|")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6.5, loc="lower left")
    ax.grid(True, which="both", alpha=0.3)


def _rate_figure(res_u: CheckResult | None, res_v: CheckResult | None, path: Path) -> None:
    panels = [
        (r, t) for r, t in ((res_u, "uniform features on S^2"), (res_v, "vMF features on S^2")) if r
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.3), squeeze=False)
    for ax, (res, title) in zip(axes[0], panels, strict=True):
        _rate_panel(ax, res, f"Wang & Isola Thm. 1 bias, {title}\n{res.details['setting']}")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _configurations_figure(
    res_eq: CheckResult | None, res_gd: CheckResult | None, path: Path
) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    if res_eq:
        d = res_eq.details
        edges = np.asarray(d["L_random_bin_edges"])
        axes[0].stairs(
            np.asarray(d["L_random_histogram"]),
            edges,
            fill=True,
            alpha=0.6,
            label="N uniformly sampled points",
        )
        axes[0].axvline(d["L_equispaced"], color="C3", label="N equispaced points")
        axes[0].set_xlabel("L_uniform (t = 2)")
        axes[0].set_ylabel("count")
        axes[0].set_title("Props. 1-2 on S^1: equispaced beats random", fontsize=9)
        axes[0].legend(fontsize=8)
    if res_gd:
        d = res_gd.details
        loss = np.maximum(np.abs(np.asarray(d["trace_loss_minus_equispaced"])), 1e-17)
        gap = np.maximum(np.asarray(d["trace_max_gap_error"]), 1e-17)
        axes[1].semilogy(loss, label="L_uniform - L_equispaced")
        axes[1].semilogy(gap, label="max |angular gap - 2pi/N|")
        axes[1].set_xlabel("gradient-descent step")
        axes[1].set_title("gradient descent on L_uniform reaches the N-gon", fontsize=9)
        axes[1].legend(fontsize=8)
        axes[1].grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _zimmermann_figure(
    res_lim: CheckResult | None, res_non: CheckResult | None, path: Path
) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.3))
    ax = axes[0]
    if res_lim:
        d = res_lim.details
        m = np.asarray(d["M"], dtype=float)
        ax.errorbar(
            m,
            d["estimate_plus_log_area"],
            yerr=2 * np.asarray(d["estimate_se"]),
            fmt="o",
            ms=4,
            capsize=2,
            color="C0",
            label="isometry h = sqrt(tau kappa) z",
        )
        ax.axhline(
            d["vmf_entropy"], color="C0", ls="--", lw=1, label=f"vMF entropy {d['vmf_entropy']:.4f}"
        )
    if res_non:
        d = res_non.details
        h = d["vmf_entropy"]
        for i, (name, row) in enumerate(d["maps"].items()):
            color = f"C{i + 1}"
            m = np.asarray(d["M"], dtype=float) * (1.0 + 0.04 * (i + 1))
            ax.errorbar(
                m,
                row["estimate_plus_log_area"],
                yerr=2 * np.asarray(row["estimate_se"]),
                fmt="s",
                ms=3,
                capsize=2,
                color=color,
                label=name,
            )
            ax.axhline(h + row["limit_excess"], color=color, ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("number of negatives M")
    ax.set_ylabel("L(M) - log M + log|Z|   (±2 SE)")
    ax.set_title("Zimmermann Thm. 1: limit = cross-entropy (dashed)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    ax = axes[1]
    if res_lim:
        _rate_panel(ax, res_lim, "isometry: bias vs M")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _ima_figure(
    res_var: CheckResult | None,
    res_gap: CheckResult | None,
    res_orth: CheckResult | None,
    path: Path,
) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.3))
    ax = axes[0]
    floor = 1e-17
    if res_gap:
        d = res_gap.details
        g2 = np.asarray(d["gamma2"])
        ax.loglog(
            g2,
            d["gap"],
            "o",
            color="C0",
            label=f"general A (c_IMA = {d['c_ima']:.3f}); top-decade slope {res_gap.measured:.5f}",
        )
        ax.loglog(g2, d["C1"] / g2, "--", color="C0", lw=1, label=f"C1/gamma^2, C1 = {d['C1']:.4f}")
    if res_orth:
        d = res_orth.details
        g2 = np.asarray(d["gamma2"])
        ax.loglog(
            g2,
            np.maximum(np.abs(d["gap"]), floor),
            "x",
            color="C3",
            label="column-orthogonal A: |gap| (round-off; 0 shown at 1e-17)",
        )
    ax.set_xlabel("decoder precision gamma^2")
    ax.set_ylabel("ELBO* - (log p(x) - c_IMA)")
    ax.set_title("Reizinger Thm. 1: the ELBO gap to the IMA-regularised likelihood", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    if res_var:
        d = res_var.details
        g2 = np.asarray(d["gamma2"])
        ax.loglog(
            g2,
            np.maximum(d["variance_relative_error"], floor),
            "o",
            label="Theorem 1 variance formula (exact here: round-off)",
        )
        ax.loglog(
            g2,
            d["leading_term_relative_error"],
            "s",
            label=f"leading term 1/(gamma^2 ||a_k||^2): slope {d['leading_term_slope']:.4f}",
        )
        ax.loglog(
            g2,
            d["mean_minus_inverse_decoder"],
            "^",
            label=f"|mu* - A^-1 x|: slope {d['mean_error_slope']:.3f}",
        )
    ax.set_xlabel("decoder precision gamma^2")
    ax.set_ylabel("relative error / error")
    ax.set_title("optimal factorised posterior vs Theorem 1", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def write_figures(results: list[CheckResult], out_dir: Path) -> list[Path]:
    """Write the figures whose checks are in ``results`` to ``out_dir``; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    r = _by_id(results)
    written: list[Path] = []

    def get(name: str) -> CheckResult | None:
        return r.get(name)

    jobs = [
        (
            "wang_isola_rate.png",
            ("wang-isola/theorem1-rate-uniform", "wang-isola/theorem1-rate-vmf"),
            _rate_figure,
        ),
        (
            "wang_isola_configurations.png",
            ("wang-isola/equispaced-beats-random", "wang-isola/gradient-descent-equispaced"),
            _configurations_figure,
        ),
        (
            "zimmermann_convergence.png",
            ("zimmermann/limit-is-vmf-entropy", "zimmermann/non-isometry-larger"),
            _zimmermann_figure,
        ),
        (
            "ima_gap.png",
            ("ima/posterior-variances", "ima/elbo-gap-rate", "ima/gap-vanishes-orthogonal"),
            _ima_figure,
        ),
    ]
    for fname, ids, draw in jobs:
        found = [get(i) for i in ids]
        if any(found):
            path = out_dir / fname
            draw(*found, path)
            written.append(path)
    return written
