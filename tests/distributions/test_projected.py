"""Projected Normal / Laplace / GeneralizedNormal noise on the sphere.

References: mpmath quadrature of the radial integral, the exact recursion J_n = cJ_{n-1} +
(n-1)J_{n-2} for c >= 0, numerical integration of the density over S^1 and S^2, a KS test of the
sampled polar angle against the CDF implied by log_prob, and independent scipy-based samplers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.distributions.projected import (
    ProjectedGeneralizedNormal,
    ProjectedLaplace,
    ProjectedNormal,
    log_radial_integral,
)
from unmix.errors import ConfigError
from unmix.special import log_sphere_area

mpmath = pytest.importorskip("mpmath")

F64 = torch.float64
P_MIN = 1e-3


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def mp_log_j(n: int, c: float) -> float:
    """log ∫_0^∞ s^n exp(-(s-c)²/2) ds by mpmath quadrature split around the peak."""
    with mpmath.workdps(30):
        c = mpmath.mpf(c)
        s_star = (c + mpmath.sqrt(c * c + 4 * n)) / 2
        h_star = n * mpmath.log(s_star) - (s_star - c) ** 2 / 2
        w = 1 / mpmath.sqrt(1 + n / s_star**2)
        pts = {s_star + k * w for k in (-32, -16, -8, -4, -2, -1, 0, 1, 2, 4, 8, 16, 32)}
        pts = [mpmath.mpf(0)] + sorted(p for p in pts if p > 0) + [mpmath.inf]
        val = mpmath.quad(
            lambda s: mpmath.exp(n * mpmath.log(s) - (s - c) ** 2 / 2 - h_star) if s > 0 else 0,
            pts,
        )
        return float(h_star + mpmath.log(val))


@pytest.mark.parametrize("n", [1, 2, 9, 99])
def test_log_radial_integral_against_mpmath(n):
    cs = np.array([-300.0, -20.0, -1.0, 0.0, 0.5, 3.0, 40.0, 1e4])
    got = log_radial_integral(n, cs)
    for c, g in zip(cs, got, strict=True):
        want = mp_log_j(n, float(c))
        assert abs(g - want) <= 1e-12 * max(1.0, abs(want)), (n, c, g, want)


def test_log_radial_integral_against_recursion():
    """J_0 = √(2π)Φ(c), J_1 = cJ_0 + e^{-c²/2}, J_k = cJ_{k-1} + (k-1)J_{k-2}: stable for c >= 0."""
    for c in (0.0, 0.7, 2.5, 6.0):
        j = [math.sqrt(2 * math.pi) * stats.norm.cdf(c), 0.0]
        j[1] = c * j[0] + math.exp(-c * c / 2)
        for k in range(2, 12):
            j.append(c * j[-1] + (k - 1) * j[-2])
        for n in (1, 2, 5, 11):
            assert abs(log_radial_integral(n, np.array(c)) - math.log(j[n])) < 1e-13


def test_samples_lie_on_the_sphere_with_shapes_and_determinism():
    loc = torch.nn.functional.normalize(torch.randn(4, 5, generator=gen(0), dtype=F64), dim=-1)
    for dist in (
        ProjectedNormal(loc, 0.3, radius=2.5),
        ProjectedLaplace(loc, 0.3, radius=2.5),
        ProjectedGeneralizedNormal(loc, 0.3, 3.0, radius=2.5),
    ):
        assert dist.batch_shape == (4,) and dist.event_shape == (5,)
        x = dist.sample((100,), generator=gen(1))
        assert x.shape == (100, 4, 5)
        torch.testing.assert_close(x.norm(dim=-1), torch.full((100, 4), 2.5, dtype=F64))
        assert torch.equal(x, dist.sample((100,), generator=gen(1)))
        assert not torch.equal(x, dist.sample((100,), generator=gen(2)))


def test_projected_normal_density_integrates_to_one_on_circle():
    """Trapezoid rule in the angle (exponentially accurate for smooth periodic integrands)."""
    theta = torch.linspace(0, 2 * math.pi, 4001, dtype=F64)[:-1]
    x = torch.stack([theta.cos(), theta.sin()], dim=-1)
    for loc, scale in ((torch.tensor([1.0, 0.0]), 0.05), (torch.tensor([0.3, -2.0]), 1.0)):
        for scale_ in (scale, torch.tensor([0.5, 2.0]) * scale):  # isotropic and per-dimension
            dist = ProjectedNormal(loc.double(), scale_, radius=1.0)
            total = dist.log_prob(x).exp().sum().item() * 2 * math.pi / len(theta)
            assert abs(total - 1.0) < 1e-10


def test_projected_normal_density_integrates_to_one_on_sphere_s2():
    """Gauss–Legendre in cos θ (120 nodes) × trapezoid in φ (120 nodes) on S² of radius 2."""
    r = 2.0
    ct, wt = np.polynomial.legendre.leggauss(120)
    phi = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    st = np.sqrt(1 - ct**2)
    pts = np.stack(
        [
            np.outer(ct, np.ones_like(phi)),
            np.outer(st, np.cos(phi)),
            np.outer(st, np.sin(phi)),
        ],
        axis=-1,
    )
    weights = np.outer(wt, np.full_like(phi, 2 * np.pi / len(phi))) * r**2
    x = torch.from_numpy(r * pts)
    for loc, scale in (([1.0, 0.0, 0.0], 0.4), ([0.2, 0.5, -0.3], [0.3, 0.6, 1.2])):
        dist = ProjectedNormal(torch.tensor(loc, dtype=F64), scale, radius=r)
        total = (np.exp(dist.log_prob(x).numpy()) * weights).sum()
        assert abs(total - 1.0) < 1e-9


@pytest.mark.parametrize("dim,scale", [(3, 0.3), (10, 0.5), (10, 0.05)])
def test_projected_normal_samples_match_log_prob(dim, scale):
    """KS test of the polar angle θ = arccos(μᵀx) against the CDF implied by log_prob:
    p(θ) = p(u(θ)) |S^{d-2}| sin^{d-2} θ (isotropic noise: p depends on u through θ only),
    integrated by the trapezoid rule on 40,001 points."""
    mu = torch.zeros(dim, dtype=F64)
    mu[0] = 1.0
    dist = ProjectedNormal(mu, scale)
    x = dist.sample((3000,), generator=gen(dim))
    theta_samples = torch.arccos(x[:, 0].clamp(-1, 1)).numpy()
    theta = np.linspace(0.0, np.pi, 40001)
    u = torch.zeros(len(theta), dim, dtype=F64)
    u[:, 0], u[:, 1] = torch.from_numpy(np.cos(theta)), torch.from_numpy(np.sin(theta))
    with np.errstate(divide="ignore"):
        log_pdf = (
            dist.log_prob(u).numpy() + log_sphere_area(dim - 1) + (dim - 2) * np.log(np.sin(theta))
        )
    pdf = np.exp(log_pdf)
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (pdf[1:] + pdf[:-1]) * np.diff(theta))])
    assert abs(cum[-1] - 1.0) < 1e-5
    assert stats.kstest(theta_samples, lambda t: np.interp(t, theta, cum)).pvalue > P_MIN


def test_zero_mean_is_uniform_and_radius_scaling():
    d = 4
    x = torch.nn.functional.normalize(torch.randn(6, d, generator=gen(3), dtype=F64), dim=-1)
    uni = ProjectedNormal(torch.zeros(d, dtype=F64), 0.7)
    torch.testing.assert_close(uni.log_prob(x), torch.full((6,), -log_sphere_area(d), dtype=F64))
    mu = torch.tensor([0.5, -0.2, 1.0, 0.3], dtype=F64)
    one, big = ProjectedNormal(mu, 0.4), ProjectedNormal(mu, 0.4, radius=3.0)
    torch.testing.assert_close(big.log_prob(3.0 * x), one.log_prob(x) - (d - 1) * math.log(3.0))


def test_off_sphere_points_have_minus_inf_log_prob():
    dist = ProjectedNormal(torch.tensor([1.0, 0.0, 0.0], dtype=F64), 0.2)
    lp = dist.log_prob(torch.tensor([[1.0, 0.0, 0.0], [1.1, 0.0, 0.0]], dtype=F64))
    assert torch.isfinite(lp[0]) and torch.isneginf(lp[1])


@pytest.mark.parametrize("kind", ["laplace", "gennorm"])
def test_projected_laplace_gennorm_against_independent_sampler(kind):
    """Two-sample KS on the first and second coordinates vs normalised scipy noise."""
    mu = np.array([1.0, 0.0, 0.0, 0.0])
    scale, n = 0.4, 3000
    if kind == "laplace":
        dist = ProjectedLaplace(torch.from_numpy(mu), scale)
        noise = stats.laplace(0, scale).rvs((n, 4), random_state=np.random.default_rng(0))
    else:
        dist = ProjectedGeneralizedNormal(torch.from_numpy(mu), scale, 3.0)
        noise = stats.gennorm(3.0, 0, scale).rvs((n, 4), random_state=np.random.default_rng(0))
    ref = mu + noise
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    x = dist.sample((n,), generator=gen(5)).numpy()
    for j in (0, 1):
        assert stats.ks_2samp(x[:, j], ref[:, j]).pvalue > P_MIN
    with pytest.raises(NotImplementedError, match="no closed form"):
        dist.log_prob(torch.from_numpy(x[:2]))


def test_rsample_is_differentiable():
    loc = torch.tensor([1.0, 0.5, 0.0], dtype=F64, requires_grad=True)
    x = ProjectedNormal(loc, 0.1).rsample((5,), generator=gen(0))
    x[:, 0].sum().backward()
    assert loc.grad is not None and torch.isfinite(loc.grad).all()


def test_error_messages():
    with pytest.raises(ConfigError, match="'radius'"):
        ProjectedNormal(torch.tensor([1.0, 0.0]), 0.1, radius=0.0)
    with pytest.raises(ConfigError, match="d >= 2"):
        ProjectedLaplace(torch.tensor([1.0]), 0.1)
    with pytest.raises(ConfigError, match="'scale'.*positive"):
        ProjectedNormal(torch.tensor([1.0, 0.0]), -0.1)
    with pytest.raises(ConfigError, match="'beta'.*positive"):
        ProjectedGeneralizedNormal(torch.tensor([1.0, 0.0]), 0.1, 0.0)
    with pytest.raises(ConfigError, match="last dimension must be 2"):
        ProjectedNormal(torch.tensor([1.0, 0.0]), 0.1).log_prob(torch.zeros(3))
