"""One resolver of settings, with provenance: which layer set each field.

A run's setting is built by :func:`resolve` from up to six layers, applied in this order (a later
layer wins):

1. ``preset:NAME`` or ``file:PATH`` — the source: a paper's preset or a YAML setting;
2. ``budget:B`` — the generic training budget :data:`BUDGETS` ``[B]`` (``smoke``, ``quick``,
   ``paper``; ``train.*`` fields only);
3. ``paper:KEY/B`` — the paper's own recipe for that budget, chosen by the setting's *content*
   (each registered paper's ``budget_rule``; e.g. Zimmermann's τ and steps per conditional), so a
   preset saved as YAML gets the same recipe as the preset; for a baseline column, the content
   is the column's (a Supervised regression gets a regression's recipe);
4. ``column:C`` — a table's baseline column (``identity``, ``supervised``);
5. ``seeds`` — the seeds a sweep assigns (``seeds.data``, ``seeds.train``);
6. ``cli`` — command-line flags and ``key=value`` overrides (``train.lr=2e-3``).

:func:`resolve` returns the validated setting and ``provenance``: every dotted field whose value
differs from its kind's default → the layer that set it last (``{"train.steps": "paper:zimmermann/
quick", ...}``). ``manifest.json`` records it.

Budgets:

* ``smoke`` — seconds per run, for CI: proves the pipeline runs end to end, not that it converges.
* ``quick`` — what unmix needs to get close to the paper on a 2-core CPU (with the paper's recipe).
* ``paper`` — the paper's own optimisation: Adam, lr 1e-4, batch 6144, 300,000 steps (Appx A.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from unmix.errors import ConfigError
from unmix.papers import PAPERS, PRESETS, closest, get_preset, paper_of
from unmix.registry import DATASETS, MIXINGS, MODELS, OBJECTIVES
from unmix.settings import (
    LatentSpec,
    Seeds,
    Setting,
    TrainSpec,
    apply_updates,
    changed_fields,
    flat_fields,
    same_value,
)

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
        "train.keep_checkpoint": "none",  # a smoke run proves the pipeline: no 10 MB files
    },
    # Found by the search in docs/quick_budget_search.md (with the papers' own recipes on top):
    # a larger learning rate with warm-up and cosine decay.
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

LAYER_ORDER = ("preset/file", "budget", "paper", "column", "seeds", "cli")


@dataclass(frozen=True)
class Resolved:
    """A resolved setting and the layer that set each of its non-default fields."""

    setting: Setting
    provenance: dict[str, str] = field(default_factory=dict)
    source: str = ""


def parse_overrides(items: list[str] | tuple[str, ...] | None) -> dict[str, Any]:
    """``["train.lr=2e-3", "objective.tau=0.5"]`` → ``{"train.lr": 0.002, ...}``; each value is
    parsed as YAML (numbers, booleans, lists ``[20, 20]``, ``null``)."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = str(item).partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(
                f"override '{item}' is not key=value: write e.g. train.lr=2e-3 or objective.tau=0.5"
            )
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            value = text
        if isinstance(value, str) and _is_float(value):
            value = float(value)  # YAML 1.1 reads "2e-3" as a string
        out[key] = value
    return out


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_source(name_or_path: str | Path) -> tuple[dict[str, Any], str]:
    """The setting (as a dict) of a preset name or a YAML file, and the layer's name."""
    text = str(name_or_path)
    if text in PRESETS:
        return get_preset(text).setting.to_dict(), f"preset:{text}"
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return Setting.from_yaml(path).to_dict(), f"file:{path}"
    close = closest(text)
    hint = f" Did you mean '{close}'?" if close else ""
    raise ConfigError(
        f"'{text}' is neither a preset nor a YAML file.{hint} Run `unmix settings` to list presets."
    )


def load_setting(name_or_path: str | Path) -> Setting:
    """A preset name (see ``unmix settings``) or a path to a YAML file, as it is (no budget)."""
    return Setting.from_dict(load_source(name_or_path)[0])


def budget_layers(setting: Setting, budget: str) -> list[tuple[str, dict[str, Any]]]:
    """The budget's layers for ``setting``: the generic budget, then each paper's recipe that
    claims the setting's content."""
    if budget not in BUDGETS:
        raise ConfigError(f"--budget must be one of {', '.join(BUDGETS)}; got '{budget}'.")
    layers = [(f"budget:{budget}", dict(BUDGETS[budget]))]
    for key, paper in PAPERS.items():
        rule = paper.budget_rule(setting, budget) if paper.budget_rule else None
        if rule:
            layers.append((f"paper:{key}/{budget}", dict(rule)))
    return layers


def resolve(
    source: str | Path | Setting,
    budget: str | None = None,
    *,
    column: str | None = None,
    seeds: dict[str, int] | None = None,
    overrides: dict[str, Any] | None = None,
    name: str | None = None,
) -> Resolved:
    """The setting of ``source`` (a preset name, a YAML path or a :class:`Setting`) with the
    layers of the module docstring applied in order; see :class:`Resolved`."""
    if isinstance(source, Setting):
        data, origin = source.to_dict(), "setting"
    else:
        data, origin = load_source(source)
    setter: dict[str, str] = dict.fromkeys(flat_fields(data), origin)
    current = _validated(data, origin)

    def apply(layer: str, updates: dict[str, Any]) -> None:
        nonlocal data, current
        if not updates:
            return
        new = apply_updates(data, updates)
        for key in changed_fields(data, new):
            setter[key] = layer
        data = new
        current = _validated(data, layer)

    column_updates: dict[str, Any] = {}
    if column is not None and column != "unsupervised":
        paper = paper_of(str(source)) if isinstance(source, str) and source in PRESETS else None
        fn = (paper.columns if paper else _all_columns()).get(column)
        if fn is None:
            raise ConfigError(f"unknown column '{column}': one of {sorted(_all_columns())}")
        column_updates = fn(data)
    if budget is not None:
        # A paper's recipe is chosen by content: for a baseline column, by the column's own
        # content (a Supervised column's regression gets the recipe of a regression, not the
        # contrastive objective's τ, batch and steps); the column still wins on its own fields.
        content = current
        if column_updates:
            content = _validated(apply_updates(data, column_updates), f"column:{column}")
        for layer, updates in budget_layers(content, budget):
            apply(layer, updates)
    if column_updates:
        apply(f"column:{column}", column_updates)
    if column is not None:
        apply(f"column:{column}", {"name": f"{name or current.name}-{column}"})
    elif name is not None:
        apply("cli", {"name": name})
    if seeds:
        apply("seeds", {f"seeds.{k}": v for k, v in seeds.items()})
    apply("cli", dict(overrides or {}))
    defaults = _defaults(current)
    provenance = {
        key: setter.get(key, origin)
        for key, value in flat_fields(current.to_dict()).items()
        if key not in defaults or not same_value(defaults[key], value)
    }
    return Resolved(current, provenance, origin)


def _validated(data: dict[str, Any], layer: str) -> Setting:
    try:
        return Setting.from_dict(data)
    except ConfigError as err:
        raise ConfigError(f"after layer '{layer}': {err}") from None


def _all_columns() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for paper in PAPERS.values():
        out.update(paper.columns)
    return out


def _defaults(setting: Setting) -> dict[str, Any]:
    """Default value of every field of ``setting``'s kinds (a field without one is absent)."""
    out: dict[str, Any] = {"name": "custom", "data": None}
    for section, model in (("train", TrainSpec), ("seeds", Seeds), ("latent", LatentSpec)):
        for k, f in model.model_fields.items():
            if not f.is_required():
                out[f"{section}.{k}"] = _json(f.get_default(call_default_factory=True))
    for section, registry in (
        ("mixing", MIXINGS),
        ("model", MODELS),
        ("objective", OBJECTIVES),
        ("data", DATASETS),
    ):
        spec = getattr(setting, section)
        if spec is None:
            continue
        for k, f in registry.entry(spec.kind).spec.model_fields.items():
            if not f.is_required():
                value = _json(f.get_default(call_default_factory=True))
                for leaf, v in flat_fields(value, f"{section}.{k}").items():
                    out[leaf] = v
    for section in ("mixing", "model", "objective"):  # a section's kind: the Setting's default
        out[f"{section}.kind"] = Setting.model_fields[section].default.kind
    out.pop("data.kind", None)
    return out


def _json(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return list(value)
    return value


def load_with_budget(name_or_path: str, budget: str | None = None) -> Setting:
    """A preset or YAML setting with a budget applied (the papers' recipes included)."""
    return resolve(name_or_path, budget).setting


def apply_budget(setting: Setting, budget: str, overrides: dict[str, Any] | None = None) -> Setting:
    """``setting`` with the budget's layers and then ``overrides`` (dotted paths) applied."""
    return resolve(setting, budget, overrides=overrides).setting
