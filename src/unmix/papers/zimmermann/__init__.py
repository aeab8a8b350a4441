"""Zimmermann et al. 2021, *Contrastive Learning Inverts the Data Generating Process* (paper 000).

* :mod:`.presets` — Tables 1–2 and Fig. 2 as presets (and :func:`~.presets.assumptions_match`,
  the tables' "M." column); :mod:`.images` — Table 4 on rendered 3D scenes;
* :func:`budget_rule` — the paper's recipes per budget, by the setting's content;
* :mod:`.table3` — Table 3 (KITTI Masks, or unmix's generated mask sequences): SlowVAE and
  contrastive presets, its budget rule, report;
* :mod:`.reports` — the tables and Fig. 2 from run rows; :mod:`.checks` — Theorem 1 checks.
"""

from __future__ import annotations

from typing import Any

from unmix.papers.base import Paper, PlannedRun, Target, in_group, register_paper
from unmix.papers.zimmermann import checks, images, presets, reports, table3
from unmix.settings import Setting

QUICK_VECTOR_MODEL: dict[str, Any] = {"model.hidden": [20, 20, 20], "model.standardize_input": True}
"""The ``quick`` encoder for vector observations (docs/quick_budget_search.md): a wide-shallow MLP
(3 hidden layers of 20·N units instead of the paper's 6) on standardised inputs."""


def quick_overrides(setting: Setting) -> dict[str, Any]:
    """Per-setting part of the ``quick`` budget, by the rule the search found
    (docs/quick_budget_search.md): on the sphere, τ = 1/κ for a vMF conditional (10,000 steps when
    κ ≤ 1, where the signal is weakest; 3,000 otherwise) and τ = 0.05 for projected noise of scale
    0.05 (8,000 steps); box and R^N rows keep the paper's τ = 1 (4,000 and 5,000 steps)."""
    lat, out = setting.latent, {}
    has_tau = "tau" in type(setting.objective).model_fields
    if lat.space == "sphere" and lat.conditional is not None:
        if lat.conditional.kind == "vmf":
            kappa = lat.conditional.kappa
            out = {"objective.tau": 1.0 / kappa, "train.steps": 10_000 if kappa <= 1 else 3000}
        else:
            out = {"objective.tau": 0.05, "train.steps": 8000}
        if not has_tau:
            out.pop("objective.tau")
        return out
    return {"train.steps": 4000 if lat.space == "box" else 5000}


def budget_rule(setting: Setting, budget: str) -> dict[str, Any] | None:
    """Paper 000's recipe for ``setting`` under ``budget`` (applied after the generic budget):

    * Table 4's scenes (``mixing.kind: scenes3d``): :data:`.images.TABLE4_QUICK`, a small render for
      ``smoke``, the paper's optimiser for ``paper``;
    * vector contrastive, supervised and identity settings (Tables 1–2, Fig. 2): at ``quick`` the
      wide-shallow encoder on standardised inputs and :func:`quick_overrides`.

    * Table 3's frame-sequence settings (``data.kind: mask_sequences | kitti_masks``):
      :func:`.table3.budget_rule` (and the switch to KITTI Masks by ``UNMIX_KITTI_ROOT``).

    ``None`` for other settings (VAEs, Sprites: paper 004's)."""
    if table3.claims(setting):
        return table3.budget_rule(setting, budget)
    if setting.mixing.kind == "scenes3d":
        return {
            "smoke": {**images.IMAGE_SMOKE, "data.n_train": 256, "data.n_test": 64},
            "quick": dict(images.TABLE4_QUICK),
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
            return reports.fig2_report(rows, folder)
        if group == "zimmermann-table4":
            return reports.table4_markdown(rows, budget, seeds)
        return reports.table_markdown(group, rows, budget, seeds)

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
