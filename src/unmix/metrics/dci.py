r"""Disentanglement, completeness and informativeness (DCI) of codes, after Eastwood & Williams.

Eastwood & Williams (2018), "A framework for the quantitative evaluation of disentangled
representations" (ICLR), Sec. 2. One regressor per factor :math:`z_j` predicts it from all codes
:math:`c = \hat z`; the *importance* :math:`R_{ij} \ge 0` of code :math:`i` for factor :math:`j`
fills a ``(n_codes, n_factors)`` matrix :math:`R`. With :math:`K` factors and :math:`D` codes,

.. math::

    P_{ij} = \frac{R_{ij}}{\sum_{k=1}^{K} R_{ik}}, \qquad
    D_i = 1 - H_K(P_{i\cdot}) = 1 + \sum_k P_{ik}\log_K P_{ik}, \qquad
    \rho_i = \frac{\sum_j R_{ij}}{\sum_{ij} R_{ij}}, \qquad
    \text{disentanglement} = \sum_i \rho_i D_i,

.. math::

    \tilde P_{ij} = \frac{R_{ij}}{\sum_{d=1}^{D} R_{dj}}, \qquad
    C_j = 1 - H_D(\tilde P_{\cdot j}), \qquad
    \text{completeness} = \frac{1}{K}\sum_j C_j .

*Informativeness* is the prediction quality of the same regressors. The paper reports a
prediction error; here it is the **held-out** :math:`R^2` of each factor's regressor on the
``test_fraction`` of samples it was not fitted on, averaged over factors (1 = perfect, 0 = no
better than the mean, negative = worse). The importances are taken from the regressors fitted on
the training part.

Importances (``importance=``):

* ``"lasso"`` — codes standardised (training mean/std), each factor standardised, a
  ``sklearn.linear_model.Lasso`` per factor; :math:`R_{ij} = |w_{ij}|`. Standardising the factors
  makes the importances of different factors comparable (otherwise a factor with a large scale
  gets large coefficients and dominates every :math:`P_{i\cdot}`). ``lasso_alpha=None`` picks the
  penalty per factor by 5-fold ``LassoCV``; a float fixes it (default ``0.01``, fast).
  The fit is run to a tight tolerance (``tol=1e-10``), so the scores do not depend on the order
  of the code columns beyond ~1e-9. Caveat: on codes that carry no information about the factors
  (informativeness ≈ 0) the few coefficients that survive the penalty are sparse by chance, and
  disentanglement/completeness can read 0.2–0.5 (N = 2000, 3–5 factors) instead of ≈ 0; read
  them only together with informativeness, or use ``"gbt"``.
* ``"gbt"`` (default) — ``sklearn.ensemble.GradientBoostingRegressor`` per factor
  (``n_estimators`` trees of depth ``max_depth``, ``random_state=seed``), :math:`R_{\cdot j}` = its
  ``feature_importances_`` (these sum to 1 per factor, so factor scales do not matter). Trees only
  see the order of each code, so the importances are unchanged by strictly monotone maps of the
  codes; on pure-noise codes they spread evenly and both scores are ≈ 0. This is the choice of
  Locatello et al. (2019), who used scikit-learn's default 100 trees; the default here is 20 for
  speed, which caps the held-out R² of a perfect code near 0.98 (boosting with learning rate 0.1
  has not converged). Permuting the code columns changes the scores by ≲ 1e-4 (the tree builder
  visits features in a seeded random order, which breaks near-ties differently).

Conventions for degenerate cases: a code with zero total importance gets :math:`\rho_i = 0`; a
factor no code is important for gets :math:`C_j = 0` (uniform :math:`\tilde P_{\cdot j}`); if all
of :math:`R` is zero both scores are 0. With a single factor :math:`H_K` is taken as 0
(disentanglement 1 for any informative code); with a single code likewise completeness 1.

Inputs: ``z`` the true factors, shape ``(N, n_factors)``; ``z_hat`` the codes, shape
``(N, n_codes)``; torch tensors or NumPy arrays. Bad input raises
:class:`unmix.errors.ConfigError` naming the argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from unmix.errors import ConfigError
from unmix.metrics._common import as_pair, entropy, split_indices

__all__ = ["DCIImportance", "dci", "dci_importance", "dci_from_importance"]


@dataclass(frozen=True)
class DCIImportance:
    """Outcome of :func:`dci_importance`.

    Attributes:
        importance: the ``(n_codes, n_factors)`` matrix :math:`R`, non-negative.
        r2_per_factor: held-out R² of each factor's regressor, shape ``(n_factors,)``.
        method: ``"lasso"`` or ``"gbt"``.
        n_fit: samples the regressors were fitted on.
        n_score: held-out samples they were scored on.
    """

    importance: np.ndarray
    r2_per_factor: np.ndarray
    method: str
    n_fit: int
    n_score: int


def _standardise_with(x_fit: np.ndarray, *others: np.ndarray):
    """Centre/scale by the fit part's mean/std; a constant column is only centred."""
    mu = x_fit.mean(axis=0)
    sd = x_fit.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return [(a - mu) / sd for a in (x_fit, *others)]


def dci_importance(
    z,
    z_hat,
    *,
    importance: Literal["lasso", "gbt"] = "gbt",
    test_fraction: float = 0.5,
    seed: int = 0,
    lasso_alpha: float | None = 0.01,
    n_estimators: int = 20,
    max_depth: int = 3,
) -> DCIImportance:
    """The importance matrix ``R`` (codes × factors) and held-out R² per factor (see module doc).

    Args:
        z: true factors, shape ``(N, n_factors)``.
        z_hat: codes, shape ``(N, n_codes)``.
        importance: ``"lasso"`` (|coefficients| on standardised data) or ``"gbt"``
            (gradient-boosted trees' ``feature_importances_``).
        test_fraction: share of samples held out to score the regressors, in (0, 1).
        seed: seed of the split (NumPy ``default_rng``), of ``LassoCV``'s folds and of the trees.
        lasso_alpha: Lasso penalty on standardised data; ``None`` chooses it by 5-fold
            ``LassoCV``. Only for ``importance="lasso"``.
        n_estimators, max_depth: size of each boosted ensemble; only for ``importance="gbt"``.

    Raises:
        ConfigError: bad shapes or values, unknown ``importance``, a constant factor, too few
            samples.
    """
    # deferred (import cost, see metrics.mig)
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import Lasso, LassoCV
    from sklearn.metrics import r2_score

    zt, zh = as_pair(z, z_hat)
    n, n_codes = zh.shape
    n_factors = zt.shape[1]
    if importance not in ("lasso", "gbt"):
        raise ConfigError(f"'importance' must be 'lasso' or 'gbt', got {importance!r}.")
    fit_idx, score_idx = split_indices(n, test_fraction, seed, min_fit=max(5, n_codes + 2))
    const = np.flatnonzero(zt[fit_idx].std(axis=0) == 0)
    if len(const):
        raise ConfigError(
            f"'z' has constant factor column(s) {const.tolist()} on the fitting samples; DCI "
            f"needs each factor to vary. Drop those columns."
        )
    x_fit, x_score = _standardise_with(zh[fit_idx], zh[score_idx])
    y_fit, y_score = _standardise_with(zt[fit_idx], zt[score_idx])
    r = np.zeros((n_codes, n_factors))
    r2 = np.zeros(n_factors)
    for j in range(n_factors):
        if importance == "lasso":
            if lasso_alpha is None:
                reg = LassoCV(cv=5, random_state=seed, alphas=30)
            else:
                if not (float(lasso_alpha) >= 0):
                    raise ConfigError(f"'lasso_alpha' must be >= 0 or None, got {lasso_alpha!r}.")
                reg = Lasso(alpha=float(lasso_alpha), tol=1e-10, max_iter=100_000)
            reg.fit(x_fit, y_fit[:, j])
            r[:, j] = np.abs(reg.coef_)
        else:
            if int(n_estimators) < 1 or int(max_depth) < 1:
                raise ConfigError(
                    f"'n_estimators' and 'max_depth' must be >= 1, got {n_estimators}, {max_depth}."
                )
            reg = GradientBoostingRegressor(
                n_estimators=int(n_estimators), max_depth=int(max_depth), random_state=seed
            )
            reg.fit(x_fit, y_fit[:, j])
            r[:, j] = reg.feature_importances_
        r2[j] = r2_score(y_score[:, j], reg.predict(x_score))
    return DCIImportance(
        importance=r,
        r2_per_factor=r2,
        method=importance,
        n_fit=len(fit_idx),
        n_score=len(score_idx),
    )


def dci_from_importance(importance) -> dict[str, float]:
    """Disentanglement and completeness of an importance matrix ``R`` (codes × factors).

    Returns ``{"dci_disentanglement": ..., "dci_completeness": ...}`` by the formulas of the
    module docstring (entropies in base ``n_factors`` resp. ``n_codes``).
    """
    r = np.asarray(importance, dtype=np.float64)
    if r.ndim != 2 or r.size == 0:
        raise ConfigError(
            f"'importance' must be a non-empty (n_codes, n_factors) matrix, got shape {r.shape}."
        )
    if not np.isfinite(r).all() or (r < 0).any():
        raise ConfigError("'importance' must hold finite non-negative values.")
    n_codes, n_factors = r.shape
    total = r.sum()
    if total == 0:
        return {"dci_disentanglement": 0.0, "dci_completeness": 0.0}
    if n_factors > 1:
        d_i = 1.0 - np.asarray(entropy(r, base=n_factors, axis=1))
    else:
        d_i = np.ones(n_codes)
    rho = r.sum(axis=1) / total
    disent = float(np.sum(rho * d_i))
    if n_codes > 1:
        c_j = 1.0 - np.asarray(entropy(r, base=n_codes, axis=0))
    else:
        c_j = np.ones(n_factors)
    c_j = np.where(r.sum(axis=0) > 0, c_j, 0.0)
    return {"dci_disentanglement": disent, "dci_completeness": float(np.mean(c_j))}


def dci(
    z,
    z_hat,
    *,
    importance: Literal["lasso", "gbt"] = "gbt",
    test_fraction: float = 0.5,
    seed: int = 0,
    lasso_alpha: float | None = 0.01,
    n_estimators: int = 20,
    max_depth: int = 3,
) -> dict[str, float]:
    """DCI scores of codes ``z_hat`` for factors ``z`` (Eastwood & Williams 2018).

    Returns ``{"dci_disentanglement", "dci_completeness", "dci_informativeness"}`` as floats;
    informativeness is the held-out R² averaged over factors. Arguments as in
    :func:`dci_importance`.
    """
    imp = dci_importance(
        z,
        z_hat,
        importance=importance,
        test_fraction=test_fraction,
        seed=seed,
        lasso_alpha=lasso_alpha,
        n_estimators=n_estimators,
        max_depth=max_depth,
    )
    out = dci_from_importance(imp.importance)
    out["dci_informativeness"] = float(np.mean(imp.r2_per_factor))
    return out
