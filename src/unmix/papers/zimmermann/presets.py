"""Presets: the papers' experiments as data — a setting plus the values the paper reports.

Each :class:`~unmix.papers.base.Preset` holds a validated :class:`~unmix.settings.Setting` — the
paper's experiment (latents, mixing, model, objective as published; the ``train`` section is a
small default, the budgets of :mod:`unmix.resolve` and the paper's budget rule
(:mod:`unmix.papers.zimmermann.recipes`) replace it) — the paper's reported numbers (mean, std)
and where they come from (table, row, column). Reports are computed from runs and put *beside*
these values; nothing here is a result.

Names say table and row: ``zimmermann-table1-row1`` … ``zimmermann-table1-row12``,
``zimmermann-table2-row1`` … ``row10``, and the Fig. 2 sweeps ``zimmermann-fig2-sphere-kappa{κ}`` and
``zimmermann-fig2-box-invvar{1/σ²}``.
"""

from __future__ import annotations

from typing import Literal

from unmix.papers.base import Preset
from unmix.settings import Setting

PAPER_000 = "Zimmermann et al. 2021, Contrastive Learning Inverts the Data Generating Process"


def _setting(
    name: str,
    space: str,
    marginal: dict,
    conditional: dict,
    model_space: str,
    objective: dict,
    **latent_extra,
) -> Setting:
    return Setting.from_dict(
        {
            "name": name,
            "latent": {
                "space": space,
                "dim": 10,
                "marginal": marginal,
                "conditional": conditional,
                **latent_extra,
            },
            "model": {"space": model_space},
            "objective": objective,
        }
    )


U = {"kind": "uniform"}
VMF1 = {"kind": "infonce", "tau": 1.0}
NORMAL = {"kind": "lp_infonce", "p": 2.0}
LAPLACE = {"kind": "lp_infonce", "p": 1.0}
GENNORM3 = {"kind": "lp_infonce", "p": 3.0}


def _vmf(k: float) -> dict:
    return {"kind": "vmf", "kappa": k}


def _normal(s: float) -> dict:
    return {"kind": "normal", "scale": s}


def _laplace(s: float) -> dict:
    return {"kind": "laplace", "scale": s}


def _gennorm(s: float, b: float) -> dict:
    return {"kind": "gennorm", "scale": s, "beta": b}


# (space, marginal, conditional, model space, objective, paper columns) per row of Table 1 (R², %)
_TABLE1 = [
    (
        "sphere",
        U,
        _vmf(1),
        "sphere",
        VMF1,
        {"identity": (66.98, 2.79), "supervised": (99.71, 0.05), "unsupervised": (99.42, 0.05)},
    ),
    ("sphere", U, _vmf(10), "sphere", VMF1, {"unsupervised": (99.86, 0.01)}),
    ("sphere", U, _laplace(0.05), "sphere", VMF1, {"unsupervised": (99.91, 0.01)}),
    ("sphere", U, _normal(0.05), "sphere", VMF1, {"unsupervised": (99.86, 0.00)}),
    (
        "box",
        U,
        _normal(0.05),
        "unbounded",
        NORMAL,
        {"identity": (67.93, 7.40), "supervised": (99.78, 0.06), "unsupervised": (99.60, 0.02)},
    ),
    ("box", U, _laplace(0.05), "unbounded", NORMAL, {"unsupervised": (99.64, 0.02)}),
    ("box", U, _laplace(0.05), "unbounded", GENNORM3, {"unsupervised": (99.70, 0.02)}),
    ("box", U, _normal(0.05), "unbounded", GENNORM3, {"unsupervised": (99.69, 0.02)}),
    (
        "sphere",
        _normal(1),
        _laplace(0.05),
        "sphere",
        VMF1,
        {"identity": (63.37, 2.41), "supervised": (99.70, 0.07), "unsupervised": (99.02, 0.01)},
    ),
    ("sphere", _normal(1), _normal(0.05), "sphere", VMF1, {"unsupervised": (99.02, 0.02)}),
    (
        "euclidean",
        _laplace(1),
        _normal(1),
        "unbounded",
        NORMAL,
        {"identity": (62.49, 1.65), "supervised": (99.65, 0.04), "unsupervised": (98.13, 0.14)},
    ),
    (
        "euclidean",
        _normal(1),
        _normal(1),
        "unbounded",
        NORMAL,
        {"identity": (63.57, 2.30), "supervised": (99.61, 0.17), "unsupervised": (98.76, 0.03)},
    ),
]

# Table 2 (MCC, %): all on the box [0,1]^10 with a uniform marginal
_TABLE2 = [
    (
        _laplace(0.05),
        "box",
        LAPLACE,
        {"identity": (46.55, 1.34), "supervised": (99.93, 0.03), "unsupervised": (98.62, 0.05)},
    ),
    (_gennorm(0.05, 3), "box", GENNORM3, {"unsupervised": (99.90, 0.06)}),
    (_normal(0.05), "box", NORMAL, {"unsupervised": (99.77, 0.01)}),
    (_laplace(0.05), "box", NORMAL, {"unsupervised": (99.76, 0.02)}),
    (_gennorm(0.05, 3), "box", LAPLACE, {"unsupervised": (98.80, 0.02)}),
    (
        _laplace(0.05),
        "unbounded",
        LAPLACE,
        {"supervised": (99.97, 0.03), "unsupervised": (98.57, 0.02)},
    ),
    (_gennorm(0.05, 3), "unbounded", GENNORM3, {"unsupervised": (99.85, 0.01)}),
    (_normal(0.05), "unbounded", NORMAL, {"unsupervised": (58.26, 3.00)}),
    (_laplace(0.05), "unbounded", NORMAL, {"unsupervised": (59.67, 2.33)}),
    (_normal(0.05), "unbounded", GENNORM3, {"unsupervised": (43.80, 2.15)}),
]

# Fig. 2: Table 1's matched sphere row (row 1: vMF κ=1 conditional, sphere model, InfoNCE) with a vMF
# marginal around the pole (κ sweep), and Table 1's box row with the normal conditional (row 5:
# Normal σ=0.05, unbounded model, p = 2 loss) with a normal marginal around the box's centre (1/σ²
# sweep). Fig. 2 scores R², Table 1's metric, and the paper does not name the box panel's model;
# every box row of Table 1 trains an unbounded one.
FIG2_SPHERE_KAPPAS = (0.01, 0.1, 1.0, 10.0, 30.0, 100.0)
FIG2_BOX_INVVARS = (1.0, 10.0, 100.0, 400.0, 1000.0, 10000.0)
FIG2_BOX_CONDITIONAL_SCALE = 0.05
FIG2_BOX_MODEL_SPACE = "unbounded"
# Fig. 2's negatives are the batch's other *anchors*: Eq. 1 draws the negatives from the data
# marginal p(x), and a batch's anchors are exactly such draws. The default candidates (the other
# positives) are draws from p(x) only when the conditional leaves the marginal unchanged — true
# for Tables 1–2's uniform marginals, false by design in Fig. 2, whose positives spread wider than
# its concentrated marginal (docs/reproduce.md, Fig. 2; docs/quick_budget_search.md, fifteenth
# search). The reference code's loss took the same candidates (plus the anchor's self-pair).
FIG2_NEGATIVES = {"cross_view_negatives": False, "same_view_negatives": True}


def build_presets() -> dict[str, Preset]:
    """Tables 1–2 and Fig. 2 of paper 000 by name."""
    out: dict[str, Preset] = {}
    for i, (space, marg, cond, mspace, obj, paper) in enumerate(_TABLE1, start=1):
        name = f"zimmermann-table1-row{i}"
        out[name] = Preset(
            name,
            _setting(name, space, marg, cond, mspace, obj),
            f"{PAPER_000}, Table 1, row {i}",
            "r2",
            paper,
            "zimmermann-table1",
        )
    for i, (cond, mspace, obj, paper) in enumerate(_TABLE2, start=1):
        name = f"zimmermann-table2-row{i}"
        out[name] = Preset(
            name,
            _setting(name, "box", U, cond, mspace, obj),
            f"{PAPER_000}, Table 2, row {i}",
            "mcc",
            paper,
            "zimmermann-table2",
        )
    for kappa in FIG2_SPHERE_KAPPAS:
        name = f"zimmermann-fig2-sphere-kappa{kappa:g}"
        out[name] = Preset(
            name,
            _setting(name, "sphere", _vmf(kappa), _vmf(1), "sphere", {**VMF1, **FIG2_NEGATIVES}),
            f"{PAPER_000}, Fig. 2 (left), marginal vMF κ={kappa:g}",
            "r2",
            {},
            "zimmermann-fig2",
        )
    for iv in FIG2_BOX_INVVARS:
        name = f"zimmermann-fig2-box-invvar{iv:g}"
        sigma = iv**-0.5
        out[name] = Preset(
            name,
            _setting(
                name,
                "box",
                _normal(sigma),
                _normal(FIG2_BOX_CONDITIONAL_SCALE),
                FIG2_BOX_MODEL_SPACE,
                {**NORMAL, **FIG2_NEGATIVES},
            ),
            f"{PAPER_000}, Fig. 2 (right), marginal Normal σ={sigma:.4g} at the centre",
            "r2",
            {},
            "zimmermann-fig2",
        )
    return out


def assumptions_match(setting: Setting, target: Literal["affine", "permutation"]) -> bool:
    """The tables' "M." column, computed from the setting (paper 000, Tables 1–2).

    Rule. The theory's assumptions hold iff (1) the ground-truth marginal is uniform; (2) the model's
    latent space equals the generative one (sphere ↔ sphere; box ↔ box or box_sigmoid; R^N ↔
    unbounded); (3) the model's conditional q_h has the form of the ground-truth conditional: vMF ↔
    dot-product InfoNCE on the sphere (Theorem 1), or δ = ‖·‖_p^p with the conditional's metric on a
    convex body (Theorem 5: normal ↔ p = 2, laplace ↔ p = 1, gennorm(β) ↔ p = β). For identifiability
    up to generalised permutations (Table 2, Theorem 6) additionally (4) the space is a box and
    p ≠ 2. (Unbounded R^N is not a convex body, so it never matches: its marginal cannot be uniform.)
    """
    lat, mod, obj = setting.latent, setting.model, setting.objective
    if lat.marginal.kind != "uniform" or lat.conditional is None or mod.kind != "mlp":
        return False
    space_ok = {
        "sphere": mod.space == "sphere",
        "box": mod.space in ("box", "box_sigmoid"),
        "euclidean": mod.space == "unbounded",
    }[lat.space]
    if not space_ok:
        return False
    cond = lat.conditional
    if lat.space == "sphere":
        match = (
            cond.kind == "vmf" and obj.kind == "infonce" and abs(cond.kappa - 1 / obj.tau) < 1e-9
        )
    else:
        if obj.kind != "lp_infonce" or (obj.q is not None and obj.q != obj.p):
            return False
        want_p = {"normal": 2.0, "laplace": 1.0, "gennorm": cond.beta}.get(cond.kind)
        match = want_p is not None and abs(float(obj.p) - float(want_p)) < 1e-9
    if target == "permutation":
        match = match and lat.space == "box" and float(getattr(obj, "p", None) or 2.0) != 2.0
    return match
