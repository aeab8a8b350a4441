r"""Separated attribute predictability (SAP) of codes, after Kumar et al. (2018).

Kumar, Sattigeri & Balakrishnan (2018), "Variational inference of disentangled latent concepts
from unlabeled observations" (ICLR), Sec. 3: build a score matrix :math:`S` whose entry
:math:`S_{kl}` says how well the single code :math:`c_l` predicts factor :math:`z_k`; for each
factor take the gap between its two largest entries, and average:

.. math::

    \mathrm{SAP} = \frac{1}{K}\sum_{k=1}^{K}\bigl(S_{k,(1)} - S_{k,(2)}\bigr).

For a continuous factor the paper's score is the :math:`R^2` of a linear regression of the factor
on one code, which (one regressor with an intercept, fitted and scored on the same samples) is the
squared Pearson correlation, :math:`S_{kl} = \operatorname{corr}(z_k, c_l)^2`. That is what is
computed here, **for every factor** (discrete factors are treated as numbers too; the paper's
classification-accuracy variant for discrete factors is not implemented). A constant code has
:math:`S_{kl} = 0`; a constant factor raises ConfigError. With a single code the second entry is
taken as 0.

SAP is invariant to permuting the code columns (only sorted scores enter; up to float rounding
of the correlation product, ~1e-16) and to affine maps of each code, including sign flips. It
lies in [0, 1].

Inputs: ``z`` the true factors, shape ``(N, n_factors)``; ``z_hat`` the codes, shape
``(N, n_codes)``; torch tensors or NumPy arrays.
"""

from __future__ import annotations

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics._common import as_pair
from unmix.metrics.mcc import _standardise

__all__ = ["sap", "sap_score_matrix"]


def sap_score_matrix(z, z_hat) -> np.ndarray:
    """The ``(n_factors, n_codes)`` matrix :math:`S_{kl} = \\operatorname{corr}(z_k, c_l)^2`."""
    zt, zh = as_pair(z, z_hat)
    if zt.shape[0] < 2:
        raise ConfigError(f"SAP needs at least 2 samples, got n = {zt.shape[0]}.")
    const = np.flatnonzero(np.ptp(zt, axis=0) == 0)
    if len(const):
        raise ConfigError(
            f"'z' has constant factor column(s) {const.tolist()}: R² of a constant factor is "
            f"undefined. Drop those columns."
        )
    c = np.clip(_standardise(zt).T @ _standardise(zh), -1.0, 1.0)
    return c * c


def sap(z, z_hat) -> float:
    """SAP score of codes ``z_hat`` for factors ``z`` (Kumar et al. 2018): the mean over factors
    of the gap between the two largest single-code linear R² (squared correlations)."""
    s = sap_score_matrix(z, z_hat)
    top = -np.sort(-s, axis=1)
    second = top[:, 1] if top.shape[1] > 1 else np.zeros(top.shape[0])
    return float(np.mean(top[:, 0] - second))
