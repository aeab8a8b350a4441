r"""Identifiability up to affine maps: the coefficient of determination :math:`R^2`.

Zimmermann et al. (2021), Sec. 4.1 and Appx. A.3: "we fit a linear regression between the
ground-truth and recovered sources and report the coefficient of determination". The regression
predicts the true latents from the recovered ones,

.. math::

    \hat z_{\text{true}} = W \hat z + b, \qquad
    R^2 = \frac{1}{d}\sum_{k=1}^{d}\Bigl(1 - \frac{\sum_i (z_{ik} - \hat z_{\text{true},ik})^2}
                                         {\sum_i (z_{ik} - \bar z_k)^2}\Bigr),

i.e. scikit-learn's ``r2_score`` with ``multioutput="uniform_average"`` (the mean of the
per-dimension :math:`R^2`). :math:`R^2 = 1` iff ``z_true`` is an exact affine function of ``z_hat``.

By default the map is fitted on one random part of the samples and scored on the other (held out),
so that a flexible fit cannot score well by chance. ``in_sample=True`` fits and scores on all
samples, which is what the reference code of the paper did; on trained models the two differ by
≤ 0.004 (paper README), but on small or noisy samples the in-sample score is optimistic by about
``d_hat · (1 − R²) / n`` (least squares fits part of the noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from unmix.errors import ConfigError

__all__ = ["R2Result", "r2_affine", "as_latent_array"]


def as_latent_array(name: str, value) -> np.ndarray:
    """``value`` (torch tensor or array-like of shape ``(n, d)``) as a float64 NumPy array.

    Raises :class:`ConfigError` naming ``name`` if it is not 2-D or holds NaN/inf values.
    """
    if isinstance(value, torch.Tensor):
        arr = value.detach().to("cpu", torch.float64).numpy()
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"'{name}' must be a torch tensor or a numeric array of shape (n, d); "
                f"could not convert a {type(value).__name__}: {exc}"
            ) from exc
    if arr.ndim != 2:
        raise ConfigError(
            f"'{name}' must have shape (n, d) (samples × dimensions), got shape {arr.shape}; "
            f"reshape a single dimension with .reshape(-1, 1)."
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ConfigError(
            f"'{name}' is empty (shape {arr.shape}); pass at least one sample and dim."
        )
    if not np.isfinite(arr).all():
        n_bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise ConfigError(
            f"'{name}' contains NaN or inf in {n_bad} of {arr.shape[0]} samples; the metric is "
            f"undefined — check the encoder output (did training diverge?) or drop those rows."
        )
    return arr


def _check_same_n(z_true: np.ndarray, z_hat: np.ndarray) -> None:
    if z_true.shape[0] != z_hat.shape[0]:
        raise ConfigError(
            f"'z_true' and 'z_hat' must hold the same samples: got {z_true.shape[0]} and "
            f"{z_hat.shape[0]} rows (shapes {z_true.shape} and {z_hat.shape})."
        )


@dataclass(frozen=True)
class R2Result:
    """Outcome of :func:`r2_affine`.

    Attributes:
        r2: the paper's metric, the uniform average over true dimensions of the per-dimension R².
        per_dim: per-dimension R² of each true latent, shape ``(d_true,)``.
        in_sample: ``True`` if fitted and scored on the same samples, ``False`` if held out.
        n_fit: number of samples the regression was fitted on.
        n_score: number of samples it was scored on.

    ``float(result)`` gives ``result.r2``.
    """

    r2: float
    per_dim: np.ndarray
    in_sample: bool
    n_fit: int
    n_score: int

    def __float__(self) -> float:
        return float(self.r2)


def r2_affine(
    z_true,
    z_hat,
    *,
    in_sample: bool = False,
    test_fraction: float = 0.5,
    seed: int = 0,
) -> R2Result:
    r"""R² of the best affine prediction of ``z_true`` from ``z_hat`` (Zimmermann et al., Sec. 4.1).

    Fits ``sklearn.linear_model.LinearRegression`` (ordinary least squares with intercept)
    ``z_true ← z_hat`` and scores it with ``sklearn.metrics.r2_score`` (uniform average over the
    ``d_true`` output dimensions).

    Args:
        z_true: ground-truth latents, shape ``(n, d_true)`` (torch tensor or array).
        z_hat: recovered latents, shape ``(n, d_hat)``; ``d_hat`` may differ from ``d_true``.
        in_sample: if ``True``, fit and score on all ``n`` samples (the reference code's choice).
            If ``False`` (default), shuffle with ``seed``, fit on ``n - n_score`` samples and score
            on the held-out ``n_score = round(test_fraction * n)`` samples.
        test_fraction: held-out share in ``(0, 1)``; ignored when ``in_sample=True``.
        seed: seed of the random split (NumPy ``default_rng``).

    Returns:
        :class:`R2Result` with the averaged R², the per-dimension R² and the split sizes.

    Raises:
        ConfigError: shapes disagree, inputs hold NaN/inf, ``test_fraction`` outside (0, 1), or too
            few samples (the fit needs more than ``d_hat + 1`` samples, scoring at least 2).

    A constant true dimension makes R² undefined; scikit-learn then reports 1.0 for a perfect
    prediction of it and 0.0 otherwise.
    """
    zt = as_latent_array("z_true", z_true)
    zh = as_latent_array("z_hat", z_hat)
    _check_same_n(zt, zh)
    n, d_hat = zh.shape
    if in_sample:
        fit_idx = score_idx = np.arange(n)
    else:
        if not (0.0 < float(test_fraction) < 1.0):
            raise ConfigError(
                f"'test_fraction' must lie strictly between 0 and 1, got {test_fraction}; "
                f"use e.g. 0.5, or in_sample=True to fit and score on all samples."
            )
        n_score = int(round(test_fraction * n))
        perm = np.random.default_rng(seed).permutation(n)
        score_idx, fit_idx = perm[:n_score], perm[n_score:]
    n_fit, n_score = len(fit_idx), len(score_idx)
    if n_fit < d_hat + 2 or n_score < 2:
        raise ConfigError(
            f"Too few samples for R²: n = {n} gives {n_fit} to fit and {n_score} to score, but an "
            f"affine fit of {d_hat} dims needs at least {d_hat + 2} fit samples and scoring needs "
            f"at least 2; pass more samples (or change 'test_fraction')."
        )
    from sklearn.linear_model import LinearRegression  # deferred: sklearn costs ≈ 100 MB
    from sklearn.metrics import r2_score

    reg = LinearRegression().fit(zh[fit_idx], zt[fit_idx])
    pred = reg.predict(zh[score_idx])
    per_dim = np.atleast_1d(r2_score(zt[score_idx], pred, multioutput="raw_values"))
    r2 = float(r2_score(zt[score_idx], pred, multioutput="uniform_average"))
    return R2Result(
        r2=r2,
        per_dim=np.asarray(per_dim, dtype=np.float64),
        in_sample=bool(in_sample),
        n_fit=n_fit,
        n_score=n_score,
    )
