"""The papers unmix reproduces, one package each, found through one registry.

* :mod:`unmix.papers.wang_isola` — Wang & Isola 2020 (checks of Theorem 1);
* :mod:`unmix.papers.zimmermann` — Zimmermann et al. 2021 (Tables 1, 2, 4, Fig. 2, checks);
* :mod:`unmix.papers.reizinger` — Reizinger et al. 2022 (Figs. 2–5, the ``ima`` checks).

Adding a paper = adding one package (or a user's module) that builds a
:class:`~unmix.papers.base.Paper` and calls :func:`~unmix.papers.base.register_paper`; ``unmix
settings``, ``unmix reproduce`` and ``unmix verify`` find its presets, targets and checks.
"""

# Registration order is the order of `unmix verify all`: wang-isola, zimmermann, ima.
from unmix.papers import wang_isola  # noqa: F401, I001
from unmix.papers import zimmermann  # noqa: F401
from unmix.papers import reizinger  # noqa: F401
from unmix.papers.base import (
    PAPERS,
    PRESETS,
    TARGETS,
    Paper,
    PlannedRun,
    Preset,
    Target,
    closest,
    get_preset,
    get_target,
    in_group,
    paper_of,
    register_paper,
)

get = get_preset

__all__ = [
    "PAPERS",
    "PRESETS",
    "TARGETS",
    "Paper",
    "PlannedRun",
    "Preset",
    "Target",
    "closest",
    "get",
    "get_preset",
    "get_target",
    "in_group",
    "paper_of",
    "register_paper",
]
