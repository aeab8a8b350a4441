r"""Mutual information gap (MIG) of codes, after Chen et al. (2018).

Chen, Li, Grosse & Duvenaud (2018), "Isolating sources of disentanglement in variational
autoencoders" (NeurIPS), Sec. 5, Eq. (7): for each factor :math:`z_k` take the two codes
:math:`c_{(1)}, c_{(2)}` with the largest mutual information with it, and average the gap,
normalised by the factor's entropy, over the :math:`K` factors:

.. math::

    \mathrm{MIG} = \frac{1}{K}\sum_{k=1}^{K}
        \frac{I(z_k; c_{(1)}) - I(z_k; c_{(2)})}{H(z_k)} \in [0, 1].

(Chen et al. estimate :math:`I` from the encoder's distribution; with only samples of codes the
estimate below is the usual substitute, as in Locatello et al. 2019.) With a single code
:math:`I(z_k; c_{(2)})` is taken as 0. All logarithms are natural; the ratio does not depend on it.

Estimators (``estimator=``):

* ``"binned"`` — each code is cut into ``bins`` equal-width bins over its range
  (``numpy.histogram_bin_edges``); each factor likewise, unless it takes at most ``bins``
  distinct values, in which case those values are its classes (a discrete factor). :math:`I`
  is the plug-in mutual information of the joint histogram
  (``sklearn.metrics.mutual_info_score``) and :math:`H(z_k) = I(z_k; z_k)` the plug-in entropy of
  the factor's bins, so each ratio lies in [0, 1]. The plug-in estimate is biased upwards by about
  :math:`(B_z - 1)(B_c - 1) / (2N)` nats for independent variables (≈ 0.09 nats for 20 × 20 bins
  at N = 2000, against :math:`H \approx \log 20 \approx 3`), which the gap mostly cancels.
  Equal-width bins make the score invariant to affine maps of each code (sign flips included),
  not to general monotone maps.
* ``"continuous"`` — :math:`I(z_k; c_l)` by the Kraskov–Stögbauer–Grassberger kNN estimator,
  ``sklearn.feature_selection.mutual_info_regression`` (``n_neighbors`` neighbours,
  ``random_state=seed``), called one code at a time so that the estimate of a pair does not depend
  on the other columns. A continuous factor has no finite Shannon entropy (its differential
  entropy depends on its units and can be negative), so the gap is normalised by the
  estimator's own value of the factor with itself, :math:`\hat I(z_k; z_k)` — the largest value
  the estimator reports at this N (about :math:`\psi(N) - \psi(k)`, growing like
  :math:`\log N`). So an exact copy of a factor scores a ratio of 1, and the score is invariant
  to affine maps of the codes (the estimator rescales each code to unit variance); strictly
  monotone nonlinear maps lower the estimate somewhat. The score depends on N through this
  normaliser; compare scores at equal N.

Inputs: ``z`` the true factors, shape ``(N, n_factors)``; ``z_hat`` the codes, shape
``(N, n_codes)``; torch tensors or NumPy arrays. A constant factor has no entropy: ConfigError.
The score is exactly invariant to permuting the code columns (only the sorted informations
enter).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics._common import as_pair

__all__ = ["mig", "mutual_information_matrix", "discretize"]


def discretize(x: np.ndarray, bins: int) -> np.ndarray:
    """Integer bin labels ``(N, d)`` of each column of ``x`` in ``bins`` equal-width bins.

    Bin edges span each column's range (``numpy.histogram_bin_edges``); the right edge belongs to
    the last bin, as in ``numpy.histogram``. A constant column gets label 0 everywhere.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape, dtype=np.int64)
    for j in range(x.shape[1]):
        col = x[:, j]
        edges = np.histogram_bin_edges(col, bins=bins)
        # interior edges only: labels 0 .. bins-1, the maximum falls in the last bin
        out[:, j] = np.searchsorted(edges[1:-1], col, side="right")
    return out


def _factor_labels(z: np.ndarray, bins: int) -> np.ndarray:
    """Class labels of discrete factors (≤ ``bins`` distinct values), bin labels otherwise."""
    out = np.zeros(z.shape, dtype=np.int64)
    for k in range(z.shape[1]):
        values, inverse = np.unique(z[:, k], return_inverse=True)
        if len(values) <= bins:
            out[:, k] = inverse
        else:
            out[:, k] = discretize(z[:, [k]], bins)[:, 0]
    return out


def _check_bins(bins) -> int:
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
        raise ConfigError(f"'bins' must be an integer >= 2, got {bins!r}.")
    return int(bins)


def mutual_information_matrix(
    z,
    z_hat,
    *,
    estimator: Literal["binned", "continuous"] = "binned",
    bins: int = 20,
    n_neighbors: int = 3,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(mi, h)``: the ``(n_factors, n_codes)`` matrix of :math:`I(z_k; c_l)` and the
    normalisers :math:`H(z_k)` (binned entropy, or :math:`\\hat I(z_k; z_k)` for the kNN
    estimator), in nats. See the module docstring for the estimators."""
    # deferred: importing scikit-learn costs ≈ 100 MB and a second, which a run that never
    # computes MIG should not pay
    from sklearn.feature_selection import mutual_info_regression
    from sklearn.metrics import mutual_info_score

    zt, zh = as_pair(z, z_hat)
    n_factors, n_codes = zt.shape[1], zh.shape[1]
    const = np.flatnonzero(np.ptp(zt, axis=0) == 0)
    if len(const):
        raise ConfigError(
            f"'z' has constant factor column(s) {const.tolist()}: a constant factor has zero "
            f"entropy and MIG divides by it. Drop those columns."
        )
    mi = np.zeros((n_factors, n_codes))
    h = np.zeros(n_factors)
    if estimator == "binned":
        b = _check_bins(bins)
        zl = _factor_labels(zt, b)
        cl = discretize(zh, b)
        for k in range(n_factors):
            h[k] = mutual_info_score(zl[:, k], zl[:, k])
            for l in range(n_codes):
                mi[k, l] = mutual_info_score(zl[:, k], cl[:, l])
    elif estimator == "continuous":
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, int) or n_neighbors < 1:
            raise ConfigError(f"'n_neighbors' must be a positive integer, got {n_neighbors!r}.")
        if zt.shape[0] <= n_neighbors + 1:
            raise ConfigError(
                f"The kNN estimator needs more than n_neighbors + 1 = {n_neighbors + 1} samples, "
                f"got {zt.shape[0]}."
            )

        def knn_mi(x: np.ndarray, y: np.ndarray) -> float:
            return float(
                mutual_info_regression(
                    x.reshape(-1, 1), y, n_neighbors=n_neighbors, random_state=seed
                )[0]
            )

        for k in range(n_factors):
            h[k] = knn_mi(zt[:, k], zt[:, k])
            for l in range(n_codes):
                mi[k, l] = knn_mi(zh[:, l], zt[:, k])
    else:
        raise ConfigError(f"'estimator' must be 'binned' or 'continuous', got {estimator!r}.")
    return mi, h


def mig(
    z,
    z_hat,
    *,
    estimator: Literal["binned", "continuous"] = "binned",
    bins: int = 20,
    n_neighbors: int = 3,
    seed: int = 0,
) -> float:
    """Mutual information gap of codes ``z_hat`` for factors ``z`` (Chen et al. 2018, Eq. 7).

    Args:
        z: true factors, shape ``(N, n_factors)``.
        z_hat: codes, shape ``(N, n_codes)``.
        estimator: ``"binned"`` (histograms, default) or ``"continuous"`` (kNN / KSG).
        bins: bins per code and per continuous factor (``"binned"`` only).
        n_neighbors: neighbours of the kNN estimator (``"continuous"`` only).
        seed: ``random_state`` of the kNN estimator's jitter (``"continuous"`` only).

    Returns:
        The MIG as a float in [0, 1] (the normaliser of ``"continuous"`` is itself estimated, so
        a ratio can in principle exceed 1 slightly; it is not clipped).
    """
    mi, h = mutual_information_matrix(
        z, z_hat, estimator=estimator, bins=bins, n_neighbors=n_neighbors, seed=seed
    )
    top = -np.sort(-mi, axis=1)
    second = top[:, 1] if top.shape[1] > 1 else np.zeros(top.shape[0])
    if (h <= 0).any():
        bad = np.flatnonzero(h <= 0).tolist()
        raise ConfigError(
            f"'z' factor column(s) {bad} have estimated entropy 0 (all samples in one bin or "
            f"class); MIG is undefined for them."
        )
    return float(np.mean((top[:, 0] - second) / h))
