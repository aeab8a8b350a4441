"""Percentile bootstrap: determinism, a hand-rolled reference, coverage of a known correlation."""

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.metrics import bootstrap_ci, mcc, mcc_ci, r2_affine, r2_ci


def _pairs(n, rho, seed):
    """n samples of a bivariate Gaussian with correlation rho, as (z, z_hat) columns."""
    x = np.random.default_rng(seed).multivariate_normal([0.0, 0.0], [[1, rho], [rho, 1]], size=n)
    return x[:, :1], x[:, 1:]


def _mean_diff(a, b):
    return float(np.mean(a[:, 0] - b[:, 0]))


def test_matches_a_hand_rolled_percentile_bootstrap():
    z, z_hat = _pairs(200, 0.5, 0)
    est, low, high = bootstrap_ci(_mean_diff, z, z_hat, ci=0.9, n_boot=50, seed=7)
    rng = np.random.default_rng(7)
    reps = []
    for _ in range(50):
        idx = rng.integers(0, 200, size=200)
        reps.append(np.mean(z[idx, 0] - z_hat[idx, 0]))
    assert est == pytest.approx(_mean_diff(z, z_hat), abs=1e-15)
    assert low == pytest.approx(np.quantile(reps, 0.05), abs=1e-15)
    assert high == pytest.approx(np.quantile(reps, 0.95), abs=1e-15)


def test_deterministic_given_the_seed_and_contains_the_estimate():
    z, z_hat = _pairs(300, 0.7, 1)
    a = mcc_ci(z, z_hat, n_boot=100, seed=3)
    assert a == mcc_ci(torch.as_tensor(z), torch.as_tensor(z_hat), n_boot=100, seed=3)
    assert a != mcc_ci(z, z_hat, n_boot=100, seed=4)
    assert set(a) == {"mcc", "mcc_low", "mcc_high"}
    assert a["mcc_low"] < a["mcc"] < a["mcc_high"]
    assert a["mcc"] == pytest.approx(mcc(z, z_hat).mcc)
    r = r2_ci(z, z_hat, n_boot=100, seed=3)
    assert set(r) == {"r2", "r2_low", "r2_high"}
    assert r["r2_low"] < r["r2"] < r["r2_high"]
    assert r["r2"] == pytest.approx(r2_affine(z, z_hat, in_sample=True).r2)
    # a wider level gives a wider interval from the same resamples
    est, lo90, hi90 = bootstrap_ci(lambda a, b: mcc(a, b).mcc, z, z_hat, ci=0.9, n_boot=100, seed=3)
    assert est == a["mcc"] and a["mcc_low"] <= lo90 and hi90 <= a["mcc_high"]


def _coverage(n_rep, n_boot, n=300, rho=0.6, with_r2=True):
    hits_mcc = hits_r2 = 0
    for rep in range(n_rep):
        z, z_hat = _pairs(n, rho, 1000 + rep)
        m = mcc_ci(z, z_hat, n_boot=n_boot, seed=rep)  # 1-D MCC = |Pearson correlation|
        hits_mcc += m["mcc_low"] <= abs(rho) <= m["mcc_high"]
        if with_r2:
            r = r2_ci(z, z_hat, n_boot=n_boot, seed=rep)  # 1-D in-sample R² = correlation²
            hits_r2 += r["r2_low"] <= rho**2 <= r["r2_high"]
    return hits_mcc / n_rep, hits_r2 / n_rep


def test_coverage_of_a_known_correlation_fast():
    # MCC only: r2_ci refits sklearn's LinearRegression per resample (~2 ms), see the slow test
    cov_mcc, _ = _coverage(n_rep=40, n_boot=100, with_r2=False)
    assert cov_mcc >= 0.8, cov_mcc


@pytest.mark.slow
def test_coverage_of_a_known_correlation_200_replicates():
    # ~60 s on one thread, mostly r2_ci
    cov_mcc, cov_r2 = _coverage(n_rep=200, n_boot=200)
    assert cov_mcc >= 0.9 and cov_r2 >= 0.9, (cov_mcc, cov_r2)


def test_errors_name_the_argument():
    z, z_hat = _pairs(50, 0.5, 2)
    with pytest.raises(ConfigError, match="'ci' must lie strictly between 0 and 1"):
        mcc_ci(z, z_hat, ci=95)
    with pytest.raises(ConfigError, match="'n_boot' must be an integer >= 2"):
        r2_ci(z, z_hat, n_boot=1)
    with pytest.raises(ConfigError, match="'metric_fn' must be callable"):
        bootstrap_ci(0.5, z, z_hat)
    with pytest.raises(ConfigError, match="'metric_fn' returned nan"):
        bootstrap_ci(lambda a, b: float("nan"), z, z_hat)
    with pytest.raises(ConfigError, match="same samples"):
        mcc_ci(z, z_hat[:10])
