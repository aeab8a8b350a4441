"""Training budgets: how long to train a preset.

* ``smoke`` — seconds per run, for CI: proves the pipeline runs end to end, not that it converges.
* ``quick`` — what unmix needs to get close to the paper on a 2-core CPU (found by the sweeps in
  ``benchmarks/``; see docs/reproduce.md for the numbers behind it).
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


def apply_budget(setting: Setting, budget: str) -> Setting:
    """The setting with its ``train`` section replaced by the named budget."""
    if budget not in BUDGETS:
        raise ConfigError(f"--budget must be one of {', '.join(BUDGETS)}; got '{budget}'.")
    data = setting.to_dict()
    data["train"] = {**data["train"], **BUDGETS[budget]}
    return Setting.from_dict(data)
