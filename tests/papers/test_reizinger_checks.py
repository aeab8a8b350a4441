"""Tests of unmix.papers.reizinger.checks: the three checks pass, and the ELBO, evidence, variance formula and
gap expansion match independent references (Monte Carlo, scipy, the exact posterior)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.papers.reizinger import checks as ima


def test_check_posterior_variances():
    res = ima.check_posterior_variances()
    assert res.passed, res.details
    assert res.details["leading_term_slope"] == pytest.approx(-1.0, abs=1e-3)


def test_check_elbo_gap_rate():
    res = ima.check_elbo_gap_rate()
    assert res.passed, res.details
    assert res.measured == pytest.approx(-1.0, abs=1e-3)
    assert res.details["c_ima"] > 0.05


def test_check_gap_vanishes_orthogonal():
    res = ima.check_gap_vanishes_orthogonal()
    assert res.passed, res.details


def _problem():
    a, v, x = ima._problem(0, False)
    return a, v, x, *(torch.from_numpy(t) for t in (a, v, x))


def test_elbo_closed_form_against_monte_carlo():
    """E_q[log p(x|z) + log p0(z) - log q(z)] by sampling z ~ q, within 4 SE."""
    a, v, x, at, vt, xt = _problem()
    gamma2 = 10.0
    mu = torch.tensor([0.2, -0.5, 0.9], dtype=torch.float64)
    log_s2 = torch.tensor([-1.0, -2.0, -0.5], dtype=torch.float64)
    closed = float(ima.elbo(xt, at, vt, gamma2, mu, log_s2))
    q = torch.distributions.Normal(mu, torch.exp(0.5 * log_s2))
    z = q.sample((200_000,))
    lik = torch.distributions.Normal(z @ at.T, 1 / math.sqrt(gamma2)).log_prob(xt).sum(-1)
    prior = torch.distributions.Normal(0.0, vt.sqrt()).log_prob(z).sum(-1)
    w = (lik + prior - q.log_prob(z).sum(-1)).numpy()
    assert abs(w.mean() - closed) <= 4 * w.std() / math.sqrt(w.size)


def test_log_evidence_matches_scipy():
    a, v, x, *_ = _problem()
    for g2 in (10.0, 1e4):
        cov = a @ np.diag(v) @ a.T + np.eye(3) / g2
        ref = stats.multivariate_normal(np.zeros(3), cov).logpdf(x)
        assert ima.log_evidence(x, a, v, g2) == pytest.approx(ref, abs=1e-9)


def test_newton_optimum_is_exact_posterior_projection():
    """Newton's optimum = exact posterior mean and 1/diag(precision) (mean-field Gaussian)."""
    a, v, x, at, vt, xt = _problem()
    for g2 in (10.0, 1e3, 1e6):
        mu, s2, _, _ = ima.optimal_posterior(xt, at, vt, g2)
        prec = np.diag(1 / v) + g2 * a.T @ a
        np.testing.assert_allclose(mu.numpy(), np.linalg.solve(prec, g2 * a.T @ x), rtol=1e-10)
        np.testing.assert_allclose(s2.numpy(), 1 / np.diag(prec), rtol=1e-12)
        np.testing.assert_allclose(ima.theorem_variances(a, v, g2), 1 / np.diag(prec), rtol=1e-14)


def test_gap_coefficients_from_the_closed_form():
    """gamma^2 * gap -> C1 and (gap - C1/gamma^2) gamma^4 -> C2 (differences at two gammas)."""
    a, v, *_ = _problem()
    c1, c2 = ima.gap_coefficients(a, v)
    g2 = 1e4
    gap = ima.gap_closed_form(a, v, g2)
    assert g2 * gap == pytest.approx(c1, rel=1e-3)
    assert (gap - c1 / g2) * g2**2 == pytest.approx(c2, rel=5e-2)


def test_c_ima_metric_matches_gram_form():
    a, *_ = _problem()
    g = a.T @ a
    ref = 0.5 * (np.sum(np.log(np.diag(g))) - np.linalg.slogdet(g)[1])
    assert ima._sweep(0, False, ima.GAMMA2)["c_ima"] == pytest.approx(ref, abs=1e-13)


def test_orthogonal_problem_has_orthogonal_columns():
    a, *_ = ima._problem(0, True)
    g = a.T @ a
    np.testing.assert_allclose(g - np.diag(np.diag(g)), 0.0, atol=1e-14)
    assert ima.gap_coefficients(a, np.asarray(ima.PRIOR_VAR))[0] == pytest.approx(0.0, abs=1e-13)
