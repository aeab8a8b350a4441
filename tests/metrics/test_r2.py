"""r2_affine: invariances, an independent least-squares reference, noise bounds and errors."""

import math

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.metrics import R2Result, r2_affine


def _latents(n=2000, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _r2_reference(z_true, z_hat, fit, score):
    """Independent reference: NumPy least squares with an intercept and the textbook R² per dim."""
    x_fit = np.c_[z_hat[fit], np.ones(len(fit))]
    coef, *_ = np.linalg.lstsq(x_fit, z_true[fit], rcond=None)
    pred = np.c_[z_hat[score], np.ones(len(score))] @ coef
    y = z_true[score]
    ss_res = ((y - pred) ** 2).sum(axis=0)
    ss_tot = ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    return 1.0 - ss_res / ss_tot


def test_permuted_sign_flipped_rescaled_copy_scores_one():
    z = _latents()
    perm = np.array([3, 0, 4, 1, 2])
    z_hat = z[:, perm] * np.array([2.0, -0.5, 3.0, -7.0, 0.1])
    res = r2_affine(z, z_hat)
    assert isinstance(res, R2Result)
    assert not res.in_sample
    assert res.r2 == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.per_dim, 1.0, atol=1e-12)


def test_affine_map_scores_one_held_out():
    rng = np.random.default_rng(1)
    z = _latents(seed=1)
    a = rng.normal(size=(5, 7))  # into a larger space: still an exact affine relation
    z_hat = z @ a + rng.normal(size=7)
    res = r2_affine(torch.as_tensor(z, dtype=torch.float64), z_hat)
    assert res.r2 == pytest.approx(1.0, abs=1e-10)


def test_matches_independent_lstsq_reference_held_out_and_in_sample():
    rng = np.random.default_rng(2)
    z = _latents(n=600, d=3, seed=2)
    z_hat = np.tanh(z @ rng.normal(size=(3, 4))) + 0.3 * rng.normal(size=(600, 4))
    res = r2_affine(z, z_hat, seed=7, test_fraction=0.25)
    perm = np.random.default_rng(7).permutation(600)
    score, fit = perm[:150], perm[150:]
    ref = _r2_reference(z, z_hat, fit, score)
    np.testing.assert_allclose(res.per_dim, ref, rtol=0, atol=1e-10)
    assert res.r2 == pytest.approx(ref.mean(), abs=1e-10)
    assert (res.n_fit, res.n_score) == (450, 150)

    ins = r2_affine(z, z_hat, in_sample=True)
    ref_in = _r2_reference(z, z_hat, np.arange(600), np.arange(600))
    assert ins.in_sample and ins.n_fit == ins.n_score == 600
    assert ins.r2 == pytest.approx(ref_in.mean(), abs=1e-10)
    assert float(ins) == ins.r2


def test_independent_noise_scores_near_zero():
    """Bounds from n. Held out: |R²| ≲ (p+1)/n_fit + 2k·sqrt(p/(n_fit·n_score)) (estimation noise of
    the p slopes plus its cross term with the test targets). In sample: R²_k ~ Beta(p/2, (n-p-1)/2),
    mean p/(n-1), sd ≈ sqrt(2p)/n. k = 5 standard errors."""
    n, d, k = 4000, 5, 5.0
    z = _latents(n=n, d=d, seed=3)
    noise = _latents(n=n, d=d, seed=4)
    res = r2_affine(z, noise)
    n_fit, n_score = res.n_fit, res.n_score
    bound = (d + 1) / n_fit + 2 * k * math.sqrt(d / (n_fit * n_score))
    assert abs(res.r2) < bound
    ins = r2_affine(z, noise, in_sample=True)
    assert 0.0 <= ins.r2 < d / (n - 1) + k * math.sqrt(2 * d) / n


def test_seed_changes_split_but_is_reproducible():
    rng = np.random.default_rng(50)
    z = _latents(n=300, d=2, seed=5)
    z_hat = z + rng.normal(size=z.shape)
    assert r2_affine(z, z_hat, seed=1).r2 == r2_affine(z, z_hat, seed=1).r2
    assert r2_affine(z, z_hat, seed=1).r2 != r2_affine(z, z_hat, seed=2).r2


def test_errors_are_readable():
    z = _latents(n=100, d=3)
    with pytest.raises(ConfigError, match="same samples"):
        r2_affine(z, z[:50])
    bad = z.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ConfigError, match="'z_hat' contains NaN or inf in 1 of 100"):
        r2_affine(z, bad)
    with pytest.raises(ConfigError, match=r"'z_true' must have shape \(n, d\)"):
        r2_affine(z[:, 0], z)
    with pytest.raises(ConfigError, match="Too few samples"):
        r2_affine(z[:8], z[:8])
    with pytest.raises(ConfigError, match="'test_fraction' must lie strictly between 0 and 1"):
        r2_affine(z, z, test_fraction=1.0)
    with pytest.raises(ConfigError, match="torch tensor or a numeric array"):
        r2_affine(z, [["a", "b", "c"]] * 100)
