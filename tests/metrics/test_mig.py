"""MIG: a hand-computed contingency table, a histogram2d reference, identity/noise/rotation."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import special_ortho_group

from unmix.errors import ConfigError
from unmix.metrics import mig, mutual_information_matrix
from unmix.metrics.mig import discretize

N = 2000


def _factors(n=N, k=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, k))


def _plugin_mi_histogram2d(x, y, bins):
    """Independent reference: plug-in MI (nats) of numpy's equal-width 2-D histogram."""
    counts, _, _ = np.histogram2d(x, y, bins=bins)
    p = counts / counts.sum()
    px, py = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (px @ py)[nz])).sum())


def test_binned_mi_of_a_hand_computed_contingency_table():
    # joint counts of (factor, code) = [[3, 1], [1, 3]]: p = [[3, 1], [1, 3]] / 8, marginals 1/2
    z = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=float)[:, None]
    c = np.array([0, 0, 0, 1, 0, 1, 1, 1], dtype=float)
    z_hat = np.c_[c, np.full(8, 5.0)]  # second code constant: no information
    mi_ref = 0.75 * math.log(1.5) - 0.25 * math.log(2.0)
    mi, h = mutual_information_matrix(z, z_hat, bins=2)
    np.testing.assert_allclose(mi, [[mi_ref, 0.0]], atol=1e-12)
    np.testing.assert_allclose(h, [math.log(2.0)], atol=1e-12)
    assert mig(z, z_hat, bins=2) == pytest.approx(mi_ref / math.log(2.0), abs=1e-12)
    # a single code: the second-largest information is 0
    assert mig(z, z_hat[:, :1], bins=2) == pytest.approx(mi_ref / math.log(2.0), abs=1e-12)


def test_binned_mi_matches_numpy_histogram2d_and_bins_match_histogram():
    rng = np.random.default_rng(1)
    z = _factors(n=800, k=2, seed=1)
    z_hat = np.c_[z[:, 0] + 0.3 * rng.normal(size=800), np.exp(z[:, 1])]
    mi, h = mutual_information_matrix(z, z_hat, bins=12)
    for k in range(2):
        for l in range(2):
            assert mi[k, l] == pytest.approx(
                _plugin_mi_histogram2d(z[:, k], z_hat[:, l], 12), abs=1e-10
            )
        counts = np.histogram(z[:, k], bins=12)[0] / 800
        assert h[k] == pytest.approx(-(counts[counts > 0] * np.log(counts[counts > 0])).sum())
    labels = discretize(z_hat, 12)
    for l in range(2):
        np.testing.assert_array_equal(
            np.bincount(labels[:, l], minlength=12), np.histogram(z_hat[:, l], bins=12)[0]
        )


@pytest.mark.parametrize("estimator", ["binned", "continuous"])
def test_identity_rescaled_and_sign_flipped_permuted_copies_score_near_one(estimator):
    z = _factors()
    for z_hat in (z, 3 * z + 1, -2 * z[:, [2, 0, 1]]):
        assert mig(z, z_hat, estimator=estimator) >= 0.9


@pytest.mark.parametrize("estimator", ["binned", "continuous"])
def test_noise_codes_score_near_zero(estimator):
    z = _factors(seed=2)
    noise = np.random.default_rng(3).normal(size=(N, 4))
    assert 0.0 <= mig(z, noise, estimator=estimator) <= 0.1


@pytest.mark.parametrize("estimator", ["binned", "continuous"])
def test_exactly_invariant_to_permuting_code_columns(estimator):
    rng = np.random.default_rng(4)
    z = _factors(n=800, seed=4)
    z_hat = z @ rng.normal(size=(3, 4)) + 0.5 * rng.normal(size=(800, 4))
    perm = [2, 0, 3, 1]
    a = mig(z, z_hat, estimator=estimator)
    b = mig(z, z_hat[:, perm], estimator=estimator)
    assert b == pytest.approx(a, abs=1e-12)
    mi_a, _ = mutual_information_matrix(z, z_hat, estimator=estimator)
    mi_b, _ = mutual_information_matrix(z, z_hat[:, perm], estimator=estimator)
    np.testing.assert_allclose(mi_b, mi_a[:, perm], atol=1e-12)


@pytest.mark.parametrize("estimator", ["binned", "continuous"])
def test_rotation_scores_clearly_lower(estimator):
    z = _factors(seed=5)
    rot = z @ special_ortho_group.rvs(3, random_state=5)
    assert mig(z, rot, estimator=estimator) < mig(z, z, estimator=estimator) - 0.5


def test_discrete_factors_use_their_classes_and_torch_input_works():
    rng = np.random.default_rng(6)
    shape = rng.integers(0, 3, size=N).astype(float)  # 3 classes, fewer than bins
    z = np.c_[shape, rng.uniform(size=N)]
    z_hat = np.c_[z[:, 1], shape * 0.1 + 0.01 * rng.normal(size=N)]
    _, h = mutual_information_matrix(z, z_hat)
    p = np.bincount(shape.astype(int)) / N
    assert h[0] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-12)
    assert mig(torch.as_tensor(z), torch.as_tensor(z_hat)) >= 0.9


def test_errors_name_the_argument():
    z = _factors(n=50)
    with pytest.raises(ConfigError, match="'estimator' must be"):
        mig(z, z, estimator="ksg")
    with pytest.raises(ConfigError, match="'bins' must be an integer >= 2"):
        mig(z, z, bins=1)
    with pytest.raises(ConfigError, match="constant factor"):
        mig(np.c_[z, np.zeros(50)], z)
    with pytest.raises(ConfigError, match="'z' must have shape"):
        mig(z[:, 0], z)
    with pytest.raises(ConfigError, match="'n_neighbors'"):
        mig(z, z, estimator="continuous", n_neighbors=0)
