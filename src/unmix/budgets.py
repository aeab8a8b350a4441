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
        "steps": 30,
        "batch_size": 256,
        "lr": 1e-3,
        "lr_schedule": "constant",
        "warmup_steps": 0,
        "eval_every": 30,
        "eval_samples": 512,
        "checkpoint_every": 30,
    },
    "quick": {
        "steps": 3000,
        "batch_size": 2048,
        "lr": 1e-3,
        "lr_schedule": "cosine",
        "warmup_steps": 100,
        "final_lr_factor": 0.01,
        "eval_every": 500,
        "eval_samples": 4096,
        "checkpoint_every": 500,
    },
    "paper": {
        "steps": 300_000,
        "batch_size": 6144,
        "lr": 1e-4,
        "lr_schedule": "constant",
        "warmup_steps": 0,
        "eval_every": 5000,
        "eval_samples": 4096,
        "checkpoint_every": 5000,
    },
}


def apply_budget(setting: Setting, budget: str, overrides: dict[str, Any] | None = None) -> Setting:
    """The setting with its ``train`` section replaced by the named budget, then ``overrides``
    (dotted paths, e.g. ``{"objective.tau": 0.1}``) applied."""
    if budget not in BUDGETS:
        raise ConfigError(f"--budget must be one of {', '.join(BUDGETS)}; got '{budget}'.")
    data = setting.to_dict()
    data["train"] = {**data["train"], **BUDGETS[budget]}
    out = Setting.from_dict(data)
    return out.replace(**overrides) if overrides else out


def load_with_budget(name_or_path: str, budget: str | None = None) -> Setting:
    """A preset or YAML setting, with a budget applied (the preset's own ``quick`` overrides
    included) when ``budget`` is given."""
    from unmix import presets
    from unmix.settings import load_setting

    setting = load_setting(name_or_path)
    if budget is None:
        return setting
    preset = presets.PRESETS.get(str(name_or_path))
    overrides = preset.quick if (preset is not None and budget == "quick") else None
    return apply_budget(setting, budget, overrides)
