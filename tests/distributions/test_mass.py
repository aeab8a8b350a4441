"""Mass to move (total variation to the uniform), paper 000 Fig. 2.

References: the d = 3 vMF closed form; the complementary integral ∫(p_uni - p)_+ computed directly
in t with scipy.quad and scipy's Bessel functions; Monte Carlo with standard errors; direct
quadrature of ½∫|p - 1| for the 1-D box; cross-checks between the closed form, nested quadrature and
the Fourier series for the box.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy import special as sp

from unmix.distributions.mass import MassToMove, mass_to_move_box_normal, mass_to_move_vmf
from unmix.errors import ConfigError


def tv_vmf_d3(kappa: float) -> float:
    """TV = e^κ/(2 sinh κ) - 1/(2κ) - (1 - t0)/2, t0 = log(sinh κ / κ)/κ (no-cancellation forms)."""
    one_minus_t0 = (math.log(2 * kappa) - math.log1p(-math.exp(-2 * kappa))) / kappa
    return 1 / (-math.expm1(-2 * kappa)) - 1 / (2 * kappa) - 0.5 * one_minus_t0


@pytest.mark.parametrize("kappa", [0.01, 0.3, 1.0, 4.0, 25.0, 300.0, 1e5])
def test_vmf_d3_closed_form(kappa):
    r = mass_to_move_vmf(3, kappa)
    assert isinstance(r, MassToMove) and r.error < 1e-11
    assert abs(r.value - tv_vmf_d3(kappa)) < 1e-11


@pytest.mark.parametrize("dim", [2, 5, 10, 40])
@pytest.mark.parametrize("kappa", [0.2, 3.0, 50.0])
def test_vmf_equals_complementary_integral(dim, kappa):
    """TV also equals ∫_{-1}^{t0} K_d (1-t²)^{(d-3)/2} (1 - e^{κt-ℓ}) dt, with ℓ from scipy.ive."""
    nu = dim / 2 - 1
    ell = math.lgamma(dim / 2) - nu * math.log(kappa / 2) + math.log(sp.ive(nu, kappa)) + kappa
    t0 = ell / kappa
    log_kd = (
        math.lgamma(dim / 2) - math.lgamma((dim - 1) / 2) - 0.5 * math.log(math.pi)
    )  # |S^{d-2}| / |S^{d-1}|

    def f(t: float) -> float:  # the factor (1 + t)^{(d-3)/2} is quad's algebraic weight
        return math.exp(log_kd) * (1 - t) ** ((dim - 3) / 2) * -math.expm1(kappa * t - ell)

    val, _ = integrate.quad(
        f, -1, t0, weight="alg", wvar=((dim - 3) / 2, 0), epsabs=1e-14, epsrel=1e-12
    )
    r = mass_to_move_vmf(dim, kappa)
    assert abs(r.value - val) < 1e-10, (r.value, val)


def test_vmf_monte_carlo_and_limits():
    """TV = E_uni[(p/p_uni - 1)_+] with t = 2B - 1, B ~ Beta((d-1)/2, (d-1)/2)."""
    dim, kappa, n = 10, 5.0, 400_000
    rng = np.random.default_rng(0)
    t = 2 * stats.beta((dim - 1) / 2, (dim - 1) / 2).rvs(n, random_state=rng) - 1
    nu = dim / 2 - 1
    ell = math.lgamma(dim / 2) - nu * math.log(kappa / 2) + math.log(sp.ive(nu, kappa)) + kappa
    v = np.maximum(np.expm1(kappa * t - ell), 0.0)
    r = mass_to_move_vmf(dim, kappa)
    assert abs(r.value - v.mean()) < 5 * v.std() / math.sqrt(n)
    assert mass_to_move_vmf(10, 0.0).value == 0.0
    assert mass_to_move_vmf(10, 1e-8).value < 1e-8
    assert mass_to_move_vmf(10, 1e5).value > 1 - 1e-9
    values = [mass_to_move_vmf(10, k).value for k in (0.1, 1, 3, 10, 30, 100)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))


def test_vmf_huge_dimension_uses_quadrature_normaliser():
    """Where scipy's ive underflows (d = 2000, κ = 100) ℓ comes from quadrature; check against
    the power series of 0F1 (summed here to 2000 terms; it converges for any κ)."""
    dim, kappa = 2000, 100.0
    assert sp.ive(dim / 2 - 1, kappa) < 1e-280  # the quadrature branch is the one exercised
    z, b = kappa * kappa / 4, dim / 2
    term, total = 1.0, 1.0
    for k in range(1, 2000):
        term *= z / ((b + k - 1) * k)
        total += term
    from unmix.distributions.mass import _log_mgf_uniform_sphere

    assert abs(_log_mgf_uniform_sphere(dim, kappa) - math.log(total)) < 1e-11
    assert 0 < mass_to_move_vmf(dim, kappa).value < 1


def box_tv_1d_direct(sigma: float, low: float, high: float) -> float:
    """½∫|p - u| by quad, split where the truncated normal density crosses u = 1/(high - low)."""
    c, half = 0.5 * (low + high), 0.5 * (high - low)
    r = stats.truncnorm(-half / sigma, half / sigma, loc=c, scale=sigma)
    u = 1 / (high - low)
    z1 = 2 * stats.norm.cdf(half / sigma) - 1
    level = -math.log(u * sigma * math.sqrt(2 * math.pi) * z1)  # (z - c)²/(2σ²) at the crossing
    delta = sigma * math.sqrt(2 * level) if level > 0 else 0.0
    pts = [p for p in (c - delta, c, c + delta) if low < p < high]
    val, _ = integrate.quad(
        lambda z: abs(r.pdf(z) - u), low, high, points=pts, epsabs=1e-14, epsrel=1e-12, limit=200
    )
    return 0.5 * val


@pytest.mark.parametrize("sigma,low,high", [(0.01, 0, 1), (0.2, 0, 1), (1.0, -1, 2), (30.0, 0, 1)])
def test_box_d1_against_direct_quadrature(sigma, low, high):
    r = mass_to_move_box_normal(1, sigma, low, high)
    assert r.method == "closed-form"
    assert abs(r.value - box_tv_1d_direct(sigma, low, high)) < 1e-10


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("sigma", [0.05, 0.3, 2.0])
def test_box_closed_form_matches_nested_quadrature(dim, sigma):
    a = mass_to_move_box_normal(dim, sigma)
    b = mass_to_move_box_normal(dim, sigma, method="quad")
    assert a.method == "closed-form" and b.method == "quad"
    assert abs(a.value - b.value) < 1e-10 + b.error


@pytest.mark.parametrize("dim,sigma", [(5, 0.1), (5, 0.17), (10, 0.05), (10, 0.09)])
def test_box_fourier_matches_closed_form(dim, sigma):
    a = mass_to_move_box_normal(dim, sigma)
    b = mass_to_move_box_normal(dim, sigma, method="fourier")
    assert a.method == "closed-form" and b.method == "fourier"
    assert abs(a.value - b.value) < 1e-10 + b.error


@pytest.mark.parametrize("dim,sigma", [(10, 0.3), (10, 1.0), (6, 0.5)])
def test_box_fourier_against_monte_carlo(dim, sigma):
    """TV = E_uni[(p/p_uni - 1)_+] over uniform points of [0, 1]^d, 5 standard errors."""
    n = 200_000
    r = mass_to_move_box_normal(dim, sigma)
    assert r.method == "fourier" and r.error < 1e-10
    u = np.random.default_rng(dim).random((n, dim))
    logp = stats.truncnorm(-0.5 / sigma, 0.5 / sigma, loc=0.5, scale=sigma).logpdf(u).sum(1)
    v = np.maximum(np.expm1(logp), 0.0)
    assert abs(r.value - v.mean()) < 5 * v.std() / math.sqrt(n)


def test_box_limits_and_fig2_setting():
    assert mass_to_move_box_normal(10, 1e6).value < 1e-10  # sigma -> inf: uniform
    assert mass_to_move_box_normal(10, 1e-4).value > 1 - 1e-12  # sigma -> 0: all mass moves
    # monotone in the concentration 1/sigma^2 (Fig. 2's x axis)
    values = [mass_to_move_box_normal(10, s).value for s in (2.0, 0.5, 0.3, 0.2, 0.1)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    # box location/scale invariance: [low, high] with sigma scaled like the box
    a = mass_to_move_box_normal(10, 0.3)
    b = mass_to_move_box_normal(10, 0.9, low=-1.0, high=2.0)
    assert abs(a.value - b.value) < 1e-10


def test_error_messages():
    with pytest.raises(ConfigError, match="'dim'.*>= 2"):
        mass_to_move_vmf(1, 1.0)
    with pytest.raises(ConfigError, match="'kappa'"):
        mass_to_move_vmf(3, -1.0)
    with pytest.raises(ConfigError, match="'sigma'"):
        mass_to_move_box_normal(3, 0.0)
    with pytest.raises(ConfigError, match="low < high"):
        mass_to_move_box_normal(3, 1.0, low=1.0, high=0.0)
    with pytest.raises(ConfigError, match="'method'"):
        mass_to_move_box_normal(3, 1.0, method="mc")
    with pytest.raises(ConfigError, match="dim <= 3"):
        mass_to_move_box_normal(4, 1.0, method="quad")
    with pytest.raises(ConfigError, match="dim >= 4"):
        mass_to_move_box_normal(3, 1.0, method="fourier")
