"""Numerical checks of the papers' theorems (``unmix verify``).

>>> from unmix.verify import run_checks
>>> results = run_checks("ima")                       # doctest: +SKIP
>>> all(r.passed for r in results)                    # doctest: +SKIP
True

Groups: ``wang-isola`` (paper 003), ``zimmermann`` (paper 000, Theorem 1), ``ima`` (paper 004,
Theorem 1). Each check is a plain function in :mod:`unmix.verify.wang_isola`,
:mod:`unmix.verify.zimmermann` or :mod:`unmix.verify.ima` returning a :class:`CheckResult`;
:func:`run_checks` runs a group and optionally writes figures (:mod:`unmix.verify.plots`).
"""

from unmix.verify.checks import GROUPS, CheckResult, check_names, run_checks

__all__ = ["GROUPS", "CheckResult", "check_names", "run_checks"]
