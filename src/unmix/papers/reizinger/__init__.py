"""Reizinger et al. 2022, *Embrace the Gap: VAEs Perform Independent Mechanism Analysis* (paper 004).

* :mod:`.presets` — Figs. 2–5 as presets; :func:`budget_rule` — the CPU recipes per budget;
* :mod:`.reports` — Figs. 2–4 from run rows; :mod:`.images` — Fig. 5 (Sprites);
* :mod:`.checks` — the ``ima`` checks of Theorem 1 (the ELBO gap tends to C_IMA).
"""

from __future__ import annotations

from typing import Any

from unmix.papers.base import Paper, Target, register_paper
from unmix.papers.reizinger import checks, images, presets, reports
from unmix.settings import Setting

_GROUP_OF_MIXING = {
    "smooth_leaky_mlp": "reizinger-fig2",
    "moebius": "reizinger-fig3",
    "moebius+linear": "reizinger-fig3",
    "triangular_mlp": "reizinger-fig4",
}

SPRITES_SMOKE: dict[str, Any] = {
    "train.keep_checkpoint": "last",
    "mixing.image_size": 32,
    "model.backbone": "conv",
    "model.hidden": [10],
    "train.steps": 4,
    "train.batch_size": 16,
    "train.eval_every": 4,
    "train.checkpoint_every": 4,
    "train.eval_samples": 32,
    "model.vae.decoder": "broadcast",  # the quick recipe's decoder, exercised end to end
}


def budget_rule(setting: Setting, budget: str) -> dict[str, Any] | None:
    """Paper 004's recipe for a VAE setting under ``budget`` (after the generic budget): at
    ``quick`` the CPU recipe of its figure (:func:`.presets._quick`, chosen by the mixing), at
    ``paper`` the reference's optimiser (:data:`.reports.PAPER_OVERRIDES`); Sprites (Fig. 5) has its
    own. ``None`` for settings that are not VAEs."""
    if setting.model.kind != "vae":
        return None
    if setting.mixing.kind == "sprites":
        quick = {k: v for k, v in presets.FIG5_QUICK.items() if k != "model.standardize_input"}
        return {
            "smoke": dict(SPRITES_SMOKE),
            "quick": quick,
            "paper": {
                **{f"train.{k}": v for k, v in presets.FIG5_PAPER_TRAIN.items()},
                "train.eval_samples": 2_048,
            },
        }.get(budget, {})
    if budget == "smoke":  # its reports reload the trained runs (eq. (12) sides, ELBO*)
        return {"train.keep_checkpoint": "last"}
    if budget == "paper":
        return dict(reports.PAPER_OVERRIDES)
    group = _GROUP_OF_MIXING.get(setting.mixing.kind)
    if budget != "quick" or group is None:
        return {}
    if setting.model.vae.decoder == "ground_truth":
        q = presets._quick(group, learned_decoder=False, **{"model.hidden": [20, 20, 20]})
    else:
        q = presets._quick(group)
    q.pop("model.standardize_input", None)
    return q


_DESCRIPTIONS = {
    "reizinger-fig2": "Fig. 2: self-consistency of near-deterministic VAEs over γ²",
    "reizinger-fig3": "Fig. 3: MCC and C_IMA of VAEs on Möbius mixings",
    "reizinger-fig4": "Fig. 4: log p(x), L_IMA and ELBO* with the ground-truth decoder",
    "reizinger-fig5": "Fig. 5: a VAE on Sprites (MCC per factor, C_IMA, traversals)",
}

PAPER = register_paper(
    Paper(
        key="reizinger",
        title=presets.PAPER_004,
        presets=presets.build_presets(),
        targets={
            name: Target(
                name,
                "reizinger",
                reports.plan(name),
                reports.report(name),
                reports.row_fields(name),
                text,
            )
            for name, text in _DESCRIPTIONS.items()
        },
        budget_rule=budget_rule,
        checks={"ima": list(checks.CHECKS)},
    )
)

__all__ = ["PAPER", "budget_rule", "images"]
