"""Tests of unmix.papers.zimmermann.checks: both checks pass (reduced sizes); the twist is
area-preserving but not an isometry; the closed forms match the shared vMF class / Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.distributions.vmf import VonMisesFisher
from unmix.papers.zimmermann import checks as zm

SMALL = {"replicates": 500, "log2_m": (4, 10)}


def test_check_limit_is_vmf_entropy_reduced():
    res = zm.check_limit_is_vmf_entropy(**SMALL)
    assert res.passed, res.details
    assert abs(res.details["limit_plus_log_area_minus_entropy"]) <= 1e-12


def test_check_non_isometry_larger_reduced():
    res = zm.check_non_isometry_larger(**SMALL, pairs=200_000)
    assert res.passed, res.details
    assert res.measured > 0
    for row in res.details["maps"].values():
        assert row["limit_excess"] > 0


@pytest.mark.slow
def test_zimmermann_checks_full_size():
    assert zm.check_limit_is_vmf_entropy().passed
    assert zm.check_non_isometry_larger().passed


@pytest.mark.parametrize("kappa", [0.5, 4.0, 30.0])
def test_vmf_entropy_matches_shared_class(kappa):
    ref = float(VonMisesFisher(torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64), kappa).entropy())
    assert zm.vmf_entropy_s2(kappa) == pytest.approx(ref, abs=1e-12)


def test_wrong_radius_excess_is_kl_by_monte_carlo():
    """-k' A(k) - log C(k') - H(k) = KL(vMF_k || vMF_k'), estimated as E_p[log p - log q] (4 SE)."""
    k, kp = 4.0, 8.0
    mu = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    p, q = VonMisesFisher(mu, k), VonMisesFisher(mu, kp)
    x = p.sample((200_000,), generator=torch.Generator().manual_seed(0))
    lr = (p.log_prob(x) - q.log_prob(x)).numpy()
    excess = zm.wrong_radius_limit(k, kp) - zm.vmf_entropy_s2(k)
    assert abs(lr.mean() - excess) <= 4 * lr.std() / math.sqrt(lr.size)
    assert excess > 0


def test_twist_preserves_uniform_measure_but_not_distances():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((20_000, 3))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    t = zm.twist(z, math.pi / 2)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-14)
    # uniform on S^2 <=> height ~ U(-1, 1) and longitude ~ U(-pi, pi) independent
    assert stats.kstest(t[:, 2], stats.uniform(-1, 2).cdf).pvalue > 1e-3
    lon = np.arctan2(t[:, 1], t[:, 0])
    assert stats.kstest(lon, stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 1e-3
    # ... but dot products change: not an isometry
    d0 = np.sum(z[:-1] * z[1:], axis=1)
    d1 = np.sum(t[:-1] * t[1:], axis=1)
    assert np.max(np.abs(d0 - d1)) > 0.1
    # beta = 0 is the identity
    np.testing.assert_allclose(zm.twist(z, 0.0), z, atol=0)


def test_twist_excess_is_positive_and_reproducible():
    a = zm.twist_excess(4.0, math.pi / 2, 50_000, seed=3)
    b = zm.twist_excess(4.0, math.pi / 2, 50_000, seed=3)
    assert a == b
    assert a[0] > 5 * a[1]
