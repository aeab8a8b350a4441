r"""Shared input checks and information-theory helpers of the disentanglement metrics.

Private to :mod:`unmix.metrics`: :mod:`~unmix.metrics.dci`, :mod:`~unmix.metrics.mig`,
:mod:`~unmix.metrics.sap`, :mod:`~unmix.metrics.nonlinear_r2` and :mod:`~unmix.metrics.bootstrap`
name their arguments ``z`` (true factors, shape ``(N, n_factors)``) and ``z_hat`` (codes, shape
``(N, n_codes)``), and check them with :func:`as_pair`.

:func:`entropy` is the Shannon entropy :math:`H_b(p) = -\sum_i p_i \log_b p_i` of a probability
vector (``0 log 0 = 0``), normalised to sum 1 first like ``scipy.stats.entropy``.
"""

from __future__ import annotations

import math

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics.r2 import as_latent_array

__all__ = ["as_pair", "entropy", "split_indices", "check_fraction"]


def as_pair(z, z_hat) -> tuple[np.ndarray, np.ndarray]:
    """``z`` and ``z_hat`` as float64 arrays with the same number of rows (else ConfigError)."""
    zt = as_latent_array("z", z)
    zh = as_latent_array("z_hat", z_hat)
    if zt.shape[0] != zh.shape[0]:
        raise ConfigError(
            f"'z' and 'z_hat' must hold the same samples: got {zt.shape[0]} and {zh.shape[0]} "
            f"rows (shapes {zt.shape} and {zh.shape})."
        )
    return zt, zh


def check_fraction(name: str, value: float) -> float:
    """``value`` as a float strictly inside (0, 1), else ConfigError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"'{name}' must be a number in (0, 1), got {value!r}.") from exc
    if not (0.0 < v < 1.0):
        raise ConfigError(f"'{name}' must lie strictly between 0 and 1, got {value}.")
    return v


def split_indices(n: int, test_fraction: float, seed: int, *, min_fit: int = 2, min_score: int = 2):
    """Shuffled ``(fit_idx, score_idx)`` with ``round(test_fraction · n)`` held-out samples.

    The same convention as :func:`unmix.metrics.r2_affine` (NumPy ``default_rng(seed)``, the
    first ``n_score`` of the permutation are held out).
    """
    tf = check_fraction("test_fraction", test_fraction)
    n_score = int(round(tf * n))
    perm = np.random.default_rng(seed).permutation(n)
    score_idx, fit_idx = perm[:n_score], perm[n_score:]
    if len(fit_idx) < min_fit or len(score_idx) < min_score:
        raise ConfigError(
            f"Too few samples: n = {n} gives {len(fit_idx)} to fit and {len(score_idx)} to "
            f"score, but the metric needs at least {min_fit} and {min_score}; pass more samples "
            f"(or change 'test_fraction')."
        )
    return fit_idx, score_idx


def entropy(p, base: float | None = None, axis: int = 0) -> np.ndarray | float:
    r"""Shannon entropy of the non-negative weights ``p`` along ``axis``, in log base ``base``.

    The weights are normalised to sum to 1 first; ``0 · log 0 = 0``. ``base=None`` gives nats.
    A slice whose weights are all zero has no distribution: it is given the uniform one (entropy
    :math:`\log_b n`, i.e. normalised entropy 1), the convention the DCI scores rely on.
    """
    p = np.asarray(p, dtype=np.float64)
    if np.any(p < 0) or not np.isfinite(p).all():
        raise ConfigError("'p' must hold finite non-negative weights for an entropy.")
    total = p.sum(axis=axis, keepdims=True)
    n = p.shape[axis]
    q = np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, -q * np.log(q), 0.0)
    h = terms.sum(axis=axis)
    if base is not None:
        if base <= 0 or base == 1:
            raise ConfigError(f"'base' of a logarithm must be positive and not 1, got {base}.")
        h = h / math.log(base)
    return float(h) if np.ndim(h) == 0 else h
