r"""Identifiability up to permutation and elementwise rescaling: the mean correlation coefficient.

Zimmermann et al. (2021), Sec. 4.1 and Appx. A.3 (after Hyvärinen & Morioka 2016, 2017): correlate
every true latent with every recovered one, match them one-to-one so that the total absolute
correlation is largest, and average the matched absolute correlations:

.. math::

    C_{kl} = \operatorname{corr}(z_k, \hat z_l), \qquad
    \mathrm{MCC} = \max_{\pi\ \text{injective}} \frac{1}{d}\sum_{k=1}^{d} |C_{k\pi(k)}|,

with the matching found by the Hungarian algorithm (``scipy.optimize.linear_sum_assignment`` on
:math:`-|C|`). ``method="pearson"`` (Sec. 4.1) is invariant to affine rescaling and sign flips of
each dimension; ``method="spearman"`` (Sec. 4.2.1, KITTI) correlates ranks and is invariant to any
strictly monotone elementwise map.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics.r2 import _check_same_n, as_latent_array

__all__ = ["MCCResult", "mcc", "correlation_matrix"]


@dataclass(frozen=True)
class MCCResult:
    """Outcome of :func:`mcc`.

    Attributes:
        mcc: mean absolute correlation of the matched pairs, in [0, 1].
        permutation: shape ``(d_true,)``; true dimension ``k`` is matched to recovered dimension
            ``permutation[k]`` (distinct indices into ``range(d_hat)``).
        matched_correlations: shape ``(d_true,)``; the *signed* correlation of each matched pair,
            ``correlations[k, permutation[k]]`` (its sign tells a sign flip).
        correlations: the full ``(d_true, d_hat)`` correlation matrix.
        method: ``"pearson"`` or ``"spearman"``.

    ``float(result)`` gives ``result.mcc``.
    """

    mcc: float
    permutation: np.ndarray
    matched_correlations: np.ndarray
    correlations: np.ndarray
    method: str

    def __float__(self) -> float:
        return float(self.mcc)


def _standardise(x: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit norm; a constant column becomes all zeros."""
    xc = x - x.mean(axis=0, keepdims=True)
    norm = np.sqrt((xc * xc).sum(axis=0, keepdims=True))
    # A constant column carries no information: give it correlation 0 with everything.
    scale = np.where(norm > 0, norm, 1.0)
    return np.where(norm > 0, xc / scale, 0.0)


def correlation_matrix(
    z_true, z_hat, method: Literal["pearson", "spearman"] = "pearson"
) -> np.ndarray:
    """The ``(d_true, d_hat)`` matrix of Pearson or Spearman correlations between the columns.

    Spearman's coefficient is Pearson's on the ranks of each column (ties get their average rank).
    A constant column (zero variance, e.g. a collapsed encoder unit) has correlation 0 with every
    other column instead of NaN.
    """
    zt = as_latent_array("z_true", z_true)
    zh = as_latent_array("z_hat", z_hat)
    _check_same_n(zt, zh)
    if method == "spearman":
        from scipy.stats import rankdata  # deferred (import cost)

        zt = rankdata(zt, axis=0)
        zh = rankdata(zh, axis=0)
    elif method != "pearson":
        raise ConfigError(f"'method' must be 'pearson' or 'spearman', got {method!r}.")
    if zt.shape[0] < 2:
        raise ConfigError(
            f"Correlations need at least 2 samples, got n = {zt.shape[0]}; pass more samples."
        )
    c = _standardise(zt).T @ _standardise(zh)
    return np.clip(c, -1.0, 1.0)


def mcc(z_true, z_hat, method: Literal["pearson", "spearman"] = "pearson") -> MCCResult:
    r"""Mean correlation coefficient of true and recovered latents (Zimmermann et al., Sec. 4.1).

    Args:
        z_true: ground-truth latents, shape ``(n, d_true)`` (torch tensor or array).
        z_hat: recovered latents, shape ``(n, d_hat)`` with ``d_hat >= d_true``; surplus recovered
            dimensions are left unmatched.
        method: ``"pearson"`` (the paper's Sec. 4.1 choice) or ``"spearman"`` (rank correlation).

    Returns:
        :class:`MCCResult`: the MCC, the matching, the matched signed correlations and the matrix.

    Raises:
        ConfigError: sample counts differ, ``d_hat < d_true``, NaN/inf inputs, fewer than 2
            samples, or an unknown ``method``.
    """
    c = correlation_matrix(z_true, z_hat, method)
    d_true, d_hat = c.shape
    if d_hat < d_true:
        raise ConfigError(
            f"'z_hat' has {d_hat} dimensions but 'z_true' has {d_true}; MCC matches every true "
            f"dimension to a distinct recovered one, so it needs d_hat >= d_true."
        )
    from scipy.optimize import linear_sum_assignment  # deferred (import cost)

    rows, cols = linear_sum_assignment(-np.abs(c))
    # linear_sum_assignment returns rows sorted; every true dimension is assigned (d_true <= d_hat).
    permutation = np.empty(d_true, dtype=np.int64)
    permutation[rows] = cols
    matched = c[np.arange(d_true), permutation]
    return MCCResult(
        mcc=float(np.abs(matched).mean()),
        permutation=permutation,
        matched_correlations=matched,
        correlations=c,
        method=method,
    )
