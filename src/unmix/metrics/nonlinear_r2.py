r"""Identifiability up to smooth invertible maps: held-out R² of a kernel ridge regression.

When a representation is identified only up to a nonlinear invertible map (e.g. block
identifiability), a linear fit understates how much of the true latents it holds. Von Kügelgen et
al. (2021), "Self-supervised learning with data augmentations provably isolates content from
style" (NeurIPS), Sec. 5, score recovered blocks by the :math:`R^2` of a linear and of a
kernel-ridge regression predicting the true latents from the learned ones.

:func:`kernel_r2` predicts every column of ``z`` from ``z_hat`` with
``sklearn.kernel_ridge.KernelRidge(kernel="rbf")`` and reports, on held-out samples,

.. math::

    R^2_k = 1 - \frac{\sum_i (z_{ik} - \hat z_{\text{pred},ik})^2}{\sum_i (z_{ik} - \bar z_k)^2},
    \qquad \text{kernel\_r2} = \frac1K \sum_k R^2_k .

Procedure: shuffle with ``seed`` and hold out ``test_fraction`` of the samples; of the rest keep
at most ``max_train`` (kernel ridge costs :math:`O(n^3)`); standardise the inputs with the
training mean/std and centre/scale the targets likewise (kernel ridge has no intercept). The
penalty ``alpha`` and the RBF width ``gamma`` are chosen jointly for all targets on a grid
(``alphas`` × ``gammas``; ``gammas`` are multiplied by ``1 / n_codes`` so that the default grid
suits any input dimension) by the mean squared error on a validation part
(``val_fraction`` of the training samples), then the model is refitted on all training samples
with the chosen pair and scored on the held-out ones. An RBF fit extrapolates poorly into sparse
tails: for ``z ~ N(0, I_3)`` and ``z_hat = z**3 + z`` it scores ≈ 0.96 at N = 2000 (against
≈ 0.998 for uniform ``z`` on [-1.5, 1.5]), so values a little below 1 need not mean a non-invertible
map.

:func:`block_r2` (von Kügelgen et al. 2021, "block identifiability") is the held-out R² of
predicting the subset ``z[:, block]`` of the true latents from ``z_hat``, by an affine map
(``kind="linear"``, :func:`unmix.metrics.r2_affine`) or by :func:`kernel_r2`
(``kind="kernel"``); high for the block the representation identifies, ≈ 0 for a block it
discards.

Inputs: ``z`` true latents, shape ``(N, n_factors)``; ``z_hat`` recovered ones, shape
``(N, n_codes)``; torch tensors or NumPy arrays. Bad input raises
:class:`unmix.errors.ConfigError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics._common import as_pair, check_fraction, split_indices
from unmix.metrics.r2 import r2_affine

__all__ = ["kernel_r2", "block_r2"]


def _scale(fit: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    mu = fit.mean(axis=0)
    sd = fit.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return [(a - mu) / sd for a in (fit, *others)]


def _r2_per_dim(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    ss_res = ((y - pred) ** 2).sum(axis=0)
    ss_tot = ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    # a constant held-out target: 1 if predicted exactly, else 0 (scikit-learn's convention)
    safe = np.where(ss_tot > 0, ss_tot, 1.0)
    return np.where(ss_tot > 0, 1.0 - ss_res / safe, np.where(ss_res == 0, 1.0, 0.0))


def kernel_r2(
    z,
    z_hat,
    *,
    test_fraction: float = 0.5,
    max_train: int = 2000,
    alphas: Sequence[float] = (1e-3, 1e-2, 1e-1),
    gammas: Sequence[float] = (0.1, 1.0),
    val_fraction: float = 0.2,
    seed: int = 0,
) -> dict[str, float]:
    """Held-out R² of an RBF kernel ridge regression ``z ← z_hat`` (see the module docstring).

    Args:
        z: true latents, shape ``(N, n_factors)``.
        z_hat: recovered latents, shape ``(N, n_codes)``.
        test_fraction: held-out share of the samples, in (0, 1).
        max_train: at most this many training samples are used (a seeded random subset).
        alphas: candidate ridge penalties (positive).
        gammas: candidate RBF widths, in units of ``1 / n_codes`` on standardised inputs.
        val_fraction: share of the training samples used to choose ``(alpha, gamma)``.
        seed: seed of the split and the subsample (NumPy ``default_rng``).

    Returns:
        ``{"kernel_r2": mean over factors, "kernel_r2_0": ..., "kernel_r2_<k>": ...,
        "kernel_alpha": chosen alpha, "kernel_gamma": chosen gamma (absolute)}``.
    """
    from sklearn.kernel_ridge import KernelRidge  # deferred (import cost, see metrics.mig)

    zt, zh = as_pair(z, z_hat)
    n, n_codes = zh.shape
    vf = check_fraction("val_fraction", val_fraction)
    if isinstance(max_train, bool) or not isinstance(max_train, int | np.integer) or max_train < 10:
        raise ConfigError(f"'max_train' must be an integer >= 10, got {max_train!r}.")
    alphas = [float(a) for a in alphas]
    if not alphas or min(alphas) <= 0:
        raise ConfigError(f"'alphas' must be a non-empty list of positive numbers, got {alphas}.")
    gammas = [float(g) for g in gammas]
    if not gammas or min(gammas) <= 0:
        raise ConfigError(f"'gammas' must be a non-empty list of positive numbers, got {gammas}.")
    gammas = [g / n_codes for g in gammas]  # relative widths -> absolute, on standardised inputs
    fit_idx, score_idx = split_indices(n, test_fraction, seed, min_fit=10)
    if len(fit_idx) > max_train:
        fit_idx = fit_idx[:max_train]  # already a random permutation
    x_fit, x_score = _scale(zh[fit_idx], zh[score_idx])
    y_fit, y_score = _scale(zt[fit_idx], zt[score_idx])

    n_val = max(2, int(round(vf * len(fit_idx))))
    xv, yv = x_fit[:n_val], y_fit[:n_val]
    xt, yt = x_fit[n_val:], y_fit[n_val:]
    best, best_err = (alphas[0], gammas[0]), np.inf
    for a in alphas:
        for g in gammas:
            pred = KernelRidge(alpha=a, kernel="rbf", gamma=g).fit(xt, yt).predict(xv)
            err = float(np.mean((pred - yv) ** 2))
            if err < best_err:
                best, best_err = (a, g), err
    model = KernelRidge(alpha=best[0], kernel="rbf", gamma=best[1]).fit(x_fit, y_fit)
    per = _r2_per_dim(y_score, model.predict(x_score))
    out = {"kernel_r2": float(per.mean())}
    out.update({f"kernel_r2_{k}": float(v) for k, v in enumerate(per)})
    out["kernel_alpha"] = float(best[0])
    out["kernel_gamma"] = float(best[1])
    return out


def block_r2(
    z,
    z_hat,
    block: Sequence[int],
    *,
    kind: Literal["linear", "kernel"] = "linear",
    test_fraction: float = 0.5,
    seed: int = 0,
    max_train: int = 2000,
) -> float:
    """Held-out R² of predicting the true-latent block ``z[:, block]`` from ``z_hat``.

    Block identifiability (von Kügelgen et al. 2021): the block is recovered if it is a function
    of the representation. ``kind="linear"`` uses :func:`unmix.metrics.r2_affine` (affine fit),
    ``kind="kernel"`` :func:`kernel_r2` (RBF kernel ridge, ``max_train`` training samples at
    most); both are held out on ``test_fraction`` of the samples with the split seeded by
    ``seed``. Returns the R² averaged over the block's columns.

    Raises:
        ConfigError: ``block`` empty, not integers, repeated or out of range; bad ``kind``.
    """
    zt, zh = as_pair(z, z_hat)
    d = zt.shape[1]
    try:
        idx = [int(i) for i in block]
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"'block' must be a list of column indices of 'z', got {block!r}."
        ) from exc
    if any(isinstance(i, bool) or int(i) != i for i in block):
        raise ConfigError(f"'block' must hold integer column indices, got {block!r}.")
    if not idx:
        raise ConfigError("'block' is empty; name at least one column of 'z'.")
    if len(set(idx)) != len(idx):
        raise ConfigError(f"'block' repeats a column: {idx}.")
    if min(idx) < 0 or max(idx) >= d:
        raise ConfigError(f"'block' indices must lie in 0..{d - 1} (z has {d} columns), got {idx}.")
    target = zt[:, idx]
    if kind == "linear":
        return float(r2_affine(target, zh, test_fraction=test_fraction, seed=seed).r2)
    if kind == "kernel":
        res = kernel_r2(target, zh, test_fraction=test_fraction, seed=seed, max_train=max_train)
        return res["kernel_r2"]
    raise ConfigError(f"'kind' must be 'linear' or 'kernel', got {kind!r}.")
