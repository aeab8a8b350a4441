"""Zimmermann et al. 2021, *Contrastive Learning Inverts the Data Generating Process* (paper 000).

* :mod:`.presets` — Tables 1–2 and Fig. 2 as presets (and :func:`~.presets.assumptions_match`,
  the tables' "M." column); :mod:`.images` — Table 4 on rendered 3D scenes;
* :func:`budget_rule` — the paper's recipes per budget, by the setting's content;
* :mod:`.table3` — Table 3 (KITTI Masks, or unmix's generated mask sequences): SlowVAE and
  contrastive presets, its budget rule, report;
* :mod:`.reports` — the tables and Fig. 2 from run rows; :mod:`.checks` — Theorem 1 checks.
"""

from __future__ import annotations

import math
from typing import Any

from unmix.papers.base import Paper, PlannedRun, Target, in_group, register_paper
from unmix.papers.zimmermann import checks, images, presets, reports, table3
from unmix.settings import Setting

QUICK_VECTOR_MODEL: dict[str, Any] = {"model.hidden": [20, 20, 20], "model.standardize_input": True}
"""The ``quick`` encoder for vector observations (docs/quick_budget_search.md): a wide-shallow MLP
(3 hidden layers of 20·N units instead of the paper's 6) on standardised inputs."""


def noise_moment(dist: Any, p: float) -> float:
    """E|ε|^p of one coordinate of a normal (σ), Laplace (λ) or generalised-normal (s, β) noise."""
    if dist.kind == "normal":
        return dist.scale**p * 2 ** (p / 2) * math.gamma((p + 1) / 2) / math.sqrt(math.pi)
    if dist.kind == "laplace":
        return dist.scale**p * math.gamma(p + 1)
    if dist.kind == "gennorm":
        return dist.scale**p * math.gamma((p + 1) / dist.beta) / math.gamma(1 / dist.beta)
    raise ValueError(f"no moment rule for a '{dist.kind}' conditional")


def matched_lp_tau(dist: Any, p: float) -> float:
    """τ = p·E|ε|^p: the temperature at which ``exp(-‖z − z̃‖_p^p/τ)`` *is* the conditional when it is
    matched (normal with p = 2: 2σ²; Laplace with p = 1: λ; generalised normal with p = β: s^β), and
    the same moment rule when it is not (e.g. Laplace or normal noise with p = 3)."""
    return p * noise_moment(dist, p)


#: The quick budget's alignment warm-up for the weak-signal sphere rows (vMF κ ≤ 1): InfoNCE's
#: positive term at weight 1/2 rising linearly to 1 over the first half of the run, InfoNCE itself
#: after (:class:`unmix.objectives.base.Contrastive`; docs/quick_budget_search.md, fifth search).
ALIGN_WARMUP: dict[str, Any] = {"objective.align_start": 0.5, "objective.align_warmup": 0.5}


#: The quick budget's temperature warm-up for box latents of a non-uniform marginal with an
#: unbounded encoder (Fig. 2's box points): τ from the paper's 1 to the moment-matched τ
#: (geometrically) over the first half of the run (docs/quick_budget_search.md, sixth search).
TAU_WARMUP: dict[str, Any] = {"objective.tau_start": 1.0, "objective.tau_warmup": 0.5}

#: The quick budget's length for those points with normal noise (eleventh search: the in-batch
#: task saturates most under normal noise, and R² gains +1.0–1.5 points per doubling of the steps).
NORMAL_BOX_STEPS = 16_000

#: The quick budget's length for the sphere rows with a vMF conditional of κ ≤ 1 (fifth search:
#: with the warm-up, R² 97.4 at 15,000 steps, 98.7 at 30,000, still rising).
KAPPA_LE_1_STEPS = 30_000

#: The quick budget's length for box latents under :func:`box_align_uniform` (Tables 1–2 rows with
#: box latents): most rows are within a point of the paper by 3,000–4,000
#: steps, Table 2 row 5 (generalised-normal noise, a Laplace loss) needs ≈ 6,000 (thirteenth
#: search).
BOX_STEPS = 8000


def box_align_uniform(cond: Any, p: float, *, bounded: bool = True) -> dict[str, Any]:
    r"""The quick budget's recipe for box latents (docs/quick_budget_search.md, thirteenth
    search): the row's Lp-InfoNCE replaced by its two terms at separate scales — the alignment
    term :math:`\mathbb{E}\|h - \tilde h\|_p^p` at the conditional's matched weight
    :math:`1/\tau^*` (:func:`matched_lp_tau`: where the critic *is* the conditional's log
    density), and the uniformity term :math:`\log \mathbb{E} e^{-t\|h_i - h_j\|_p^p}` under a
    broad potential that a batch of 1,024 can estimate (its mean exponent over independent
    uniform pairs of the unit box 5/3 per coordinate: :math:`t = 5(p + 1)(p + 2)/6`, t = 10 at
    p = 2). At the matched τ the in-batch task saturates and its uniformity signal vanishes; at
    τ = 1 the alignment signal is too weak for the quick budget.

    ``bounded`` (a box model): on the unit box the latents fill — the reference code's sigmoid
    head with its magnitude fixed at b = 1, so the features' scale is the box's and its faces fix
    the axes. An unbounded model keeps its space: the alignment term at the matched weight holds
    its scale (:class:`unmix.objectives.AlignUniform`)."""
    out: dict[str, Any] = {
        "objective.kind": "align_uniform",
        "objective.p": float(p),
        "objective.alpha": float(p),
        "objective.t": float(f"{5 * (p + 1) * (p + 2) / 6:.3g}"),
        "objective.align_weight": float(f"{1 / matched_lp_tau(cond, p):.3g}"),
    }
    if bounded:
        out.update({"model.space": "box_sigmoid", "model.learn_magnitude": False})
    return out


def quick_overrides(setting: Setting) -> dict[str, Any]:
    """Per-setting part of the ``quick`` budget, by the rule the searches found
    (docs/quick_budget_search.md), one rule per family:

    * sphere, vMF conditional: τ = 1/κ; when κ ≤ 1 (the weakest signal, where gradient noise
      dominates) 30,000 steps and, for InfoNCE, the alignment warm-up (the positive term's
      weight from 1/2 to 1 over the first half of the run, :data:`ALIGN_WARMUP`; other
      objectives lr 1e-3 instead), otherwise 3,000 steps;
    * sphere, projected noise (scale 0.05): τ = 0.05, 8,000 steps;
    * box latents of a uniform marginal, an Lp objective (``q = p``) and a normal, Laplace or
      generalised-normal conditional, a box or an unbounded model (Table 1 rows 5–8, Table 2):
      :func:`box_align_uniform` — the alignment term at the conditional's matched weight and the
      uniformity term under a broad potential in place of the Lp-InfoNCE, a box model on the unit
      box (sigmoid head of fixed magnitude 1), :data:`BOX_STEPS` steps (docs/quick_budget_search.md,
      thirteenth search; until then the unbounded rows trained the Lp-InfoNCE with τ warmed up to
      the moment-matched one, 8,000 or 16,000 steps, the matched box rows the sigmoid·b head with
      the matched τ, the other box rows the paper's L∞ head at τ = 1);
    * the same with a non-uniform marginal and an unbounded model (Fig. 2's box points, where
      :func:`box_align_uniform`'s potential, set for uniform latents, collapses the encoder at
      1/σ² ≥ 100): the Lp-InfoNCE at the moment-matched τ = :func:`matched_lp_tau`, reached by the
      temperature warm-up :data:`TAU_WARMUP` from the paper's τ = 1, 8,000 steps
      (:data:`NORMAL_BOX_STEPS` for normal noise);
    * other box settings (a bounded encoder) keep the paper's L∞ head, τ and 4,000 steps —
      except a supervised regression (the Supervised column), which takes the sigmoid·b head:
      the L∞ head's outputs lie on the cube's surface and cannot fit latents inside it;
    * R^N: the paper's τ = 1, 5,000 steps."""
    lat, out = setting.latent, {}
    obj = setting.objective
    has_tau = "tau" in type(obj).model_fields
    if lat.space == "sphere" and lat.conditional is not None:
        if lat.conditional.kind == "vmf":
            kappa = lat.conditional.kappa
            out = {"objective.tau": 1.0 / kappa, "train.steps": 3000}
            if kappa <= 1:
                out["train.steps"] = KAPPA_LE_1_STEPS
                if obj.kind == "infonce":  # warmed up, InfoNCE takes the common lr 3e-3
                    out.update(ALIGN_WARMUP)
                else:
                    out["train.lr"] = 1e-3
        else:
            out = {"objective.tau": 0.05, "train.steps": 8000}
        if not has_tau:
            out.pop("objective.tau")
        return out
    if lat.space != "box":
        return {"train.steps": 5000}
    out = {"train.steps": 4000}
    if obj.kind == "supervised" and getattr(setting.model, "space", None) == "box":
        # a regression onto box latents: the L∞ head puts every output on the cube's surface and
        # caps the fit (Table 2 row 1's Supervised MCC 98.6 / 98.7 at seeds 0 / 1; the sigmoid·b
        # head 99.6 / 99.7, paper 99.93; seventh search)
        out["model.space"] = "box_sigmoid"
    cond, p = lat.conditional, getattr(obj, "p", None)
    space = getattr(setting.model, "space", None)
    lp_family = (
        obj.kind == "lp_infonce"
        and getattr(obj, "q", None) in (None, p)
        and cond is not None
        and cond.kind in ("normal", "laplace", "gennorm")
    )
    if (
        lp_family
        and space in ("box", "box_sigmoid", "unbounded")
        and lat.marginal.kind == "uniform"
    ):
        # the in-batch task at the paper's τ = 1 is too broad for the quick budget, at the matched
        # τ it saturates (seventh, ninth, twelfth searches): the two terms at separate scales
        out = {**box_align_uniform(cond, p, bounded=space != "unbounded"), "train.steps": BOX_STEPS}
    elif lp_family and space == "unbounded":
        # a non-uniform marginal (Fig. 2's box points): box_align_uniform's potential is set for
        # uniform latents and collapses the encoder here (thirteenth search); the Lp-InfoNCE with τ
        # warmed up to the moment-matched one
        out = {
            "objective.tau": float(f"{matched_lp_tau(cond, p):.3g}"),
            "train.steps": NORMAL_BOX_STEPS if cond.kind == "normal" else 8000,
            **TAU_WARMUP,
        }
    return out


def budget_rule(setting: Setting, budget: str) -> dict[str, Any] | None:
    """Paper 000's recipe for ``setting`` under ``budget`` (applied after the generic budget):

    * Table 4's scenes (``mixing.kind: scenes3d``): :data:`.images.TABLE4_QUICK` (for a supervised
      regression, the Supervised column, with :data:`.images.TABLE4_QUICK_SUPERVISED`), a small render for
      ``smoke``, the paper's optimiser for ``paper``;
    * vector contrastive, supervised and identity settings (Tables 1–2, Fig. 2): at ``quick`` the
      wide-shallow encoder on standardised inputs and :func:`quick_overrides`.

    * Table 3's frame-sequence settings (``data.kind: mask_sequences | kitti_masks``):
      :func:`.table3.budget_rule` (and the switch to KITTI Masks by ``UNMIX_KITTI_ROOT``).

    ``None`` for other settings (VAEs, Sprites: paper 004's)."""
    if table3.claims(setting):
        return table3.budget_rule(setting, budget)
    if setting.mixing.kind == "scenes3d":
        quick = dict(images.TABLE4_QUICK)
        if setting.objective.kind == "supervised":
            quick.update(images.TABLE4_QUICK_SUPERVISED)
        if setting.latent.conditional is not None:
            quick["latent.conditional.scale"] = images.TABLE4_QUICK_SCALE
        return {
            "smoke": {**images.IMAGE_SMOKE, "data.n_train": 256, "data.n_test": 64},
            "quick": quick,
            "paper": {f"train.{k}": v for k, v in images.TABLE4_PAPER_TRAIN.items()},
        }.get(budget, {})
    if setting.observes_images or setting.model.kind == "vae":
        return None
    if budget != "quick":
        return {}
    out = dict(QUICK_VECTOR_MODEL) if setting.model.kind == "mlp" else {}
    out.update(quick_overrides(setting))
    return out


def _identity(data: dict[str, Any]) -> dict[str, Any]:
    """The Identity column: score g(z) itself (no encoder, no training)."""
    return {"model": {"kind": "identity"}, "train.steps": 0}


def _supervised(data: dict[str, Any]) -> dict[str, Any]:
    """The Supervised column: regress z with the same model (MSE)."""
    return {"objective": {"kind": "supervised"}}


def _plan(group: str):
    def runs(seeds: int, baselines: bool = True) -> list[PlannedRun]:
        out = []
        for preset in in_group(group):
            cols = ["unsupervised"]
            if baselines:
                cols = [c for c in reports.COLUMNS if c in preset.paper and c != "unsupervised"]
                cols.append("unsupervised")
            if preset.setting.observes_images:  # Identity scores x itself: not for images
                cols = [c for c in cols if c != "identity"]
            for column in cols:
                for seed in range(seeds):
                    sub = f"{preset.name}/{column}-seed{seed}"
                    out.append(PlannedRun(preset.name, seed, column, seed, sub))
        return out

    return runs


def _table(group: str):
    def write(rows, folder, budget, seeds):
        if group == "zimmermann-fig2":
            return reports.fig2_report(rows, folder) + (
                reports.time_to_identifiability(group, rows, folder)
            )
        if group == "zimmermann-table4":
            row1 = images.build_presets()["zimmermann-table4-row1"].setting
            scale = (budget_rule(row1, budget) or {}).get("latent.conditional.scale")
            return reports.table4_markdown(rows, budget, seeds, scale)
        return reports.table_markdown(group, rows, budget, seeds) + (
            reports.time_to_identifiability(group, rows, folder)
        )

    return write


_DESCRIPTIONS = {
    "zimmermann-table1": "Table 1: R² of 12 latent/conditional/model combinations (+ baselines)",
    "zimmermann-table2": "Table 2: MCC on the box, identifiability up to permutations",
    "zimmermann-fig2": "Fig. 2: R² against the marginal's concentration (sphere, box)",
    "zimmermann-table4": "Table 4: contrastive learning on rendered 3D scenes",
}

PAPER = register_paper(
    Paper(
        key="zimmermann",
        title=presets.PAPER_000,
        presets={**presets.build_presets(), **images.build_presets(), **table3.build_presets()},
        targets={
            **{
                name: Target(name, "zimmermann", _plan(name), _table(name), None, text)
                for name, text in _DESCRIPTIONS.items()
            },
            table3.GROUP: Target(
                table3.GROUP,
                "zimmermann",
                table3.plan_runs,
                table3.report,
                table3.row_fields,
                "Table 3: KITTI Masks (or generated mask sequences), SlowVAE vs contrastive",
            ),
        },
        budget_rule=budget_rule,
        columns={"identity": _identity, "supervised": _supervised},
        checks={"zimmermann": list(checks.CHECKS)},
    )
)
