"""DCI: hand-computed importance matrices, entropy against scipy, identity/noise/rotation, errors."""

import math

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.stats import special_ortho_group

from unmix.errors import ConfigError
from unmix.metrics import DCIImportance, dci, dci_from_importance, dci_importance
from unmix.metrics._common import entropy

N = 1500


def _factors(n=N, k=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, k))


def test_entropy_helper_matches_scipy():
    rng = np.random.default_rng(0)
    for base in (None, 2, 3, 7):
        for _ in range(5):
            p = rng.uniform(size=6) * (rng.uniform(size=6) > 0.3)  # some exact zeros
            p[0] += 0.1
            assert entropy(p, base=base) == pytest.approx(stats.entropy(p, base=base), abs=1e-12)
    m = rng.uniform(size=(4, 5))
    np.testing.assert_allclose(entropy(m, base=5, axis=1), stats.entropy(m, base=5, axis=1))
    np.testing.assert_allclose(entropy(m, base=4, axis=0), stats.entropy(m, base=4, axis=0))
    # all-zero weights: the uniform distribution by convention
    assert entropy(np.zeros(3), base=3) == pytest.approx(1.0)


def test_disentanglement_and_completeness_of_a_hand_computed_2x2_matrix():
    # codes × factors; code 0 only factor 0, code 1 splits evenly
    r = np.array([[2.0, 0.0], [1.0, 1.0]])
    # P rows: (1, 0) -> D_0 = 1; (1/2, 1/2) -> D_1 = 0; rho = (2/4, 2/4) -> D = 0.5
    # P~ columns: factor 0 (2/3, 1/3): C = 1 - H_2(2/3, 1/3); factor 1 (0, 1): C = 1
    h = -(2 / 3) * math.log2(2 / 3) - (1 / 3) * math.log2(1 / 3)
    out = dci_from_importance(r)
    assert out["dci_disentanglement"] == pytest.approx(0.5, abs=1e-12)
    assert out["dci_completeness"] == pytest.approx(((1 - h) + 1.0) / 2, abs=1e-12)


def test_hand_computed_3x3_matrix_and_degenerate_conventions():
    r = np.array([[0.6, 0.0, 0.0], [0.1, 0.1, 0.1], [0.0, 0.3, 0.3]])
    # D_i: 1, 0, 1 - log_3 2; rho = (0.6, 0.3, 0.6)/1.5
    d = (0.6 * 1 + 0.3 * 0 + 0.6 * (1 - math.log(2) / math.log(3))) / 1.5
    # C_j: factor 0 (6/7, 1/7, 0), factor 1 and 2 (0, 1/4, 3/4), base 3
    h0 = -(6 / 7) * math.log(6 / 7) - (1 / 7) * math.log(1 / 7)
    h1 = -(1 / 4) * math.log(1 / 4) - (3 / 4) * math.log(3 / 4)
    c = ((1 - h0 / math.log(3)) + 2 * (1 - h1 / math.log(3))) / 3
    out = dci_from_importance(r)
    assert out["dci_disentanglement"] == pytest.approx(d, abs=1e-12)
    assert out["dci_completeness"] == pytest.approx(c, abs=1e-12)
    # a permutation of the rows (codes) changes nothing
    out_p = dci_from_importance(r[[2, 0, 1]])
    assert out_p == pytest.approx(out, abs=1e-15)
    # zero matrix: no information -> both 0; zero factor column -> C_j = 0; 1 factor -> D = 1
    assert dci_from_importance(np.zeros((3, 2))) == {
        "dci_disentanglement": 0.0,
        "dci_completeness": 0.0,
    }
    one_factor_used = np.array([[1.0, 0.0], [0.0, 0.0]])  # factor 1: C = 0; factor 0: C = 1
    assert dci_from_importance(one_factor_used)["dci_completeness"] == pytest.approx(0.5)
    assert dci_from_importance(np.array([[1.0], [3.0]]))["dci_disentanglement"] == 1.0


@pytest.mark.parametrize("importance", ["lasso", "gbt"])
def test_identity_and_rescaled_identity_score_near_one(importance):
    z = _factors()
    for z_hat in (z, 3 * z + 1, np.tanh(2 * z)):
        out = dci(z, z_hat, importance=importance)
        assert set(out) == {"dci_disentanglement", "dci_completeness", "dci_informativeness"}
        assert out["dci_disentanglement"] >= 0.9, out
        assert out["dci_completeness"] >= 0.9, out
        assert out["dci_informativeness"] >= 0.9, out


def test_gbt_importances_are_unchanged_by_a_monotone_map_of_the_codes():
    z = _factors(seed=1)
    a = dci_importance(z, z, importance="gbt").importance
    b = dci_importance(z, np.tanh(2 * z) * 5 - 1, importance="gbt").importance
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_noise_codes_score_low_with_gbt():
    z = _factors(seed=2)
    noise = np.random.default_rng(3).normal(size=(N, 4))
    out = dci(z, noise, importance="gbt")
    assert out["dci_disentanglement"] <= 0.1, out
    assert out["dci_completeness"] <= 0.1, out
    assert out["dci_informativeness"] <= 0.1, out


def test_noise_codes_with_lasso_are_uninformative():
    # The lasso's surviving coefficients on noise are sparse by chance, so D and C are not ≈ 0
    # (documented); informativeness says that the codes carry nothing.
    z = _factors(seed=2)
    noise = np.random.default_rng(3).normal(size=(N, 4))
    assert dci(z, noise, importance="lasso")["dci_informativeness"] <= 0.05


@pytest.mark.parametrize("importance, atol", [("lasso", 1e-8), ("gbt", 1e-3)])
def test_invariant_to_permuting_code_columns(importance, atol):
    rng = np.random.default_rng(4)
    z = _factors(seed=4)
    z_hat = z @ rng.normal(size=(3, 5)) + 0.3 * rng.normal(size=(N, 5))
    perm = np.array([3, 0, 4, 1, 2])
    a = dci(z, z_hat, importance=importance)
    b = dci(z, z_hat[:, perm], importance=importance)
    assert b == pytest.approx(a, abs=atol)
    ia = dci_importance(z, z_hat, importance=importance).importance
    ib = dci_importance(z, z_hat[:, perm], importance=importance).importance
    np.testing.assert_allclose(ib, ia[perm], atol=atol)


@pytest.mark.parametrize("importance", ["lasso", "gbt"])
def test_rotation_scores_clearly_lower_disentanglement(importance):
    z = _factors(seed=5)
    rot = z @ special_ortho_group.rvs(3, random_state=5)
    ident = dci(z, z, importance=importance)
    mixed = dci(z, rot, importance=importance)
    assert mixed["dci_disentanglement"] < ident["dci_disentanglement"] - 0.4
    assert mixed["dci_completeness"] < ident["dci_completeness"] - 0.4


def test_importance_result_torch_input_seed_and_lasso_cv():
    z = _factors(n=600, seed=6)
    res = dci_importance(torch.as_tensor(z), torch.as_tensor(z[:, ::-1].copy()), seed=1)
    assert isinstance(res, DCIImportance)
    assert res.importance.shape == (3, 3) and (res.importance >= 0).all()
    assert res.n_fit + res.n_score == 600 and res.method == "gbt"
    again = dci_importance(z, z[:, ::-1], seed=1)
    np.testing.assert_array_equal(res.importance, again.importance)
    cv = dci(z, z, importance="lasso", lasso_alpha=None)
    assert cv["dci_disentanglement"] >= 0.9


def test_errors_name_the_argument():
    z = _factors(n=100)
    with pytest.raises(ConfigError, match="'importance' must be"):
        dci(z, z, importance="forest")
    with pytest.raises(ConfigError, match="same samples"):
        dci(z, z[:50])
    with pytest.raises(ConfigError, match="'z_hat' contains NaN"):
        dci(z, np.full_like(z, np.nan))
    with pytest.raises(ConfigError, match="constant factor"):
        dci(np.c_[z, np.ones(100)], z)
    with pytest.raises(ConfigError, match="'test_fraction'"):
        dci(z, z, test_fraction=1.5)
    with pytest.raises(ConfigError, match="'lasso_alpha'"):
        dci(z, z, importance="lasso", lasso_alpha=-1.0)
    with pytest.raises(ConfigError, match="'importance' must be a non-empty"):
        dci_from_importance(np.ones(3))
    with pytest.raises(ConfigError, match="non-negative"):
        dci_from_importance(-np.ones((2, 2)))
