"""mcc: invariances, the recovered matching, brute-force and scipy references, noise bound."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.errors import ConfigError
from unmix.metrics import MCCResult, correlation_matrix, mcc


def _latents(n=3000, d=4, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


def test_permuted_sign_flipped_rescaled_copy_gives_one_and_the_permutation():
    z = _latents()
    perm = np.array([2, 0, 3, 1])  # z_hat[:, l] = s_l * z[:, perm[l]]
    signs = np.array([-3.0, 0.5, -1.0, 10.0])
    z_hat = z[:, perm] * signs + 4.0
    res = mcc(z, torch.as_tensor(z_hat))
    assert isinstance(res, MCCResult)
    assert res.mcc == pytest.approx(1.0, abs=1e-12)
    # true dim k is matched to the recovered dim l with perm[l] == k
    np.testing.assert_array_equal(res.permutation, np.argsort(perm))
    np.testing.assert_allclose(res.matched_correlations, np.sign(signs[np.argsort(perm)]))
    assert float(res) == res.mcc


def test_extra_recovered_dims_are_left_unmatched():
    rng = np.random.default_rng(1)
    z = _latents(d=3, seed=1)
    z_hat = np.c_[rng.normal(size=(3000, 2)), z[:, [1, 2, 0]]]
    res = mcc(z, z_hat)
    assert res.mcc == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(res.permutation, [4, 2, 3])
    assert res.correlations.shape == (3, 5)
    with pytest.raises(ConfigError, match="needs d_hat >= d_true"):
        mcc(z_hat, z)


def test_matching_equals_brute_force_over_all_injections():
    rng = np.random.default_rng(2)
    z = _latents(n=500, d=3, seed=2)
    z_hat = z @ rng.normal(size=(3, 4)) + rng.normal(size=(500, 4))
    res = mcc(z, z_hat)
    c = np.abs(np.corrcoef(z.T, z_hat.T)[:3, 3:])
    best = max(np.mean([c[k, p[k]] for k in range(3)]) for p in itertools.permutations(range(4), 3))
    assert res.mcc == pytest.approx(best, abs=1e-12)


def test_correlations_match_numpy_and_scipy():
    rng = np.random.default_rng(3)
    z = _latents(n=400, d=3, seed=3)
    z_hat = np.exp(z @ rng.normal(size=(3, 3)))
    np.testing.assert_allclose(
        correlation_matrix(z, z_hat), np.corrcoef(z.T, z_hat.T)[:3, 3:], atol=1e-12
    )
    rho = stats.spearmanr(z, z_hat).statistic[:3, 3:]
    np.testing.assert_allclose(correlation_matrix(z, z_hat, "spearman"), rho, atol=1e-12)


def test_spearman_is_one_for_monotone_nonlinear_maps():
    z = _latents(d=3, seed=4)
    z_hat = np.c_[np.exp(3 * z[:, 2]), -(z[:, 0] ** 3), np.arctanh(0.99 * z[:, 1])]
    spear = mcc(z, z_hat, method="spearman")
    assert spear.mcc == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(spear.permutation, [1, 2, 0])
    assert mcc(z, z_hat).mcc < 0.97  # Pearson sees the nonlinearity


def test_independent_noise_gives_small_mcc():
    """Each correlation of independent samples is ≈ N(0, 1/n); over d² = 16 entries the largest
    |corr| exceeds k/sqrt(n) with probability < 16·P(|N(0,1)| > 5) ≈ 1e-5, and MCC ≤ max |corr|."""
    n, k = 5000, 5.0
    z, noise = _latents(n=n, seed=5), _latents(n=n, seed=6)
    for method in ("pearson", "spearman"):
        res = mcc(z, noise, method=method)
        assert res.mcc <= np.abs(res.correlations).max() < k / math.sqrt(n)


def test_constant_column_has_zero_correlation():
    z = _latents(n=100, d=2, seed=7)
    z_hat = np.c_[z[:, 0], np.full(100, 3.0)]
    res = mcc(z, z_hat)
    assert res.correlations[1, 1] == 0.0 and res.correlations[0, 1] == 0.0
    assert res.mcc == pytest.approx(0.5, abs=1e-12)


def test_errors_are_readable():
    z = _latents(n=50, d=2)
    with pytest.raises(ConfigError, match="'method' must be 'pearson' or 'spearman'"):
        mcc(z, z, method="kendall")
    with pytest.raises(ConfigError, match="same samples"):
        mcc(z, z[:10])
    with pytest.raises(ConfigError, match="at least 2 samples"):
        mcc(z[:1], z[:1])
    with pytest.raises(ConfigError, match="'z_true' contains NaN or inf"):
        mcc(np.where(z > 0.9, np.inf, z), z)
