"""kernel_r2 and block_r2: nonlinear invertible maps, independent blocks, a direct reference."""

import numpy as np
import pytest
import torch
from sklearn.kernel_ridge import KernelRidge

from unmix.errors import ConfigError
from unmix.metrics import block_r2, kernel_r2, r2_affine

N = 1500


def _latents(n=N, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=(n, d))


def test_smooth_invertible_map_scores_near_one_where_linear_r2_is_lower():
    z = _latents()
    z_hat = z**3 + z
    out = kernel_r2(z, z_hat)
    assert out["kernel_r2"] >= 0.98, out
    assert set(out) == {"kernel_r2", "kernel_r2_0", "kernel_r2_1", "kernel_r2_2"} | {
        "kernel_alpha",
        "kernel_gamma",
    }
    assert all(out[f"kernel_r2_{k}"] >= 0.97 for k in range(3))
    linear = r2_affine(z, z_hat).r2
    assert linear < out["kernel_r2"] - 0.04
    assert linear < 0.96


def test_mixing_nonlinear_map_and_noise():
    rng = np.random.default_rng(1)
    z = _latents(seed=1)
    mixed = np.tanh(z @ rng.normal(size=(3, 4)) * 0.5)  # invertible on its image (4 >= 3)
    assert kernel_r2(z, torch.as_tensor(mixed))["kernel_r2"] >= 0.9
    noise = rng.normal(size=(N, 3))
    assert kernel_r2(z, noise)["kernel_r2"] <= 0.05


def test_matches_a_direct_kernel_ridge_fit_with_the_chosen_hyperparameters():
    rng = np.random.default_rng(2)
    z = _latents(n=400, d=2, seed=2)
    z_hat = np.sin(z) + 0.1 * rng.normal(size=(400, 2))
    out = kernel_r2(z, z_hat, seed=3, test_fraction=0.25)
    # re-derive: same split as unmix.metrics.r2_affine, standardise with training statistics
    perm = np.random.default_rng(3).permutation(400)
    score, fit = perm[:100], perm[100:]
    mx, sx = z_hat[fit].mean(0), z_hat[fit].std(0)
    my, sy = z[fit].mean(0), z[fit].std(0)
    model = KernelRidge(alpha=out["kernel_alpha"], kernel="rbf", gamma=out["kernel_gamma"])
    model.fit((z_hat[fit] - mx) / sx, (z[fit] - my) / sy)
    pred = model.predict((z_hat[score] - mx) / sx) * sy + my
    y = z[score]
    r2 = 1 - ((y - pred) ** 2).sum(0) / ((y - y.mean(0)) ** 2).sum(0)
    np.testing.assert_allclose([out["kernel_r2_0"], out["kernel_r2_1"]], r2, atol=1e-10)
    assert out["kernel_r2"] == pytest.approx(r2.mean(), abs=1e-10)


def test_deterministic_given_seed_and_subsampling_to_max_train():
    z = _latents(n=600, seed=4)
    z_hat = np.exp(z / 2)
    a = kernel_r2(z, z_hat, seed=5, max_train=100)
    assert a == kernel_r2(z, z_hat, seed=5, max_train=100)
    assert a["kernel_r2"] >= 0.9


def test_block_r2_high_for_the_recovered_block_low_for_a_discarded_one():
    rng = np.random.default_rng(6)
    z = _latents(d=5, seed=6)
    content, style = [0, 1, 2], [3, 4]
    z_hat = np.tanh(z[:, content] @ rng.normal(size=(3, 3)) * 0.5)  # only the content block
    for kind, high in (("linear", 0.7), ("kernel", 0.95)):
        assert block_r2(z, z_hat, content, kind=kind) >= high
        assert block_r2(z, z_hat, style, kind=kind) <= 0.05
    assert block_r2(z, z_hat, content, kind="kernel") > block_r2(z, z_hat, content) + 0.05
    # the linear kind is r2_affine of the block
    assert block_r2(z, z_hat, style) == pytest.approx(r2_affine(z[:, style], z_hat).r2)


def test_errors_name_the_argument():
    z = _latents(n=100)
    with pytest.raises(ConfigError, match="'block' is empty"):
        block_r2(z, z, [])
    with pytest.raises(ConfigError, match="'block' repeats"):
        block_r2(z, z, [0, 0])
    with pytest.raises(ConfigError, match=r"'block' indices must lie in 0\.\.2"):
        block_r2(z, z, [3])
    with pytest.raises(ConfigError, match="'block' must hold integer"):
        block_r2(z, z, [0.5])
    with pytest.raises(ConfigError, match="'kind' must be"):
        block_r2(z, z, [0], kind="mlp")
    with pytest.raises(ConfigError, match="'alphas'"):
        kernel_r2(z, z, alphas=(0.0,))
    with pytest.raises(ConfigError, match="'max_train'"):
        kernel_r2(z, z, max_train=5)
    with pytest.raises(ConfigError, match="'val_fraction'"):
        kernel_r2(z, z, val_fraction=0.0)
    with pytest.raises(ConfigError, match="same samples"):
        kernel_r2(z, z[:20])
