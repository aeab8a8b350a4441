"""Scores of recovered latents against true ones, and diagnostics of features and maps.

* :func:`r2_affine` — identifiability up to affine maps (R² of a linear fit, held out by default).
* :func:`mcc` — identifiability up to permutation and elementwise rescaling (mean correlation).
* :func:`align_loss`, :func:`uniform_loss` — Wang & Isola's alignment and uniformity;
  :func:`alignment_term`, :func:`uniformity_term` — the two terms of their Theorem 1.
* :func:`c_ima`, :func:`global_c_ima`, :func:`c_ima_from_jacobian` — the IMA contrast of a map.
* :func:`amari_distance` — distance between two mixing matrices up to column order and scale.
* :func:`dci`, :func:`mig`, :func:`sap` — disentanglement scores of codes ``z_hat`` for factors
  ``z`` (Eastwood & Williams; Chen et al.; Kumar et al.).
* :func:`kernel_r2`, :func:`block_r2` — held-out R² of a kernel ridge fit; block identifiability.
* :func:`bootstrap_ci`, :func:`mcc_ci`, :func:`r2_ci` — percentile-bootstrap intervals.

:func:`r2_affine`, :func:`mcc`, :func:`amari_distance` and the c_IMA functions accept torch tensors
or NumPy arrays; the alignment/uniformity functions are differentiable torch functions of tensors of
shape ``(N, n)``. Bad input raises :class:`unmix.errors.ConfigError` naming the argument.
"""

from unmix.metrics.align_uniform import (
    align_loss,
    alignment_term,
    require_normalized,
    uniform_loss,
    uniformity_term,
)
from unmix.metrics.amari import amari_distance, amari_index
from unmix.metrics.bootstrap import bootstrap_ci, mcc_ci, r2_ci
from unmix.metrics.c_ima import (
    batched_jacobian,
    c_ima,
    c_ima_from_jacobian,
    c_ima_of_mean_jacobian,
    global_c_ima,
)
from unmix.metrics.dci import DCIImportance, dci, dci_from_importance, dci_importance
from unmix.metrics.mcc import MCCResult, correlation_matrix, mcc
from unmix.metrics.mig import mig, mutual_information_matrix
from unmix.metrics.nonlinear_r2 import block_r2, kernel_r2
from unmix.metrics.r2 import R2Result, r2_affine
from unmix.metrics.sap import sap, sap_score_matrix

__all__ = [
    "R2Result",
    "r2_affine",
    "MCCResult",
    "mcc",
    "correlation_matrix",
    "align_loss",
    "uniform_loss",
    "alignment_term",
    "uniformity_term",
    "require_normalized",
    "c_ima",
    "c_ima_from_jacobian",
    "global_c_ima",
    "c_ima_of_mean_jacobian",
    "batched_jacobian",
    "amari_distance",
    "amari_index",
    "dci",
    "dci_importance",
    "dci_from_importance",
    "DCIImportance",
    "mig",
    "mutual_information_matrix",
    "sap",
    "sap_score_matrix",
    "kernel_r2",
    "block_r2",
    "bootstrap_ci",
    "mcc_ci",
    "r2_ci",
]
