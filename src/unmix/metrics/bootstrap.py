r"""Percentile-bootstrap confidence intervals of a metric over samples.

Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, Ch. 13: draw ``n_boot`` resamples
of the ``N`` rows with replacement (the same rows of ``z`` and ``z_hat``, so pairs stay paired),
evaluate the metric on each, and take the empirical quantiles

.. math::

    [\hat\theta^*_{(\alpha/2)},\ \hat\theta^*_{(1-\alpha/2)}], \qquad \alpha = 1 - \text{ci},

of the resampled values (``numpy.quantile``, linear interpolation). The point estimate is the
metric on the original sample. The percentile interval usually, but not necessarily, contains
it; its coverage is close to ``ci`` when the metric's sampling distribution is roughly symmetric
around the truth (checked in tests/metrics/test_bootstrap.py for the correlation of Gaussian
pairs), and can be worse for strongly biased metrics at small N.

Resampling puts duplicated rows in the sample. A metric that splits the samples into a fitting and
a held-out part (e.g. :func:`unmix.metrics.r2_affine` by default) would then score on rows it was
also fitted on, an optimistic mix of in-sample and held-out; :func:`r2_ci` therefore bootstraps
the **in-sample** R² (``in_sample=True``), whose bootstrap is standard. :func:`mcc_ci` bootstraps
:func:`unmix.metrics.mcc` as is (it fits nothing but the matching).

The resample indices come from ``numpy.random.default_rng(seed)``, so results are deterministic
given the seed (and a deterministic metric).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics._common import as_pair, check_fraction
from unmix.metrics.mcc import mcc
from unmix.metrics.r2 import r2_affine

__all__ = ["bootstrap_ci", "mcc_ci", "r2_ci"]


def bootstrap_ci(
    metric_fn: Callable,
    z,
    z_hat,
    *,
    ci: float = 0.95,
    n_boot: int = 200,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(estimate, low, high)``: ``metric_fn(z, z_hat)`` and its percentile-bootstrap interval.

    Args:
        metric_fn: called as ``metric_fn(z, z_hat)`` on float64 NumPy arrays; must return a float
            or something ``float()`` accepts (e.g. :class:`unmix.metrics.MCCResult`).
        z: true latents, shape ``(N, n_factors)``.
        z_hat: recovered latents, shape ``(N, n_codes)``.
        ci: confidence level in (0, 1).
        n_boot: number of resamples (at least 2).
        seed: seed of the resampling (NumPy ``default_rng``).

    Raises:
        ConfigError: bad inputs, ``ci`` outside (0, 1), ``n_boot < 2``, ``metric_fn`` not
            callable or returning a non-finite value.
    """
    zt, zh = as_pair(z, z_hat)
    level = check_fraction("ci", ci)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 2:
        raise ConfigError(f"'n_boot' must be an integer >= 2, got {n_boot!r}.")
    if not callable(metric_fn):
        raise ConfigError(
            f"'metric_fn' must be callable as metric_fn(z, z_hat), got {metric_fn!r}."
        )

    def value(a: np.ndarray, b: np.ndarray) -> float:
        v = float(metric_fn(a, b))
        if not np.isfinite(v):
            raise ConfigError(
                f"'metric_fn' returned {v} on a bootstrap resample; the interval needs finite "
                f"values (a resample may have a constant column: pass more samples)."
            )
        return v

    estimate = value(zt, zh)
    rng = np.random.default_rng(seed)
    n = zt.shape[0]
    stats = np.empty(int(n_boot))
    for b in range(int(n_boot)):
        idx = rng.integers(0, n, size=n)
        stats[b] = value(zt[idx], zh[idx])
    low, high = np.quantile(stats, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return estimate, float(low), float(high)


def mcc_ci(
    z,
    z_hat,
    *,
    method: Literal["pearson", "spearman"] = "pearson",
    ci: float = 0.95,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """:func:`unmix.metrics.mcc` with its percentile-bootstrap interval.

    Returns ``{"mcc": estimate, "mcc_low": ..., "mcc_high": ...}``.
    """
    est, low, high = bootstrap_ci(
        lambda a, b: mcc(a, b, method).mcc, z, z_hat, ci=ci, n_boot=n_boot, seed=seed
    )
    return {"mcc": est, "mcc_low": low, "mcc_high": high}


def r2_ci(
    z,
    z_hat,
    *,
    ci: float = 0.95,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """In-sample :func:`unmix.metrics.r2_affine` with its percentile-bootstrap interval.

    In-sample because a held-out split of a resample with duplicated rows is not held out (see
    the module docstring). Returns ``{"r2": estimate, "r2_low": ..., "r2_high": ...}``.
    """
    est, low, high = bootstrap_ci(
        lambda a, b: r2_affine(a, b, in_sample=True).r2, z, z_hat, ci=ci, n_boot=n_boot, seed=seed
    )
    return {"r2": est, "r2_low": low, "r2_high": high}
