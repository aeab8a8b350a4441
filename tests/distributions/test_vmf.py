"""Tests of unmix.distributions.vmf against independent references.

References: the exact CDF of the angle to the mean (numerical integration of the marginal
density e^{κ cos θ} sin^{d-2} θ; closed form for d = 3), the Beta law of one coordinate of a
uniform point on a sphere, scipy.stats (gamma, beta, vonmises_fisher logpdf/entropy/rvs),
scipy.special Bessel ratios, closed forms (d = 2, 3), and a naive transcription of Wood's (1994)
acceptance rule.

Statistical thresholds. Seeds are fixed, so every test is deterministic. KS tests use the p-value
threshold 1e-3: for a correct sampler each p-value is Uniform(0, 1), so with the ~70 KS checks here
a correct implementation would fail one for a random seed choice with probability <= ~7% (and,
seeds being fixed, a green run stays green), while with n = 20 000 draws a CDF error larger than
~1.95/sqrt(n) ≈ 0.014 (the p = 1e-3 critical distance) is flagged. A smaller threshold would
blunt the tests; a larger one would make reseeding (e.g. after a torch RNG change) flaky. Moment
checks use |estimate - truth| <= 5 SE with SE computed from the exact variance and n (two-sided
tail 5.7e-7 per comparison, so a few hundred comparisons still have a negligible false-alarm
rate).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, special, stats

from unmix.distributions.base import Distribution
from unmix.distributions.vmf import (
    VonMisesFisher,
    _standard_gamma,
    _wood_constants,
    _wood_log_accept,
    vmf_mean_resultant_length,
)
from unmix.errors import ConfigError

P_MIN = 1e-3  # KS p-value threshold (see module docstring)
K_SE = 5.0  # moment checks: |error| <= K_SE * standard error


def _e1(d: int, dtype=torch.float64) -> torch.Tensor:
    e = torch.zeros(d, dtype=dtype)
    e[0] = 1.0
    return e


def _random_unit(d: int, seed: int, n: int | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = (d,) if n is None else (n, d)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


def _angle(x: torch.Tensor, mu: torch.Tensor) -> np.ndarray:
    """θ = angle between x and μ, accurate for all θ (atan2 of the tangent and normal parts)."""
    w = (x * mu).sum(-1)
    perp = (x - w.unsqueeze(-1) * mu).norm(dim=-1)
    return torch.atan2(perp, w).numpy()


def _theta_cdf(d: int, kappa: float):
    """Exact CDF of θ = arccos(μᵀx) under vMF_d(κ): density ∝ exp(-2κ sin²(θ/2)) sin^{d-2}(θ).

    Cumulative trapezoid on a dense grid (uniform on [0, π] plus a refinement where the mass
    concentrates for large κ), then linear interpolation; the error is < 1e-8, far below the
    KS resolution.
    """
    spread = min(math.pi, 60.0 * math.sqrt(d) / math.sqrt(kappa))
    grid = np.unique(
        np.concatenate([np.linspace(0.0, math.pi, 200_001), np.linspace(0.0, spread, 200_001)])
    )
    logf = -2.0 * kappa * np.sin(grid / 2) ** 2
    if d > 2:
        with np.errstate(divide="ignore"):
            logf = logf + (d - 2) * np.log(np.sin(grid))
    f = np.exp(logf - logf.max())
    cdf = integrate.cumulative_trapezoid(f, grid, initial=0.0)
    cdf /= cdf[-1]
    return lambda t: np.interp(t, grid, cdf)


# --------------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5, 4.5, 24.5, 499.5, 0.3])
def test_standard_gamma_matches_scipy(alpha: float) -> None:
    g = torch.Generator().manual_seed(11)
    x = _standard_gamma(alpha, 20_000, g, torch.device("cpu")).numpy()
    assert np.all(np.isfinite(x)) and np.all(x >= 0)
    assert stats.kstest(x, stats.gamma(alpha).cdf).pvalue > P_MIN


@pytest.mark.parametrize("d", [2, 3, 10, 1000])
@pytest.mark.parametrize("kappa", [1e-3, 0.7, 10.0, 1e3])
def test_wood_acceptance_equals_naive_formula_and_is_at_most_zero(d: int, kappa: float) -> None:
    """The cancellation-free rewrite equals Wood's κW + (d-1)log(1 - x0 W) - c and is <= 0."""
    k = torch.tensor([kappa], dtype=torch.float64)
    b, kb2 = _wood_constants(d, k)
    b_naive = (-2 * kappa + math.sqrt(4 * kappa**2 + (d - 1) ** 2)) / (d - 1)
    assert b.item() == pytest.approx(b_naive, rel=1e-6)
    assert kb2.item() == pytest.approx(2 * kappa * b.item(), rel=1e-12)
    z = torch.linspace(1e-6, 1 - 1e-6, 2001, dtype=torch.float64)
    x, y = z, 1 - z  # Z = X / (X + Y)
    got = _wood_log_accept(d, b, kb2, x, y)
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * torch.log(1 - x0**2)
    w = (1 - (1 + b) * z) / (1 - (1 - b) * z)
    naive = kappa * w + (d - 1) * torch.log(1 - x0 * w) - c
    assert torch.allclose(got, naive, rtol=1e-7, atol=1e-9 * max(1.0, kappa))
    assert float(got.max()) <= 1e-12


def test_wood_constants_are_finite_at_extremes() -> None:
    k = torch.tensor([1e-300, 1e-3, 1.0, 1e6, 1e300], dtype=torch.float64)
    for d in (2, 3, 1000):
        b, kb2 = _wood_constants(d, k)
        assert torch.isfinite(b).all() and torch.isfinite(kb2).all()
        assert (b > 0).all()
        assert (b <= 1).all() and (kb2 >= 0).all() and (kb2 <= d - 1).all()


# --------------------------------------------------------------------------------------------------
# Sampler: distribution of w = μᵀx and of the tangent direction
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 3, 10, 50])
@pytest.mark.parametrize("kappa", [1e-3, 1.0, 10.0, 1e3])
def test_angle_to_mean_matches_exact_cdf(d: int, kappa: float) -> None:
    """KS test of θ = arccos(μᵀx) (equivalently w = μᵀx) against the integrated exact marginal."""
    mu = _random_unit(d, seed=d)
    g = torch.Generator().manual_seed(1000 + d)
    x = VonMisesFisher(mu, kappa).sample((20_000,), generator=g)
    assert x.shape == (20_000, d)
    theta = _angle(x, mu)
    assert stats.kstest(theta, _theta_cdf(d, kappa)).pvalue > P_MIN


@pytest.mark.parametrize("kappa", [1e-3, 1.0, 1e4, 1e6])
def test_d3_closed_form_cdf_of_one_minus_w(kappa: float) -> None:
    """d = 3: P(1 - w <= t) = (1 - e^{-κt}) / (1 - e^{-2κ}) exactly (w uniform-exponential law)."""
    mu = _random_unit(3, seed=5)
    g = torch.Generator().manual_seed(7)
    x = VonMisesFisher(mu, kappa).sample((20_000,), generator=g)
    one_minus_w = ((x - mu).norm(dim=-1) ** 2 / 2).numpy()  # = 1 - μᵀx, no cancellation

    def cdf(t):
        return np.expm1(-kappa * t) / np.expm1(-2 * kappa)

    assert stats.kstest(one_minus_w, cdf).pvalue > P_MIN


@pytest.mark.parametrize("d,kappa", [(1000, 1.0), (1000, 1e3), (200, 1e4)])
def test_angle_to_mean_matches_exact_cdf_high_dim(d: int, kappa: float) -> None:
    mu = _random_unit(d, seed=3)
    g = torch.Generator().manual_seed(4)
    x = VonMisesFisher(mu, kappa).sample((5_000,), generator=g)
    assert stats.kstest(_angle(x, mu), _theta_cdf(d, kappa)).pvalue > P_MIN


def test_matches_scipy_sampler_two_sample() -> None:
    """Two-sample KS of μᵀx against scipy.stats.vonmises_fisher draws (an independent sampler)."""
    d, kappa = 5, 3.0
    mu = _random_unit(d, seed=9)
    g = torch.Generator().manual_seed(10)
    ours = (VonMisesFisher(mu, kappa).sample((20_000,), generator=g) @ mu).numpy()
    ref = stats.vonmises_fisher(mu.numpy(), kappa).rvs(20_000, random_state=12) @ mu.numpy()
    assert stats.ks_2samp(ours, ref).pvalue > P_MIN


def _tangent_in_basis(x: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """Unit tangent v = (x - wμ)/|x - wμ| in an orthonormal basis of μ^⊥, shape (n, d-1)."""
    d = mu.numel()
    q, _ = torch.linalg.qr(torch.cat([mu[:, None], _random_unit(d, 77, d - 1).T], dim=1))
    basis = q[:, 1:]  # columns span μ^⊥
    w = x @ mu
    v = x - w[:, None] * mu
    v = v / v.norm(dim=-1, keepdim=True)
    return v @ basis


@pytest.mark.parametrize("d", [3, 4, 10, 50])
@pytest.mark.parametrize("kappa", [0.5, 20.0])
def test_tangent_direction_is_uniform(d: int, kappa: float) -> None:
    """v is uniform on the sphere of μ^⊥: one coordinate t of it has
    (t+1)/2 ~ Beta((d-2)/2, (d-2)/2), E v = 0 and E vvᵀ = I/(d-1) in any orthonormal basis
    of μ^⊥ (checked within 5 SE)."""
    n = 20_000
    mu = _random_unit(d, seed=21 + d)
    g = torch.Generator().manual_seed(22)
    x = VonMisesFisher(mu, kappa).sample((n,), generator=g)
    t = _tangent_in_basis(x, mu)  # (n, d-1)
    p = d - 1
    assert torch.allclose(t.norm(dim=-1), torch.ones(n, dtype=torch.float64), atol=1e-10)
    beta = stats.beta((d - 2) / 2, (d - 2) / 2)
    for j in range(min(p, 3)):
        assert stats.kstest((t[:, j].numpy() + 1) / 2, beta.cdf).pvalue > P_MIN
    # first moment: Var(t_j) = 1/p
    se1 = math.sqrt(1.0 / p / n)
    assert t.mean(0).abs().max().item() <= K_SE * se1
    # second moments: Var(t_j^2) = 3/(p(p+2)) - 1/p^2, Var(t_i t_j) = 1/(p(p+2))
    m2 = t.T @ t / n
    se_diag = math.sqrt((3 / (p * (p + 2)) - 1 / p**2) / n)
    se_off = math.sqrt(1 / (p * (p + 2)) / n)
    eye = torch.eye(p, dtype=torch.float64)
    err = (m2 - eye / p).abs()
    assert err.diagonal().max().item() <= K_SE * se_diag
    assert (err * (1 - eye)).max().item() <= K_SE * se_off


def test_tangent_d2_is_a_fair_coin() -> None:
    """d = 2: the tangent is ±μ^⊥ with probability 1/2 each (exact binomial test)."""
    mu = _random_unit(2, seed=31)
    g = torch.Generator().manual_seed(32)
    x = VonMisesFisher(mu, 2.0).sample((20_000,), generator=g)
    perp = torch.stack([-mu[1], mu[0]])
    k = int(((x @ perp) > 0).sum())
    assert stats.binomtest(k, 20_000, 0.5).pvalue > P_MIN


@pytest.mark.parametrize("d", [2, 3, 7])
def test_rotational_equivariance(d: int) -> None:
    """Samples from vMF(Rμ) rotated back by Rᵀ have the law of vMF(μ) samples (two-sample KS on a
    fixed axis that is not μ), for means on both Householder branches (μ₁ ≥ 0 and μ₁ < 0),
    including ±e₁ exactly."""
    kappa, n = 3.0, 20_000
    base = _e1(d)
    axis = _random_unit(d, seed=41)
    ref = VonMisesFisher(base, kappa).sample((n,), generator=torch.Generator().manual_seed(1))
    ref_proj = (ref @ axis).numpy()
    rots = [torch.eye(d, dtype=torch.float64), -torch.eye(d, dtype=torch.float64)]
    for s in range(3):
        q, _ = torch.linalg.qr(
            torch.randn(d, d, generator=torch.Generator().manual_seed(50 + s), dtype=torch.float64)
        )
        rots.append(q)
    for i, r in enumerate(rots):
        x = VonMisesFisher(r @ base, kappa).sample((n,), generator=torch.Generator().manual_seed(i))
        back = x @ r  # rows Rᵀ x
        assert stats.ks_2samp((back @ axis).numpy(), ref_proj).pvalue > P_MIN


# --------------------------------------------------------------------------------------------------
# Batching, shapes, dtypes, extremes, determinism
# --------------------------------------------------------------------------------------------------


def _exact_mean_and_var(d: int, mu: torch.Tensor, kappa: torch.Tensor):
    """E x = A μ and Var(x_i) from E w² = 1 - (d-1)A/κ, with A from scipy's scaled Bessel ratio."""
    k = kappa.numpy()
    a = torch.from_numpy(special.ive(d / 2, k) / special.ive(d / 2 - 1, k))
    ew2 = 1 - (d - 1) * a / kappa
    mean = a[..., None] * mu
    var = (ew2 - a**2)[..., None] * mu**2 + ((1 - ew2) / (d - 1))[..., None] * (1 - mu**2)
    return mean, var


@pytest.mark.parametrize("shared_kappa", [False, True])
def test_batched_means_each_row_concentrates_on_its_mean(shared_kappa: bool) -> None:
    d, nb, n = 5, 48, 4_000
    mu = _random_unit(d, seed=61, n=nb)
    if shared_kappa:
        kappa = torch.full((nb,), 4.0, dtype=torch.float64)
    else:
        kappa = torch.logspace(-1, 3, nb, dtype=torch.float64)
    dist = VonMisesFisher(mu, kappa)
    assert dist.batch_shape == (nb,) and dist.event_shape == (d,)
    x = dist.sample((n,), generator=torch.Generator().manual_seed(62))
    assert x.shape == (n, nb, d)
    mean, var = _exact_mean_and_var(d, mu, kappa)
    err = (x.mean(0) - mean).abs()
    assert (err <= K_SE * (var / n).sqrt() + 1e-12).all()
    big = kappa >= 10
    nearest = (x.mean(0) @ mu.T).argmax(-1)
    assert torch.equal(nearest[big], torch.arange(nb)[big])
    # the distribution's own mean agrees with the reference formula
    assert torch.allclose(dist.mean, mean, rtol=1e-10, atol=1e-14)


def test_kappa_batch_with_one_loc_and_multi_dim_batch() -> None:
    mu = _random_unit(4, seed=71)
    kappa = torch.tensor([[0.1, 1.0, 10.0], [100.0, 1e3, 1e4]], dtype=torch.float64)
    dist = VonMisesFisher(mu, kappa)
    assert dist.batch_shape == (2, 3)
    x = dist.sample((3_000, 2), generator=torch.Generator().manual_seed(72))
    assert x.shape == (3_000, 2, 2, 3, 4)
    flat = x.reshape(-1, 2, 3, 4)
    mean, var = _exact_mean_and_var(4, mu.expand(2, 3, 4), kappa)
    assert ((flat.mean(0) - mean).abs() <= K_SE * (var / flat.shape[0]).sqrt()).all()
    assert dist.sample(generator=torch.Generator().manual_seed(0)).shape == (2, 3, 4)


@pytest.mark.parametrize("d", [2, 3, 1000])
@pytest.mark.parametrize("kappa", [1e-12, 1e-3, 1e4, 1e6, 1e12])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_extreme_kappa_and_dim_give_finite_unit_samples(d, kappa, dtype) -> None:
    mu = _random_unit(d, seed=d).to(dtype)
    mu = mu / mu.norm()
    x = VonMisesFisher(mu, kappa).sample((300,), generator=torch.Generator().manual_seed(3))
    assert x.dtype == dtype and x.shape == (300, d)
    assert torch.isfinite(x).all()
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert ((x.double().norm(dim=-1) - 1).abs() <= tol).all()
    if kappa >= 1e4 and dtype == torch.float64:  # concentrated: 1 - w ≈ (d-1)/(2κ)
        one_minus_w = (x - mu).norm(dim=-1) ** 2 / 2
        assert one_minus_w.mean().item() == pytest.approx((d - 1) / (2 * kappa), rel=0.5)


@pytest.mark.parametrize("kappa", [1e-300, 1e300])
def test_float64_extreme_kappa(kappa: float) -> None:
    mu = _random_unit(5, seed=5)
    x = VonMisesFisher(mu, kappa).sample((1000,), generator=torch.Generator().manual_seed(6))
    assert torch.isfinite(x).all()
    assert ((x.norm(dim=-1) - 1).abs() <= 1e-12).all()
    if kappa > 1:
        assert torch.allclose(x, mu.expand_as(x), atol=1e-12)
    else:  # uniform: mean ≈ 0 within 5 SE (Var of a coordinate = 1/d)
        assert (x.mean(0).abs() <= K_SE * math.sqrt(1 / 5 / 1000)).all()


def test_float32_loc_gives_float32_samples_on_loc_device() -> None:
    mu = _e1(6, torch.float32)
    x = VonMisesFisher(mu, torch.tensor(2.0)).sample((10,), generator=torch.Generator())
    assert x.dtype == torch.float32 and x.device == mu.device


def test_determinism() -> None:
    mu = _random_unit(7, seed=81, n=3)
    kappa = torch.tensor([0.5, 5.0, 50.0], dtype=torch.float64)
    dist = VonMisesFisher(mu, kappa)
    a = dist.sample((500,), generator=torch.Generator().manual_seed(123))
    b = dist.sample((500,), generator=torch.Generator().manual_seed(123))
    c = dist.sample((500,), generator=torch.Generator().manual_seed(124))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    torch.manual_seed(5)
    d1 = dist.sample((10,))
    torch.manual_seed(5)
    assert torch.equal(d1, dist.sample((10,)))


def test_no_rsample_and_no_gradient_through_samples() -> None:
    mu = _e1(3).requires_grad_(True)
    kappa = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    dist = VonMisesFisher(mu, kappa)
    assert not dist.has_rsample
    with pytest.raises(NotImplementedError, match="no reparameterised sampler"):
        dist.rsample((2,))
    assert not dist.sample((4,)).requires_grad
    # log_prob and entropy are differentiable in κ: d/dκ log p(x) = μᵀx - A_d(κ)
    x = dist.sample((5,), generator=torch.Generator().manual_seed(0))
    (grad,) = torch.autograd.grad(dist.log_prob(x).sum(), kappa)
    expected = (x @ mu.detach() - vmf_mean_resultant_length(3, 2.0)).sum()
    assert grad.item() == pytest.approx(expected.item(), rel=1e-8)


# --------------------------------------------------------------------------------------------------
# Density, normaliser, mean, entropy
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kappa", [1e-3, 1.0, 10.0, 100.0])
def test_log_prob_integrates_to_one_on_the_circle(kappa: float) -> None:
    mu = _random_unit(2, seed=91)
    phi = torch.linspace(0, 2 * math.pi, 8193, dtype=torch.float64)[:-1]  # periodic trapezoid
    pts = torch.stack([phi.cos(), phi.sin()], dim=-1)
    dens = VonMisesFisher(mu, kappa).log_prob(pts).exp()
    assert (dens.sum() * (2 * math.pi / 8192)).item() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kappa", [1e-3, 1.0, 10.0, 1e3, 1e5])
def test_log_prob_d3_closed_form(kappa: float) -> None:
    """C_3(κ) = κ / (4π sinh κ); log sinh κ = κ + log1p(-e^{-2κ}) - log 2."""
    mu = _random_unit(3, seed=92)
    x = _random_unit(3, seed=93, n=50)
    log_c3 = math.log(kappa) - math.log(2 * math.pi) - kappa - math.log(-math.expm1(-2 * kappa))
    expected = log_c3 + kappa * (x @ mu)
    got = VonMisesFisher(mu, kappa).log_prob(x)
    assert torch.allclose(got, expected, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("d", [5, 10])
@pytest.mark.parametrize("kappa", [0.1, 1.0, 10.0, 100.0])
def test_log_prob_matches_scipy(d: int, kappa: float) -> None:
    mu = _random_unit(d, seed=94)
    x = _random_unit(d, seed=95, n=50)
    expected = stats.vonmises_fisher(mu.numpy(), kappa).logpdf(x.numpy())
    got = VonMisesFisher(mu, kappa).log_prob(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_log_prob_broadcasts_over_batch() -> None:
    mu = _random_unit(4, seed=96, n=3)
    kappa = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    dist = VonMisesFisher(mu, kappa)
    x = dist.sample((6,), generator=torch.Generator().manual_seed(1))
    lp = dist.log_prob(x)
    assert lp.shape == (6, 3)
    one = VonMisesFisher(mu[1], kappa[1]).log_prob(x[:, 1])
    assert torch.allclose(lp[:, 1], one)


@pytest.mark.parametrize("d", [2, 3, 5, 10])
@pytest.mark.parametrize("kappa", [0.01, 1.0, 10.0, 100.0])
def test_entropy_matches_scipy(d: int, kappa: float) -> None:
    mu = _random_unit(d, seed=97)
    expected = stats.vonmises_fisher(mu.numpy(), kappa).entropy()
    assert VonMisesFisher(mu, kappa).entropy().item() == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_entropy_is_monte_carlo_mean_of_minus_log_prob() -> None:
    d, kappa, n = 6, 4.0, 50_000
    dist = VonMisesFisher(_random_unit(d, seed=98), kappa)
    lp = dist.log_prob(dist.sample((n,), generator=torch.Generator().manual_seed(99)))
    se = lp.std().item() / math.sqrt(n)
    assert abs(-lp.mean().item() - dist.entropy().item()) <= K_SE * se


def test_mean_resultant_length_closed_forms_and_limits() -> None:
    k = torch.tensor([1e-6, 1e-3, 0.5, 1.0, 10.0, 1e3, 1e5], dtype=torch.float64)
    a2 = torch.from_numpy(special.i1e(k.numpy()) / special.i0e(k.numpy()))
    assert torch.allclose(vmf_mean_resultant_length(2, k), a2, rtol=1e-12)
    a3 = 1 / torch.tanh(k) - 1 / k
    a3 = torch.where(k < 1e-2, k / 3 - k**3 / 45, a3)  # series where coth κ - 1/κ cancels
    assert torch.allclose(vmf_mean_resultant_length(3, k), a3, rtol=1e-9)
    # small κ: A_d ≈ κ/d; large κ: 1 - A_d ≈ (d-1)/(2κ)
    for d in (5, 50, 1000):
        assert vmf_mean_resultant_length(d, 1e-8).item() == pytest.approx(1e-8 / d, rel=1e-6)
        a = vmf_mean_resultant_length(d, 1e8).item()
        assert 1 - a == pytest.approx((d - 1) / 2e8, rel=1e-4)


@pytest.mark.parametrize("d", [3, 10, 1000])
@pytest.mark.parametrize("kappa", [1e-3, 1.0, 1e4, 1e6, 1e8, 1e12])
def test_entropy_and_mean_resultant_length_vs_mpmath(d: int, kappa: float) -> None:
    """High-precision reference, including κ beyond scipy's ive range (κ > 1e9, Hankel branch).
    Tolerances are what float64 allows: A to ~1e-13 relative (1e-5 where d = 1000 and the shared
    log_bessel_iv's leading-order Debye branch is used, κ ~ 1..100); H to (d-1)·κ·1e-15 absolute
    (1 - A carries a relative rounding error of order κ·1e-16), plus that Debye error."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    nu, k = mp.mpf(d) / 2 - 1, mp.mpf(kappa)
    a_ref = mp.besseli(nu + 1, k) / mp.besseli(nu, k)
    log_c = nu * mp.log(k) - mp.mpf(d) / 2 * mp.log(2 * mp.pi) - mp.log(mp.besseli(nu, k))
    h_ref = float(-log_c - k * a_ref)
    debye = d >= 200 and 0.5 <= kappa <= 1e3
    a = vmf_mean_resultant_length(d, kappa).item()
    assert a == pytest.approx(float(a_ref), rel=1e-5 if debye else 1e-13)
    h = VonMisesFisher(_e1(d), kappa).entropy().item()
    tol = (d - 1) * kappa * 1e-15 + (1e-3 if debye else 1e-11 * max(1.0, abs(h_ref)))
    assert h == pytest.approx(h_ref, abs=tol)


@pytest.mark.parametrize("d", [2, 5, 40])
def test_gradients_of_mean_resultant_length_and_entropy(d: int) -> None:
    """Autograd through the scaled Bessel logs vs the Riccati identity A' = 1 - A² - (d-1)A/κ and
    dH/dκ = -κ A'(κ) (since H = -log C - κA and d log C/dκ = -A)."""
    k = torch.tensor([0.05, 1.0, 30.0, 1e4], dtype=torch.float64, requires_grad=True)
    a = vmf_mean_resultant_length(d, k)
    (da,) = torch.autograd.grad(a.sum(), k)
    a = a.detach()
    expected = 1 - a**2 - (d - 1) * a / k.detach()
    assert torch.allclose(da, expected, rtol=1e-6, atol=1e-14)
    h = VonMisesFisher(_e1(d), k).entropy()
    (dh,) = torch.autograd.grad(h.sum(), k)
    assert torch.allclose(dh, -k.detach() * expected, rtol=1e-6, atol=1e-12)


def test_mean_matches_monte_carlo() -> None:
    d, kappa, n = 4, 2.0, 100_000
    mu = _random_unit(d, seed=101)
    dist = VonMisesFisher(mu, kappa)
    x = dist.sample((n,), generator=torch.Generator().manual_seed(102))
    se = x.std(0) / math.sqrt(n)
    assert ((x.mean(0) - dist.mean).abs() <= K_SE * se).all()
    assert dist.mean.shape == (d,)
    assert torch.equal(dist.mode, mu)


def test_mean_resultant_length_matches_quadrature() -> None:
    """A_d(κ) = E[w] by integrating w e^{κw}(1-w²)^{(d-3)/2} numerically (no Bessel functions)."""
    for d, kappa in [(4, 0.3), (10, 5.0), (50, 40.0)]:

        def dens(w, d=d, kappa=kappa):
            return math.exp(kappa * (w - 1)) * (1 - w * w) ** ((d - 3) / 2)

        z = integrate.quad(dens, -1, 1, epsabs=0, epsrel=1e-12, limit=200)[0]
        m = integrate.quad(lambda w: w * dens(w), -1, 1, epsabs=0, epsrel=1e-12, limit=200)[0]
        assert vmf_mean_resultant_length(d, kappa).item() == pytest.approx(m / z, rel=1e-9)


def test_expand() -> None:
    dist = VonMisesFisher(_e1(3), 2.0)
    big = dist.expand((4, 2))
    assert big.batch_shape == (4, 2) and big.event_shape == (3,)
    assert big.sample((5,), generator=torch.Generator().manual_seed(0)).shape == (5, 4, 2, 3)


def test_empty_shapes() -> None:
    mu = _e1(3)
    assert VonMisesFisher(mu, 2.0).sample((0,)).shape == (0, 3)
    assert VonMisesFisher(mu.expand(0, 3), 2.0).sample((4,)).shape == (4, 0, 3)


def test_is_an_unmix_distribution() -> None:
    assert issubclass(VonMisesFisher, Distribution)


# --------------------------------------------------------------------------------------------------
# Error messages
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kappa", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_concentration_raises(kappa: float) -> None:
    with pytest.raises(ConfigError, match="'concentration'.*positive"):
        VonMisesFisher(_e1(3), kappa)
    with pytest.raises(ConfigError, match="'concentration'"):
        VonMisesFisher(_e1(3), torch.tensor([1.0, kappa], dtype=torch.float64))


def test_non_unit_loc_raises() -> None:
    with pytest.raises(ConfigError, match="'loc'.*unit vectors.*normalise"):
        VonMisesFisher(torch.tensor([1.0, 1.0, 0.0]), 1.0)
    with pytest.raises(ConfigError, match="'loc'"):
        VonMisesFisher(torch.zeros(4), 1.0)
    VonMisesFisher(torch.tensor([0.6, 0.8 + 1e-7]), 1.0)  # within float32 tolerance: accepted


@pytest.mark.parametrize("shape", [(1,), (5, 1), ()])
def test_dimension_below_two_raises(shape) -> None:
    loc = torch.ones(shape)
    with pytest.raises(ConfigError, match="'loc'.*must be >= 2"):
        VonMisesFisher(loc, 1.0)


def test_non_broadcastable_concentration_raises() -> None:
    with pytest.raises(ConfigError, match="'concentration'.*broadcast"):
        VonMisesFisher(_random_unit(3, seed=1, n=4), torch.ones(3, dtype=torch.float64))


def test_log_prob_rejects_points_off_the_sphere() -> None:
    dist = VonMisesFisher(_e1(3), 1.0)
    with pytest.raises(ConfigError, match="unit sphere"):
        dist.log_prob(torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
    with pytest.raises(ConfigError, match="last dimension must be d = 3"):
        dist.log_prob(torch.tensor([1.0, 0.0], dtype=torch.float64))


def test_validation_can_be_switched_off() -> None:
    dist = VonMisesFisher(torch.tensor([2.0, 0.0]), 1.0, validate_args=False)
    assert dist.batch_shape == ()
