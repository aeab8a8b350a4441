"""Numerical checks of the papers' theorems (``unmix verify``).

>>> from unmix.verify import run_checks
>>> results = run_checks("ima")                       # doctest: +SKIP
>>> all(r.passed for r in results)                    # doctest: +SKIP
True

Groups: ``wang-isola`` (paper 003), ``zimmermann`` (paper 000, Theorem 1), ``ima`` (paper 004,
Theorem 1). Each check is a plain function in its paper's package (``unmix.papers.<paper>.checks``)
returning a :class:`CheckResult`, registered with :func:`register_checks`; :func:`run_checks` runs
a group and optionally writes figures (:mod:`unmix.verify.plots`).
"""

from typing import Any

from unmix.verify.checks import CHECKS, GROUPS, CheckResult, register_checks

__all__ = ["CHECKS", "GROUPS", "CheckResult", "check_names", "register_checks", "run_checks"]


def __getattr__(name: str) -> Any:  # the runner imports the papers: loaded on first use
    if name in ("run_checks", "check_names"):
        from unmix.verify import runner

        return getattr(runner, name)
    raise AttributeError(name)
