"""Tests of unmix.papers.wang_isola.checks: every check passes (reduced sizes), and every helper formula
matches an independent reference (scipy quadrature, the shared vMF class, Monte Carlo with k·SE
bounds, finite differences, loop-based references)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from unmix.distributions.vmf import VonMisesFisher, vmf_mean_resultant_length
from unmix.metrics.align_uniform import uniform_loss, uniformity_term
from unmix.papers.wang_isola import checks as wi
from unmix.special import vmf_log_normalizer

# ---------------------------------------------------------------- the checks, at reduced size


def test_check_gaussian_potential():
    res = wi.check_gaussian_potential(n_pairs=5000)
    assert res.passed, res
    assert res.details["extended_precision_max_relative_error"] <= 1e-15


def test_check_theorem1_uniform_reduced():
    res = wi.check_theorem1_uniform(replicates=1000, log2_m=(4, 12))
    assert res.passed, res.details
    assert abs(res.measured + 1.0) < 0.05


def test_check_theorem1_vmf_reduced():
    res = wi.check_theorem1_vmf(replicates=600, log2_m=(4, 11))
    assert res.passed, res.details
    assert abs(res.measured + 1.0) < 0.05


def test_check_resubstitution_entropy_reduced():
    res = wi.check_resubstitution_entropy(n_points=150, dims=(3, 10), taus=(0.1, 1.0))
    assert res.passed, res
    assert res.measured <= 1e-10


def test_check_equispaced_beats_random_reduced():
    res = wi.check_equispaced_beats_random(draws=2000)
    assert res.passed, res.details
    assert res.details["max_error_vs_metrics_uniform_loss"] <= 1e-12


def test_check_gradient_descent_equispaced():
    res = wi.check_gradient_descent_equispaced()
    assert res.passed, res.details
    assert res.details["loss_monotone_decreasing"]


def test_check_jensen_reduced():
    res = wi.check_jensen(draws=20)
    assert res.passed, res.details


@pytest.mark.slow
@pytest.mark.parametrize(
    "check",
    [
        wi.check_gaussian_potential,
        wi.check_theorem1_uniform,
        wi.check_theorem1_vmf,
        wi.check_resubstitution_entropy,
        wi.check_equispaced_beats_random,
        wi.check_jensen,
    ],
)
def test_checks_full_size(check):
    assert check().passed


# ---------------------------------------------------------------- closed forms on S^2


@pytest.mark.parametrize("kappa", [0.05, 0.5, 2.0, 8.0, 50.0, 700.0])
def test_log_c3_matches_special(kappa):
    ref = float(vmf_log_normalizer(3, torch.tensor(kappa, dtype=torch.float64)))
    assert wi.log_c3(kappa) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("kappa", [0.05, 0.5, 2.0, 8.0, 50.0])
def test_mean_resultant_matches_shared(kappa):
    ref = float(vmf_mean_resultant_length(3, torch.tensor(kappa, dtype=torch.float64)))
    assert wi.mean_resultant_s2(kappa) == pytest.approx(ref, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("kappa", [0.3, 5.0, 40.0])
def test_vmf_dot_inverse_cdf_against_shared_sampler(kappa):
    """w from the inverse CDF and mu.x from Wood's sampler have the same law (two-sample KS)."""
    rng = np.random.default_rng(1)
    w = wi.vmf_dot_s2(kappa, rng.random(20_000))
    mu = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    x = VonMisesFisher(mu, kappa).sample((20_000,), generator=torch.Generator().manual_seed(2))
    ks = stats.ks_2samp(w, (x @ mu).numpy())
    assert ks.pvalue > 1e-3
    # and the exact CDF F(w) = (e^{k(w-1)} - e^{-2k}) / (1 - e^{-2k})
    cdf = lambda v: (np.exp(kappa * (v - 1)) - math.exp(-2 * kappa)) / (1 - math.exp(-2 * kappa))  # noqa: E731
    assert stats.kstest(w, cdf).pvalue > 1e-3
    assert np.all((w >= -1) & (w <= 1))


def test_log_sinh_large_and_small():
    a = np.array([1e-3, 0.5, 3.0, 30.0, 800.0])
    ref = np.array([math.log(math.sinh(v)) if v < 700 else v - math.log(2) for v in a])
    np.testing.assert_allclose(wi.log_sinh(a), ref, rtol=1e-12, atol=1e-12)


def test_uniform_terms_against_quadrature():
    tau, kp = 0.5, 5.0
    t = wi.theorem1_uniform_terms(tau, kp)
    m = integrate.quad(lambda s: 0.5 * math.exp(s / tau), -1, 1)[0]
    m2 = integrate.quad(lambda s: 0.5 * math.exp(2 * s / tau), -1, 1)[0]
    dens = lambda w: kp * math.exp(kp * (w - 1)) / (1 - math.exp(-2 * kp))  # noqa: E731
    p = integrate.quad(lambda w: dens(w) * math.exp(w / tau), -1, 1)[0]
    align = -integrate.quad(lambda w: dens(w) * w, -1, 1)[0] / tau
    assert t["uniformity"] == pytest.approx(math.log(m), abs=1e-12)
    assert t["align"] == pytest.approx(align, abs=1e-12)
    assert t["c1"] == pytest.approx(p / m - (m2 - m * m) / (2 * m * m), abs=1e-10)
    assert t["c1_nopos"] == pytest.approx(-(m2 - m * m) / (2 * m * m), abs=1e-10)


def test_vmf_log_m_against_monte_carlo():
    """m(x) = E exp(x.x^-/tau) for x^- ~ vMF(mu, k0) (closed form) vs a Monte-Carlo mean, 4 SE."""
    k0, tau = 8.0, 0.5
    mu = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    xneg = VonMisesFisher(mu, k0).sample((100_000,), generator=torch.Generator().manual_seed(3))
    for x in ([0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]):
        xt = torch.tensor(x, dtype=torch.float64)
        vals = torch.exp(xneg @ xt / tau).numpy()
        est, se = vals.mean(), vals.std() / math.sqrt(vals.size)
        pred = math.exp(float(wi._vmf_log_m(k0, x[2], 1 / tau)))
        assert abs(est - pred) <= 4 * se


def test_vmf_terms_against_monte_carlo():
    """Quadrature over t vs a Monte-Carlo average over sampled anchors (4 SE)."""
    tau, kp, k0 = 0.5, 5.0, 8.0
    t = wi.theorem1_vmf_terms(tau, kp, k0)
    rng = np.random.default_rng(4)
    tx = wi.vmf_dot_s2(k0, rng.random(400_000))
    lm = wi._vmf_log_m(k0, tx, 1 / tau)
    assert abs(lm.mean() - t["uniformity"]) <= 4 * lm.std() / math.sqrt(lm.size)
    v = np.exp(wi._vmf_log_m(k0, tx, 2 / tau) - 2 * lm) - 1
    assert abs(-0.5 * v.mean() - t["c1_nopos"]) <= 4 * 0.5 * v.std() / math.sqrt(v.size)


def test_vmf_block_negatives_have_the_vector_law():
    """The scalar formula s = t^- t + sqrt(1-t^-2) sqrt(1-t^2) cos(phi) gives the law of x.x^- for
    x, x^- ~ vMF(mu, k0) simulated as vectors with the shared sampler (KS on pooled draws)."""
    tau, k0 = 0.5, 3.0
    rng = np.random.default_rng(5)
    block = wi.vmf_block(tau, 5.0, k0)
    s_pos, s_neg, log_m = block(4000, 4, rng)
    scalar = (s_neg * tau)[:, 0]
    mu = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    gen = torch.Generator().manual_seed(6)
    x = VonMisesFisher(mu, k0).sample((4000,), generator=gen)
    xn = VonMisesFisher(mu, k0).sample((4000,), generator=gen)
    vector = (x * xn).sum(-1).numpy()
    assert stats.ks_2samp(scalar, vector).pvalue > 1e-3
    assert np.all(np.abs(s_neg * tau) <= 1 + 1e-12)
    assert s_pos.shape == (4000,) and log_m.shape == (4000,)


def test_uniform_block_negatives_are_uniform_dots():
    """For x uniform on S^2 and fixed u, u.x ~ U(-1, 1) (Archimedes): check with vectors."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((20_000, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    u = np.array([0.48, -0.6, 0.64])
    assert stats.kstest(x @ u, stats.uniform(-1, 2).cdf).pvalue > 1e-3
    _, s_neg, _ = wi.uniform_block(0.5, 5.0)(10, 2000, rng)
    assert stats.kstest(s_neg.ravel() * 0.5, stats.uniform(-1, 2).cdf).pvalue > 1e-3


def test_per_replicate_algebra_matches_explicit_infonce():
    """plain = InfoNCE loss (cross-entropy with the positive at index 0) - log M, for any log_m;
    D + delta = log((e^{s+} + sum e^{s_i}) / (M m))."""
    rng = np.random.default_rng(8)
    r, m = 50, 64
    s_pos, s_neg = rng.normal(size=r), rng.normal(size=(r, m))
    log_m = rng.normal(size=r)
    d, d_nopos, plain = wi.per_replicate(s_pos, s_neg, log_m)
    logits = torch.from_numpy(np.concatenate([s_pos[:, None], s_neg], axis=1))
    ce = torch.nn.functional.cross_entropy(
        logits, torch.zeros(r, dtype=torch.long), reduction="none"
    )
    np.testing.assert_allclose(plain, ce.numpy() - math.log(m), atol=1e-12)
    delta = np.exp(s_neg - log_m[:, None]).mean(1) - 1
    lse = np.log(np.exp(s_pos) + np.exp(s_neg).sum(1))
    np.testing.assert_allclose(d + delta, lse - math.log(m) - log_m, atol=1e-12)
    np.testing.assert_allclose(d_nopos + delta, np.log(np.exp(s_neg).mean(1)) - log_m, atol=1e-12)


def test_limit_terms_match_shared_metrics():
    """The closed-form uniformity term equals unmix.metrics.uniformity_term on a large sample."""
    tau = 0.5
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(400, 3, generator=gen, dtype=torch.float64)
    x = x / x.norm(dim=-1, keepdim=True)
    neg = torch.randn(400, 3000, 3, generator=gen, dtype=torch.float64)
    neg = neg / neg.norm(dim=-1, keepdim=True)
    est = float(uniformity_term(x, tau=tau, negatives=neg))
    # E[log mean] = log m - Var/(2 M m^2) + ...; the bias c1_nopos / M is tiny here
    pred = wi.theorem1_uniform_terms(tau, 5.0)
    assert est == pytest.approx(pred["uniformity"] + pred["c1_nopos"] / 3000, abs=3e-3)


def test_vmf_normaliser_quadrature_detects_an_error():
    assert wi.vmf_normaliser_quadrature_error(3, 2.0) <= 1e-12
    assert wi.vmf_normaliser_quadrature_error(20, 50.0) <= 1e-10


# ---------------------------------------------------------------- finite configurations


def test_uniform_loss_angles_matches_metric_and_closed_form():
    rng = np.random.default_rng(10)
    for _ in range(5):
        th = rng.uniform(0, 2 * np.pi, 7)
        u = torch.from_numpy(np.stack([np.cos(th), np.sin(th)], 1))
        assert wi.uniform_loss_angles(th, 2.0) == pytest.approx(
            float(uniform_loss(u, 2.0)), abs=1e-12
        )
    for n in (3, 8, 13):
        th = 2 * np.pi * np.arange(n) / n
        assert wi.uniform_loss_angles(th, 1.5) == pytest.approx(
            wi.equispaced_uniform_loss(n, 1.5), abs=1e-12
        )


def test_uniform_loss_gradient_finite_differences():
    rng = np.random.default_rng(11)
    th = rng.uniform(0, 2 * np.pi, 6)
    val, grad = wi._uniform_loss_grad(th, 2.0)
    assert val == pytest.approx(float(wi.uniform_loss_angles(th, 2.0)), abs=1e-12)
    h = 1e-6
    for i in range(th.size):
        e = np.zeros_like(th)
        e[i] = h
        fd = (wi.uniform_loss_angles(th + e, 2.0) - wi.uniform_loss_angles(th - e, 2.0)) / (2 * h)
        assert grad[i] == pytest.approx(fd, abs=1e-8)


def test_jensen_gap_against_loop_reference():
    rng = np.random.default_rng(12)
    pts = rng.standard_normal((9, 3))
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    t = 1.3
    inner = [
        math.log(sum(math.exp(-t * float(np.sum((a - b) ** 2))) for b in pts) / len(pts))
        for a in pts
    ]
    ref = math.log(sum(math.exp(v) for v in inner) / len(inner)) - sum(inner) / len(inner)
    assert wi.jensen_gap(pts, t) == pytest.approx(ref, abs=1e-12)
    assert ref > 0


def test_icosahedron_is_vertex_transitive_unit():
    ico = wi._icosahedron()
    assert ico.shape == (12, 3)
    np.testing.assert_allclose(np.linalg.norm(ico, axis=1), 1.0, atol=1e-15)
    g = ico @ ico.T
    rows = np.sort(g, axis=1)
    np.testing.assert_allclose(rows, rows[0][None, :].repeat(12, 0), atol=1e-12)
