"""Training budgets: how long to train a preset.

* ``smoke`` — seconds per run, for CI: proves the pipeline runs end to end, not that it converges.
* ``quick`` — what unmix needs to get close to the paper on a 2-core CPU: a base training recipe
  plus per-preset overrides (:attr:`unmix.presets.Preset.quick`), which may also change model or
  objective fields (e.g. τ, width, input standardisation) — departures from the paper made for
  speed and listed in docs/reproduce.md with the search that found them.
* ``paper`` — the paper's own optimisation: Adam, lr 1e-4, batch 6144, 300,000 steps (Appx A.3).
"""

from __future__ import annotations

from typing import Any

from unmix.errors import ConfigError
from unmix.settings import Setting

BUDGETS: dict[str, dict[str, Any]] = {
    "smoke": {
        "train.steps": 20,
        "train.batch_size": 128,
        "train.lr": 1e-3,
        "train.lr_schedule": "constant",
        "train.warmup_steps": 0,
        "train.eval_every": 20,
        "train.eval_samples": 256,
        "train.checkpoint_every": 20,
    },
    # Found by the search in docs/quick_budget_search.md: a wide-shallow encoder (3 hidden layers of
    # 20·N units instead of the paper's 6) on standardised inputs, a larger learning rate with
    # warm-up and cosine decay; each preset adds its own τ and step count (Preset.quick).
    "quick": {
        "train.steps": 3000,
        "train.batch_size": 1024,
        "train.lr": 3e-3,
        "train.lr_schedule": "cosine",
        "train.warmup_steps": 100,
        "train.final_lr_factor": 0.01,
        "train.eval_every": 1000,
        "train.eval_samples": 4096,
        "train.checkpoint_every": 1000,
        "model.hidden": [20, 20, 20],
        "model.standardize_input": True,
    },
    "paper": {
        "train.steps": 300_000,
        "train.batch_size": 6144,
        "train.lr": 1e-4,
        "train.lr_schedule": "constant",
        "train.warmup_steps": 0,
        "train.eval_every": 5000,
        "train.eval_samples": 4096,
        "train.checkpoint_every": 5000,
    },
}


def apply_budget(setting: Setting, budget: str, overrides: dict[str, Any] | None = None) -> Setting:
    """The setting with the named budget's fields set, then ``overrides`` (dotted paths, e.g.
    ``{"objective.tau": 0.1}``) applied; validated."""
    if budget not in BUDGETS:
        raise ConfigError(f"--budget must be one of {', '.join(BUDGETS)}; got '{budget}'.")
    return setting.replace(**{**BUDGETS[budget], **(overrides or {})})


def load_with_budget(name_or_path: str, budget: str | None = None) -> Setting:
    """A preset or YAML setting, with a budget applied (the preset's own ``quick`` overrides
    included) when ``budget`` is given."""
    from unmix import presets
    from unmix.settings import load_setting

    setting = load_setting(name_or_path)
    if budget is None:
        return setting
    preset = presets.PRESETS.get(str(name_or_path))
    overrides = preset.overrides(budget) if preset is not None else None
    return apply_budget(setting, budget, overrides)
