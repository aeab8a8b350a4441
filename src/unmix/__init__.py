"""unmix: identifiable representation learning — generate, train, score.

The package follows the data flow of an experiment (``docs/architecture.md``):

latent space & distributions (:mod:`unmix.spaces`, :mod:`unmix.distributions`, :mod:`unmix.latents`)
→ mixing / renderer (:mod:`unmix.mixing`, :mod:`unmix.render`) → model (:mod:`unmix.models`)
→ objective (:mod:`unmix.objectives`) → training (:mod:`unmix.train`) → metrics
(:mod:`unmix.metrics`) → runs & sweeps (:mod:`unmix.runs`, :mod:`unmix.sweep`) → papers
(:mod:`unmix.papers`, :mod:`unmix.reproduce`, :mod:`unmix.verify`) → CLI (:mod:`unmix.cli`).

The public surface (loaded on first use, so ``import unmix`` stays cheap)::

    import unmix

    @unmix.register_mixing("rotation")          # also register_objective / _metric / _model /
    def rotation(dim, seed, *, angle=0.3): ...  # _dataset, and register_paper

    from unmix.resolve import resolve
    from unmix.train import train

    resolved = resolve("zimmermann-table1-row1", "quick", overrides={"train.steps": 100})
    result = train(resolved.setting, "runs/row1", provenance=resolved.provenance)
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "register_mixing": "unmix.registry",
    "register_objective": "unmix.registry",
    "register_metric": "unmix.registry",
    "register_model": "unmix.registry",
    "register_dataset": "unmix.registry",
    "register_paper": "unmix.papers",
    "Paper": "unmix.papers",
    "Preset": "unmix.papers",
    "Target": "unmix.papers",
    "PlannedRun": "unmix.papers",
    "Setting": "unmix.settings",
    "Batch": "unmix.objectives.base",
    "Objective": "unmix.objectives.base",
    "Experiment": "unmix.experiment",
    "Resolved": "unmix.resolve",
    "load_setting": "unmix.resolve",
    "load_plugins": "unmix.plugins",
    "ContrastiveEncoder": "unmix.estimators",
    "VAEEncoder": "unmix.estimators",
    "load_run": "unmix.results",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'unmix' has no attribute '{name}'")
    import importlib

    if module == "unmix.registry":  # the built-in kinds register first, then the user's
        importlib.import_module("unmix.settings")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
