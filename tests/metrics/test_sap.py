"""SAP: the score matrix against single-code least squares, identity/noise/rotation, errors."""

import numpy as np
import pytest
import torch
from scipy.stats import special_ortho_group

from unmix.errors import ConfigError
from unmix.metrics import sap, sap_score_matrix

N = 2000


def _factors(n=N, k=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, k))


def _single_code_r2(y, x):
    """Independent reference: R² of a least-squares line y ≈ a x + b (numpy lstsq)."""
    design = np.c_[x, np.ones_like(x)]
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    res = y - design @ coef
    return 1.0 - (res @ res) / ((y - y.mean()) @ (y - y.mean()))


def test_score_matrix_is_the_r2_of_single_code_linear_fits():
    rng = np.random.default_rng(1)
    z = _factors(n=300, k=2, seed=1)
    z_hat = np.c_[z @ rng.normal(size=(2, 3)) + rng.normal(size=(300, 3)), np.exp(z[:, 0])]
    s = sap_score_matrix(z, z_hat)
    assert s.shape == (2, 4)
    for k in range(2):
        for l in range(4):
            assert s[k, l] == pytest.approx(_single_code_r2(z[:, k], z_hat[:, l]), abs=1e-12)
    top = np.sort(s, axis=1)[:, ::-1]
    assert sap(z, z_hat) == pytest.approx(np.mean(top[:, 0] - top[:, 1]), abs=1e-15)


def test_hand_computed_small_example():
    # factor 0 = code 0 exactly; code 1 is uncorrelated with it (symmetric design)
    z = np.array([[-1.0], [0.0], [1.0], [0.0]])
    z_hat = np.array([[-1.0, 1.0], [0.0, -1.0], [1.0, 1.0], [0.0, -1.0]])
    assert sap_score_matrix(z, z_hat) == pytest.approx(np.array([[1.0, 0.0]]), abs=1e-12)
    assert sap(z, z_hat) == pytest.approx(1.0, abs=1e-12)
    assert sap(z, z_hat[:, :1]) == pytest.approx(1.0, abs=1e-12)  # one code: second gap term 0


def test_identity_and_monotone_rescalings_score_near_one():
    z = _factors()
    for z_hat in (z, 3 * z + 1, np.tanh(z), -z[:, [1, 2, 0]]):
        assert sap(z, torch.as_tensor(z_hat)) >= 0.9


def test_noise_codes_score_near_zero():
    z = _factors(seed=2)
    assert 0.0 <= sap(z, np.random.default_rng(3).normal(size=(N, 4))) <= 0.1


def test_invariant_to_permuting_code_columns():
    rng = np.random.default_rng(4)
    z = _factors(seed=4)
    z_hat = z @ rng.normal(size=(3, 5)) + rng.normal(size=(N, 5))
    perm = [4, 2, 0, 1, 3]
    # equal up to the rounding of the BLAS product (column order changes its blocking)
    assert sap(z, z_hat[:, perm]) == pytest.approx(sap(z, z_hat), abs=1e-12)
    np.testing.assert_allclose(
        sap_score_matrix(z, z_hat[:, perm]), sap_score_matrix(z, z_hat)[:, perm], atol=1e-12
    )


def test_rotation_scores_clearly_lower():
    z = _factors(seed=5)
    rot = z @ special_ortho_group.rvs(3, random_state=5)
    assert sap(z, rot) < sap(z, z) - 0.3
    # a maximally mixing rotation (normalised Hadamard): every code has corr² 1/4 with every
    # factor, so all gaps vanish up to sampling error
    z4 = _factors(k=4, seed=6)
    hadamard = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]) / 2.0
    assert sap(z4, z4 @ hadamard) <= 0.1


def test_constant_code_scores_zero_and_errors():
    z = _factors(n=100)
    s = sap_score_matrix(z, np.c_[z, np.ones(100)])
    np.testing.assert_array_equal(s[:, 3], 0.0)
    with pytest.raises(ConfigError, match="constant factor"):
        sap(np.c_[z, np.ones(100)], z)
    with pytest.raises(ConfigError, match="same samples"):
        sap(z, z[:10])
    with pytest.raises(ConfigError, match="'z_hat' contains NaN"):
        sap(z, np.full((100, 2), np.inf))
