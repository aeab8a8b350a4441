"""The built-in metrics as registered kinds (``metrics: [r2, mcc, ...]`` in a setting).

A metric is a function ``f(z, z_hat, *, options...)`` of the true latents ``z`` and the model's
estimate ``z_hat`` (NumPy float64 arrays, ``(N, d)``; the evaluation set of the run), returning a
float (recorded under the metric's name) or a dict of floats (recorded under its keys). A metric
may ask for ``experiment`` too (the built objects of the run, e.g. to differentiate the decoder).
Register your own with :func:`unmix.registry.register_metric`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from unmix.errors import ConfigError
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


@register_metric("mcc_spearman")
def mcc_spearman(z: np.ndarray, z_hat: np.ndarray) -> float:
    """MCC with Spearman (rank) correlations — paper 000's choice for KITTI Masks (Appx A.3,
    "as in Klindt et al. (2021)")."""
    return float(_mcc(z, z_hat, method="spearman").mcc)


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


# ------------------------------------------------------------- the field's further metrics
@register_metric("dci")
def dci(
    z: np.ndarray,
    z_hat: np.ndarray,
    *,
    importance: Literal["lasso", "gbt"] = "gbt",
    n_estimators: Annotated[int, Field(ge=1, le=10_000)] = 20,
    seed: int = 0,
) -> dict[str, float]:
    """DCI of Eastwood & Williams (:func:`unmix.metrics.dci.dci`): ``dci_disentanglement``,
    ``dci_completeness``, ``dci_informativeness``."""
    from unmix.metrics.dci import dci as _dci

    return _dci(z, z_hat, importance=importance, n_estimators=n_estimators, seed=seed)


@register_metric("mig")
def mig(
    z: np.ndarray,
    z_hat: np.ndarray,
    *,
    estimator: Literal["binned", "continuous"] = "binned",
    bins: Annotated[int, Field(ge=2, le=10_000)] = 20,
) -> float:
    """Mutual information gap (:func:`unmix.metrics.mig.mig`)."""
    from unmix.metrics.mig import mig as _mig

    return _mig(z, z_hat, estimator=estimator, bins=bins)


@register_metric("sap")
def sap(z: np.ndarray, z_hat: np.ndarray) -> float:
    """Separated attribute predictability (:func:`unmix.metrics.sap.sap`)."""
    from unmix.metrics.sap import sap as _sap

    return _sap(z, z_hat)


@register_metric("kernel_r2")
def kernel_r2(z: np.ndarray, z_hat: np.ndarray, *, seed: int = 0) -> dict[str, float]:
    """Held-out R² of an RBF kernel ridge map ẑ → z (:func:`unmix.metrics.nonlinear_r2.kernel_r2`)."""
    from unmix.metrics.nonlinear_r2 import kernel_r2 as _kernel_r2

    return _kernel_r2(z, z_hat, seed=seed)


@register_metric("block_r2")
def block_r2(
    z: np.ndarray,
    z_hat: np.ndarray,
    *,
    block: list[Annotated[int, Field(ge=0)]],
    regressor: Literal["linear", "kernel"] = "linear",
) -> float:
    """Block identifiability: held-out R² of the latent subset ``z[:, block]`` from ẑ
    (:func:`unmix.metrics.nonlinear_r2.block_r2`)."""
    from unmix.metrics.nonlinear_r2 import block_r2 as _block_r2

    if max(block, default=-1) >= z.shape[1] or not block:
        raise ConfigError(f"metric block_r2: block {block} must list latent indices < {z.shape[1]}")
    return _block_r2(z, z_hat, block, kind=regressor)


@register_metric("mcc_ci")
def mcc_ci(
    z: np.ndarray,
    z_hat: np.ndarray,
    *,
    ci: Annotated[float, Field(gt=0, lt=1)] = 0.95,
    n_boot: Annotated[int, Field(ge=10, le=100_000)] = 200,
) -> dict[str, float]:
    """MCC with a percentile-bootstrap interval: ``mcc``, ``mcc_low``, ``mcc_high``."""
    from unmix.metrics.bootstrap import mcc_ci as _mcc_ci

    return _mcc_ci(z, z_hat, ci=ci, n_boot=n_boot)


@register_metric("r2_ci")
def r2_ci(
    z: np.ndarray,
    z_hat: np.ndarray,
    *,
    ci: Annotated[float, Field(gt=0, lt=1)] = 0.95,
    n_boot: Annotated[int, Field(ge=10, le=100_000)] = 200,
) -> dict[str, float]:
    """In-sample R² with a percentile-bootstrap interval: ``r2_boot``, ``r2_low``, ``r2_high``
    (``r2_boot`` is the in-sample estimate the interval is about, beside the held-out ``r2``)."""
    from unmix.metrics.bootstrap import r2_ci as _r2_ci

    out = _r2_ci(z, z_hat, ci=ci, n_boot=n_boot)
    return {"r2_boot": out["r2"], "r2_low": out["r2_low"], "r2_high": out["r2_high"]}
