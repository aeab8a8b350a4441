"""The built-in metrics as registered kinds (``metrics: [r2, mcc, ...]`` in a setting).

A metric is a function ``f(z, z_hat, *, options...)`` of the true latents ``z`` and the model's
estimate ``z_hat`` (NumPy float64 arrays, ``(N, d)``; the evaluation set of the run), returning a
float (recorded under the metric's name) or a dict of floats (recorded under its keys). A metric
may ask for ``experiment`` too (the built objects of the run, e.g. to differentiate the decoder).
Register your own with :func:`unmix.registry.register_metric`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unmix.metrics.mcc import mcc as _mcc
from unmix.metrics.r2 import r2_affine
from unmix.registry import register_metric


@register_metric("r2")
def r2(z: np.ndarray, z_hat: np.ndarray) -> float:
    """Held-out R² of the best affine map ẑ → z (:func:`unmix.metrics.r2_affine`)."""
    return float(r2_affine(z, z_hat).r2)


@register_metric("r2_in_sample")
def r2_in_sample(z: np.ndarray, z_hat: np.ndarray) -> float:
    """R² of the affine map scored on the samples it was fitted on (the reference code's R²)."""
    return float(r2_affine(z, z_hat, in_sample=True).r2)


@register_metric("mcc")
def mcc(z: np.ndarray, z_hat: np.ndarray) -> float:
    """Mean correlation coefficient after the optimal matching (:func:`unmix.metrics.mcc`)."""
    return float(_mcc(z, z_hat).mcc)


@register_metric("factors")
def factors(z: np.ndarray, z_hat: np.ndarray) -> dict[str, float]:
    """Per true factor i: ``r2_factor{i}`` (held-out affine R² of z_i from ẑ) and ``mcc_factor{i}``
    (|Pearson correlation| of z_i with the ẑ coordinate MCC's matching assigns to it) — the
    per-factor numbers of paper 004's Fig. 5 and a per-factor view of Table 4."""
    return per_factor_scores(r2_affine(z, z_hat), _mcc(z, z_hat))


def per_factor_scores(r2_result: Any, mcc_result: Any) -> dict[str, float]:
    """``r2_factor{i}`` and ``mcc_factor{i}`` from an R2Result and an MCCResult."""
    out: dict[str, float] = {}
    for i in range(len(r2_result.per_dim)):
        out[f"r2_factor{i}"] = float(r2_result.per_dim[i])
        out[f"mcc_factor{i}"] = float(abs(mcc_result.matched_correlations[i]))
    return out
