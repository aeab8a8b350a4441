"""The registry of papers: what a paper package contributes, and how unmix finds it.

A paper is one package under :mod:`unmix.papers` (or a user's own module) that registers a
:class:`Paper` with :func:`register_paper`. It brings

* **presets** — :class:`Preset`: a validated setting plus the paper's reported values and where
  they come from (table, row, column). Reports put our numbers *beside* these; nothing is a result;
* a **budget rule** — ``budget_rule(setting, budget) -> dict | None``: the paper's per-budget recipe
  for a setting, keyed by the setting's *content* (not its name), so a preset dumped to YAML and
  trained with ``--budget quick`` gets the same recipe as the preset itself. ``None`` = not this
  paper's kind of setting;
* **columns** — ``columns[name](setting_dict) -> updates``: the baselines a table reports beside
  the model (e.g. Identity, Supervised);
* **targets** — :class:`Target`: a table or figure to reproduce: which runs (:class:`PlannedRun`),
  extra per-run row fields, and the report (Markdown and figures) computed from the rows;
* **checks** — numerical checks of the paper's theory, by group (``unmix verify GROUP``).

The driver (:mod:`unmix.reproduce`) runs any target the same way: plan → run → rows → report.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unmix.errors import ConfigError
from unmix.settings import Setting


@dataclass(frozen=True)
class Preset:
    """A named setting with the paper's values. ``paper`` maps a column name (``unsupervised``,
    ``identity``, ``supervised``, …) to ``(mean, std)`` in percent; ``metric`` is the table's
    score; ``group`` the target it belongs to."""

    name: str
    setting: Setting
    source: str
    metric: str = "r2"
    paper: dict[str, tuple[float, float]] = field(default_factory=dict)
    group: str = ""


@dataclass(frozen=True)
class PlannedRun:
    """One run of a target: a preset under a column (``unsupervised`` = the model itself), with
    data seed ``data_seed`` and training seed ``seed``; ``subdir`` is its run directory below
    ``out/budget``."""

    preset: str
    seed: int = 0
    column: str = "unsupervised"
    data_seed: int | None = None
    subdir: str = ""

    @property
    def label(self) -> str:
        return f"{self.preset}/{self.column}/seed{self.seed}"


@dataclass
class Target:
    """A table or figure of a paper. ``plan(seeds, baselines)`` lists its runs;
    ``row(run, setting, summary, run_dir, budget)`` adds target-specific fields to a run's row
    (may be None); ``report(rows, folder, budget, seeds)`` writes figures into ``folder`` and
    returns the Markdown."""

    name: str
    paper: str
    plan: Callable[[int, bool], list[PlannedRun]]
    report: Callable[[list[dict], Path, str, int], str]
    row: Callable[..., dict[str, Any]] | None = None
    description: str = ""


@dataclass
class Paper:
    """Everything a paper package contributes (see the module docstring)."""

    key: str
    title: str
    presets: dict[str, Preset] = field(default_factory=dict)
    targets: dict[str, Target] = field(default_factory=dict)
    budget_rule: Callable[[Setting, str], dict[str, Any] | None] | None = None
    columns: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=dict)
    checks: dict[str, list[Callable[..., Any]]] = field(default_factory=dict)


PAPERS: dict[str, Paper] = {}
PRESETS: dict[str, Preset] = {}
TARGETS: dict[str, Target] = {}


def register_paper(paper: Paper, replace: bool = False) -> Paper:
    """Add a paper's presets, targets and checks to unmix (a user's own paper too)."""
    from unmix.verify.checks import register_checks

    if paper.key in PAPERS and not replace:
        raise ConfigError(f"paper '{paper.key}' is registered already: pass replace=True")
    for name in list(paper.presets) + list(paper.targets):
        owner = (PRESETS.get(name) or TARGETS.get(name)) and _owner(name)
        if owner not in (None, paper.key) and not replace:
            raise ConfigError(f"'{name}' of paper '{paper.key}' is paper '{owner}''s already")
    PAPERS[paper.key] = paper
    PRESETS.update(paper.presets)
    TARGETS.update(paper.targets)
    for group, checks in paper.checks.items():
        register_checks(group, checks, replace=replace)
    return paper


def _owner(name: str) -> str | None:
    for key, p in PAPERS.items():
        if name in p.presets or name in p.targets:
            return key
    return None


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"Unknown preset '{name}'.{_hint(name, PRESETS)} Run `unmix settings` to list them."
        ) from None


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ConfigError(
            f"Unknown target '{name}'.{_hint(name, TARGETS)} Choose one of: {', '.join(TARGETS)}."
        ) from None


def paper_of(name: str) -> Paper:
    """The paper that registered preset or target ``name``."""
    key = _owner(name)
    if key is None:
        raise ConfigError(f"'{name}' is no paper's preset or target")
    return PAPERS[key]


def in_group(group: str) -> list[Preset]:
    """The presets of target ``group``, in registration order."""
    return [p for p in PRESETS.values() if p.group == group]


def closest(name: str) -> str | None:
    match = difflib.get_close_matches(name, list(PRESETS) + list(TARGETS), n=1, cutoff=0.6)
    return match[0] if match else None


def _hint(name: str, pool: dict) -> str:
    match = difflib.get_close_matches(name, list(pool), n=1, cutoff=0.6)
    return f" Did you mean '{match[0]}'?" if match else ""
