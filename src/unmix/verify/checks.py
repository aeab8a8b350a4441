r"""The check record, the registry of checks and the runner behind ``unmix verify``.

A *check* is a plain function ``check_xxx(*, seed: int = 0, **size) -> CheckResult`` that measures
one claim of a paper numerically and decides whether the measurement agrees with it. Its
``CheckResult`` carries the claim (one sentence), the measured number, a description of what was
expected and with which tolerance, the verdict, and a ``details`` dict of further numbers (the
series
behind a figure, fitted slopes with confidence intervals, standard errors). Every tolerance is
either
a floating-point round-off budget or follows from the sample size (``k`` standard errors, confidence
intervals of fitted slopes); none is tuned to make a check pass.

Groups (paper numbers refer to ``/work/shared/papers``):

* ``wang-isola`` — paper 003, Wang & Isola (2020): Gaussian potential identity, Theorem 1 limit and
  its :math:`O(1/M)` rate, resubstitution entropy, Propositions 1–2 on finite configurations,
  Jensen.
* ``zimmermann`` — paper 000, Zimmermann et al. (2021), Theorem 1: the contrastive-loss limit is the
  cross-entropy, equal to the vMF entropy for the isometry and strictly larger otherwise.
* ``ima`` — paper 004, Reizinger et al. (2022), Theorem 1 in the linear-Gaussian case: optimal
  factorised posterior variances, and ELBO* − (log p(x) − c_IMA) = O(γ⁻²).

Use :func:`run_checks` (``run_checks("all", plots_dir=Path("figs"))``) or call a check directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from unmix.errors import ConfigError

__all__ = [
    "GROUPS",
    "CheckResult",
    "CHECKS",
    "register_checks",
    "fit_loglog_slope",
    "rng_for",
]

CHECKS: dict[str, list[Callable[..., CheckResult]]] = {}
"""Checks by group, in run order; papers add theirs with :func:`register_checks`."""
GROUPS = CHECKS.keys()
"""The registered groups (a live view: ``wang-isola``, ``zimmermann``, ``ima`` …)."""


def register_checks(
    group: str, checks: Sequence[Callable[..., CheckResult]], replace: bool = False
) -> None:
    """Add ``checks`` (functions ``f(seed=...) -> CheckResult``) as group ``group``."""
    if group in CHECKS and not replace:
        raise ConfigError(f"verify group '{group}' is registered already: pass replace=True")
    CHECKS[group] = list(checks)


#: z-value of a two-sided 95% interval (reported CIs) and of the 99.9% band used in pass criteria.
Z95 = 1.959963984540054
Z999 = 3.2905267314919255


@dataclass
class CheckResult:
    """Outcome of one numerical check of a paper's claim.

    Attributes:
        group: one of :data:`GROUPS`.
        name: short identifier, unique within the group (e.g. ``"theorem1-rate-uniform"``).
        claim: the claim being checked, in one sentence.
        measured: the headline measured number (its meaning is stated in ``expected``).
        expected: what the claim predicts for ``measured`` and the tolerance used, in words.
        passed: whether ``measured`` (and any secondary criteria listed in ``expected``) agree.
        details: further numbers (JSON-serialisable): series, standard errors, CIs, references.
        seconds: wall-clock time the check took.
    """

    group: str
    name: str
    claim: str
    measured: float
    expected: str
    passed: bool
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def id(self) -> str:
        """``"group/name"``."""
        return f"{self.group}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (numpy scalars and arrays converted to Python numbers/lists)."""
        return _jsonable(asdict(self))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return float(obj)
    return obj


def rng_for(seed: int, *stream: int | str) -> np.random.Generator:
    """A numpy ``Generator`` for ``seed`` and a named stream (independent streams per check)."""
    words = [int(seed)]
    for s in stream:
        words.extend(s.encode() if isinstance(s, str) else [int(s)])
    return np.random.default_rng(np.random.SeedSequence(words))


def fit_loglog_slope(
    x: Sequence[float],
    y: Sequence[float],
    se: Sequence[float] | None = None,
    *,
    curvature: bool = False,
) -> dict[str, float]:
    r"""Weighted least-squares fit of :math:`\log|y| = a + s\log x\,[+\,c/x]`.

    The weights are :math:`1/\mathrm{Var}(\log|y_i|) \approx (y_i/\mathrm{se}_i)^2` (delta method)
    when
    standard errors are given, else uniform (deterministic data). With ``curvature=True`` a nuisance
    term :math:`c/x` absorbs the leading correction of an expansion
    :math:`y = C x^{s}(1 + \rho/x + \dots)`, whose log is :math:`\log C + s\log x + \rho/x +
    O(x^{-2})`.

    The slope's standard error is :math:`\sqrt{[(X^\top W X)^{-1}]_{ss}}`, inflated by
    :math:`\sqrt{\chi^2/\nu}` (:math:`\nu` = points − parameters) when that exceeds 1, so that a
    model
    that does not fit widens the interval instead of hiding. Returns ``slope``, ``slope_se``,
    ``ci95_low``/``ci95_high``, ``intercept``, ``chi2``, ``dof`` and ``inflation``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.abs(np.asarray(y, dtype=np.float64))
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError("fit_loglog_slope needs 1-d x and y of the same length.")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ConfigError("fit_loglog_slope needs positive x and non-zero y (it fits log|y|).")
    cols = [np.ones_like(x), np.log(x)] + ([1.0 / x] if curvature else [])
    X = np.stack(cols, axis=1)
    if X.shape[0] <= X.shape[1]:
        raise ConfigError(
            f"fit_loglog_slope needs more than {X.shape[1]} points, got {X.shape[0]}."
        )
    ly = np.log(y)
    if se is None:
        w = np.ones_like(x)
    else:
        se = np.asarray(se, dtype=np.float64)
        w = (y / se) ** 2
    XtW = X.T * w
    cov = np.linalg.inv(XtW @ X)
    beta = cov @ (XtW @ ly)
    resid = ly - X @ beta
    dof = X.shape[0] - X.shape[1]
    chi2 = float(np.sum(w * resid**2))
    if se is None:
        inflation = math.sqrt(chi2 / dof) if dof > 0 else 0.0  # ordinary LS residual scale
    else:
        inflation = max(1.0, math.sqrt(chi2 / dof))
    slope_se = math.sqrt(cov[1, 1]) * inflation
    return {
        "slope": float(beta[1]),
        "slope_se": slope_se,
        "ci95_low": float(beta[1] - Z95 * slope_se),
        "ci95_high": float(beta[1] + Z95 * slope_se),
        "intercept": float(beta[0]),
        "curvature": float(beta[2]) if curvature else 0.0,
        "chi2": chi2,
        "dof": float(dof),
        "inflation": inflation,
    }
