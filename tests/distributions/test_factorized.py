"""Factorised Normal / Laplace / GeneralizedNormal and their box-truncated versions.

References: scipy.stats (norm, laplace, gennorm, truncnorm), scipy.integrate.quad, mpmath at
50 digits for extreme normalisers and moments. KS tests use fixed seeds and reject at p < 1e-3;
moment checks use 5 standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from scipy import special as sp

from unmix.distributions.factorized import (
    GeneralizedNormal,
    Laplace,
    Normal,
    TruncatedGeneralizedNormal,
    TruncatedLaplace,
    TruncatedNormal,
)
from unmix.errors import ConfigError

mpmath = pytest.importorskip("mpmath")

P_MIN = 1e-3  # KS rejection level (fixed seeds: deterministic)
F64 = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def t64(x) -> torch.Tensor:
    return torch.as_tensor(x, dtype=F64)


# ----------------------------------------------------------------------------------------------
# untruncated
# ----------------------------------------------------------------------------------------------


def untruncated_cases():
    loc = t64([[0.3, -1.0, 2.0], [0.0, 0.5, -0.2]])
    scale = t64([0.7, 1.3, 0.2])
    return [
        (Normal(loc, scale), lambda m, s: stats.norm(m, s)),
        (Laplace(loc, scale), lambda m, s: stats.laplace(m, s)),
        (GeneralizedNormal(loc, scale, 3.0), lambda m, s: stats.gennorm(3.0, m, s)),
        (GeneralizedNormal(loc, scale, 0.7), lambda m, s: stats.gennorm(0.7, m, s)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_untruncated_ks_logprob_moments(case):
    dist, ref = untruncated_cases()[case]
    assert dist.batch_shape == (2,) and dist.event_shape == (3,)
    x = dist.sample((4000,), generator=gen(case))
    assert x.shape == (4000, 2, 3) and x.dtype == F64
    loc, scale = dist.loc.numpy(), dist.scale.numpy()
    for i in range(2):
        for j in range(3):
            r = ref(loc[i, j], scale[i, j])
            assert stats.kstest(x[:, i, j].numpy(), r.cdf).pvalue > P_MIN
    # log_prob: sum of scipy logpdfs over the event dimension
    want = ref(loc, scale).logpdf(x[:5].numpy()).sum(-1)
    np.testing.assert_allclose(dist.log_prob(x[:5]).numpy(), want, rtol=1e-12, atol=1e-12)
    # closed-form mean / variance agree with scipy
    np.testing.assert_allclose(dist.mean.numpy(), ref(loc, scale).mean(), rtol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy(), ref(loc, scale).var(), rtol=1e-12)


def test_untruncated_sample_moments_within_5_se():
    n = 20000
    for dist in (
        Normal(t64([1.0, -2.0]), 0.5),
        Laplace(t64([1.0, -2.0]), 0.5),
        GeneralizedNormal(t64([1.0, -2.0]), 0.5, 3.0),
    ):
        x = dist.sample((n,), generator=gen(7))
        var = dist.variance
        se_mean = (var / n).sqrt()
        assert ((x.mean(0) - dist.mean).abs() <= 5 * se_mean).all()
        fourth = ((x - dist.mean) ** 4).mean(0)  # SE of the sample variance ≈ sqrt((m4 - v²)/n)
        se_var = ((fourth - var**2) / n).sqrt()
        assert ((x.var(0) - var).abs() <= 5 * se_var).all()


def test_rsample_gradients():
    # Normal / Laplace: d x / d loc = 1, d x / d scale = standardised noise
    for cls in (Normal, Laplace):
        loc = t64([0.5, -0.5]).requires_grad_()
        scale = t64(2.0).requires_grad_()
        x = cls(loc, scale).rsample((10,), generator=gen(1))
        x.sum().backward()
        assert torch.allclose(loc.grad, torch.full((2,), 10.0, dtype=F64))
        assert torch.allclose(scale.grad, ((x - loc) / scale).sum().detach())


def test_gennorm_rsample_beta_gradient_matches_closed_form():
    """d/dβ E|X - μ| = λ d/dβ [Γ(2/β)/Γ(1/β)] via the implicit-reparameterisation gradient."""
    n, beta0, lam = 40000, 3.0, 0.8
    beta = torch.full((n, 1), beta0, dtype=F64, requires_grad=True)
    dist = GeneralizedNormal(torch.zeros(n, 1, dtype=F64), lam, beta)
    x = dist.rsample(generator=gen(3))
    x.abs().sum().backward()
    g = beta.grad.flatten()
    ratio = math.exp(math.lgamma(2 / beta0) - math.lgamma(1 / beta0))
    want = lam * ratio * (-2 * sp.digamma(2 / beta0) + sp.digamma(1 / beta0)) / beta0**2
    assert abs(g.mean().item() - want) <= 5 * g.std().item() / math.sqrt(n)


def test_generator_determinism():
    for dist in (
        Normal(torch.zeros(3, dtype=F64), 1.0),
        Laplace(torch.zeros(3, dtype=F64), 1.0),
        GeneralizedNormal(torch.zeros(3, dtype=F64), 1.0, 3.0),
        TruncatedNormal(torch.zeros(3, dtype=F64), 1.0, -0.5, 1.0),
        TruncatedLaplace(torch.zeros(3, dtype=F64), 1.0, -0.5, 1.0),
        TruncatedGeneralizedNormal(torch.zeros(3, dtype=F64), 1.0, 3.0, -0.5, 1.0),
    ):
        a = dist.sample((50,), generator=gen(11))
        b = dist.sample((50,), generator=gen(11))
        c = dist.sample((50,), generator=gen(12))
        assert torch.equal(a, b) and not torch.equal(a, c)


def test_float32_parameters_give_float32_samples():
    z = torch.rand(64, 4, generator=gen(0))
    for dist in (
        Normal(z, 0.1),
        TruncatedNormal(z, 0.05, 0.0, 1.0),
        TruncatedLaplace(z, 0.05, 0.0, 1.0),
        TruncatedGeneralizedNormal(z, 0.05, 3.0, 0.0, 1.0),
    ):
        x = dist.sample((3,), generator=gen(1))
        assert x.dtype == torch.float32 and x.shape == (3, 64, 4)
        assert torch.isfinite(dist.log_prob(x)).all()


# ----------------------------------------------------------------------------------------------
# truncated: distribution, log_prob, moments against scipy
# ----------------------------------------------------------------------------------------------


def trunc_ref(kind: str, mu: float, lam: float, lo: float, hi: float, beta: float = 3.0):
    """(cdf, logpdf, mean, var) of the scipy-based reference truncated law."""
    if kind == "normal":
        r = stats.truncnorm((lo - mu) / lam, (hi - mu) / lam, loc=mu, scale=lam)
        return r.cdf, r.logpdf, r.mean(), r.var()
    base = stats.laplace(mu, lam) if kind == "laplace" else stats.gennorm(beta, mu, lam)
    z = base.cdf(hi) - base.cdf(lo)
    if z < 1e-3:  # far tail: scipy's cdf difference cancels; use survival functions
        z = base.sf(lo) - base.sf(hi) if mu < lo else z

    def cdf(x):
        return np.clip((base.cdf(np.clip(x, lo, hi)) - base.cdf(lo)) / z, 0, 1)

    def logpdf(x):
        return np.where((x >= lo) & (x <= hi), base.logpdf(x) - math.log(z), -np.inf)

    m1 = integrate.quad(lambda t: t * base.pdf(t) / z, lo, hi, epsabs=0, epsrel=1e-12)[0]
    m2 = integrate.quad(lambda t: (t - m1) ** 2 * base.pdf(t) / z, lo, hi, epsabs=0, epsrel=1e-12)
    return cdf, logpdf, m1, m2[0]


def make_trunc(kind, mu, lam, lo, hi, beta=3.0):
    loc = t64([mu])
    if kind == "normal":
        return TruncatedNormal(loc, lam, lo, hi)
    if kind == "laplace":
        return TruncatedLaplace(loc, lam, lo, hi)
    return TruncatedGeneralizedNormal(loc, lam, beta, lo, hi)


TRUNC_CONFIGS = [
    # (mu, scale, low, high): loc inside, at a corner, outside below / above, wide scale
    (0.3, 0.2, 0.0, 1.0),
    (0.0, 0.05, 0.0, 1.0),
    (1.0, 0.3, 0.0, 1.0),
    (-0.4, 0.2, 0.0, 1.0),
    (1.5, 0.4, 0.0, 1.0),
    (0.5, 5.0, 0.0, 1.0),
]


@pytest.mark.parametrize("kind", ["normal", "laplace", "gennorm"])
def test_truncated_ks_logprob_and_moments(kind):
    for k, (mu, lam, lo, hi) in enumerate(TRUNC_CONFIGS):
        dist = make_trunc(kind, mu, lam, lo, hi)
        cdf, logpdf, mean, var = trunc_ref(kind, mu, lam, lo, hi)
        x = dist.sample((3000,), generator=gen(100 + k))[:, 0]
        assert (x >= lo).all() and (x <= hi).all()
        assert stats.kstest(x.numpy(), cdf).pvalue > P_MIN, (kind, mu, lam)
        pts = t64([lo, hi, 0.5 * (lo + hi), lo + 0.1 * (hi - lo)])[:, None]
        np.testing.assert_allclose(
            dist.log_prob(pts).numpy(), logpdf(pts[:, 0].numpy()), rtol=1e-9, atol=1e-9
        )
        assert math.isclose(dist.mean.item(), mean, rel_tol=1e-9, abs_tol=1e-11)
        assert math.isclose(dist.variance.item(), var, rel_tol=1e-8, abs_tol=1e-12)


@pytest.mark.parametrize("beta", [0.6, 1.7])
def test_truncated_gennorm_other_shapes_ks_and_moments(beta):
    for k, (mu, lam, lo, hi) in enumerate(TRUNC_CONFIGS[:4]):
        dist = make_trunc("gennorm", mu, lam, lo, hi, beta=beta)
        cdf, _, mean, var = trunc_ref("gennorm", mu, lam, lo, hi, beta=beta)
        x = dist.sample((3000,), generator=gen(200 + k))[:, 0]
        assert (x >= lo).all() and (x <= hi).all()
        assert stats.kstest(x.numpy(), cdf).pvalue > P_MIN, (beta, mu, lam)
        assert math.isclose(dist.mean.item(), mean, rel_tol=1e-9, abs_tol=1e-11)
        assert math.isclose(dist.variance.item(), var, rel_tol=1e-8, abs_tol=1e-12)


@pytest.mark.parametrize("kind", ["normal", "laplace", "gennorm"])
def test_truncated_density_integrates_to_one_and_is_minus_inf_outside(kind):
    dist = make_trunc(kind, 0.8, 0.3, -0.5, 1.0, beta=0.8)

    def dens(t: float) -> float:
        return math.exp(dist.log_prob(t64([[t]])).item())

    total, _ = integrate.quad(dens, -0.5, 1.0, points=[0.8], epsabs=0, epsrel=1e-12)
    assert abs(total - 1.0) < 1e-10
    outside = dist.log_prob(t64([[-0.5 - 1e-9], [1.0 + 1e-9]]))
    assert torch.isneginf(outside).all()


def test_truncated_per_dimension_bounds_and_batches():
    loc = t64([[0.1, 2.0], [0.5, 1.5], [0.9, 3.5]])  # batch 3, d = 2
    low, high = t64([0.0, 1.0]), t64([1.0, 4.0])
    dist = TruncatedLaplace(loc, t64([0.2, 0.5]), low, high)
    assert dist.batch_shape == (3,) and dist.event_shape == (2,)
    x = dist.sample((500,), generator=gen(5))
    assert x.shape == (500, 3, 2)
    assert (x >= low).all() and (x <= high).all()
    lp = dist.log_prob(x)
    assert lp.shape == (500, 3) and torch.isfinite(lp).all()
    # each coordinate matches a scalar-parameter distribution
    for i in range(3):
        for j in range(2):
            one = TruncatedLaplace(loc[i, j : j + 1], [0.2, 0.5][j], low[j].item(), high[j].item())
            assert math.isclose(
                dist.log_normalizer[i, j].item(), one.log_normalizer.item(), rel_tol=1e-14
            )


def test_half_line_truncation():
    """Infinite bounds: the half-normal."""
    dist = TruncatedNormal(t64([0.0]), 2.0, 0.0, math.inf)
    x = dist.sample((3000,), generator=gen(9))[:, 0].numpy()
    assert stats.kstest(x, stats.halfnorm(0, 2.0).cdf).pvalue > P_MIN
    assert math.isclose(dist.mean.item(), stats.halfnorm(0, 2.0).mean(), rel_tol=1e-12)


# ----------------------------------------------------------------------------------------------
# truncated: extreme parameters
# ----------------------------------------------------------------------------------------------


def mp_trunc_normal(mu, sig, lo, hi):
    """log Z, mean, variance of N(mu, sig^2) truncated to [lo, hi]: closed forms in mpmath (80
    digits), Z = Φ(b) - Φ(a), mean = μ + σ(φ(a) - φ(b))/Z,
    var = σ²[1 + (aφ(a) - bφ(b))/Z - ((φ(a) - φ(b))/Z)²]."""
    with mpmath.workdps(80):
        mu, sig, lo, hi = (mpmath.mpf(v) for v in (mu, sig, lo, hi))
        a, b = (lo - mu) / sig, (hi - mu) / sig
        z = mpmath.ncdf(b) - mpmath.ncdf(a) if a <= 0 else mpmath.ncdf(-a) - mpmath.ncdf(-b)
        pa, pb = mpmath.npdf(a), mpmath.npdf(b)
        r = (pa - pb) / z
        var = sig**2 * (1 + (a * pa - b * pb) / z - r**2)
        return float(mpmath.log(z)), float(mu + sig * r), float(var)


def mp_trunc_gennorm(beta, mu, lam, lo, hi):
    """log Z, mean, variance of GenNorm(beta, mu, lam) truncated to [lo, hi], from
    ∫_{y1}^{y2} y^k f(y) dy = sgn · γ((k+1)/β; |y1|^β, |y2|^β) / (2Γ(1/β)) in mpmath (80 digits)."""
    with mpmath.workdps(80):
        beta, mu, lam, lo, hi = (mpmath.mpf(v) for v in (beta, mu, lam, lo, hi))
        a, b = (lo - mu) / lam, (hi - mu) / lam

        def piece(k, y1, y2):  # ∫_{y1}^{y2} y^k f(y) dy for y1 <= y2 on one side of 0
            lo_, hi_ = sorted((abs(y1), abs(y2)))
            val = mpmath.gammainc((k + 1) / beta, lo_**beta, hi_**beta) / (
                2 * mpmath.gamma(1 / beta)
            )
            return -val if (y2 <= 0 and k % 2 == 1) else val

        def moment(k):
            if a < 0 < b:
                return piece(k, a, 0) + piece(k, 0, b)
            return piece(k, a, b)

        z = moment(0)
        m1 = moment(1) / z
        var = moment(2) / z - m1**2
        return float(mpmath.log(z)), float(mu + lam * m1), float(lam**2 * var)


@pytest.mark.parametrize(
    "mu,sig,lo,hi",
    [
        (0.0, 1e-12, 0.0, 1.0),  # loc at the corner, tiny sigma: half-normal at the edge
        (1.0, 1e-9, 0.0, 1.0),
        (0.5, 1e12, 0.0, 1.0),  # huge sigma: uniform
        (40.0, 1.0, 0.0, 1.0),  # far above the box
        (-1e3, 1.0, 0.0, 1.0),  # very far below
        (0.0, 1.0, 5.0, 5.0 + 1e-9),  # narrow box in the tail
        (0.0, 1.0, 0.5, 0.5 + 1e-9),  # narrow box near the mode
        (3.0, 1e6, 0.0, 1.0),
    ],
)
def test_truncated_normal_extremes_against_mpmath(mu, sig, lo, hi):
    dist = TruncatedNormal(t64([mu]), sig, lo, hi)
    x = dist.sample((2000,), generator=gen(2))
    assert torch.isfinite(x).all() and (x >= lo).all() and (x <= hi).all()
    log_z, mean, var = mp_trunc_normal(mu, sig, lo, hi)
    assert math.isclose(dist.log_normalizer.item(), log_z, rel_tol=1e-10, abs_tol=1e-10)
    assert math.isclose(dist.mean.item(), mean, rel_tol=1e-9, abs_tol=1e-12 * (hi - lo))
    assert math.isclose(dist.variance.item(), var, rel_tol=1e-6)
    assert torch.isfinite(dist.log_prob(x)).all()
    # the samples' mean agrees with the exact mean within 5 SE
    assert abs(x.mean().item() - mean) <= 5 * math.sqrt(var / 2000) + 1e-15


@pytest.mark.parametrize("kind", ["laplace", "gennorm"])
@pytest.mark.parametrize(
    "mu,lam,lo,hi",
    [(0.0, 1e-12, 0.0, 1.0), (0.5, 1e12, 0.0, 1.0), (30.0, 1.0, 0.0, 1.0), (-2e3, 1.0, 0.0, 1.0)],
)
def test_truncated_laplace_gennorm_extremes(kind, mu, lam, lo, hi):
    beta = 1.0 if kind == "laplace" else 3.0
    dist = make_trunc(kind, mu, lam, lo, hi, beta=beta)
    x = dist.sample((2000,), generator=gen(4))
    assert torch.isfinite(x).all() and (x >= lo).all() and (x <= hi).all()
    log_z, mean, var = mp_trunc_gennorm(beta, mu, lam, lo, hi)
    assert math.isclose(dist.log_normalizer.item(), log_z, rel_tol=1e-10)
    assert math.isclose(dist.mean.item(), mean, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(dist.variance.item(), var, rel_tol=1e-6)
    assert abs(x.mean().item() - mean) <= 5 * math.sqrt(var / 2000) + 1e-15


def test_gennorm_deep_tail_log_gammaincc_against_mpmath():
    from unmix.distributions.factorized import _gammainccinv_log, _log_gammaincc

    a = np.array([1 / 3, 0.5, 2.0, 1 / 3])
    x = np.array([800.0, 5e3, 1e4, 3.0])
    got = _log_gammaincc(a, x)
    for ai, xi, gi in zip(a, x, got, strict=True):
        want = float(mpmath.log(mpmath.gammainc(ai, xi, mpmath.inf, regularized=True)))
        assert math.isclose(gi, want, rel_tol=1e-13)
    back = _gammainccinv_log(a, got)
    np.testing.assert_allclose(back, x, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------


def test_error_messages():
    z = torch.zeros(3, dtype=F64)
    with pytest.raises(ConfigError, match="'scale'.*positive"):
        Normal(z, 0.0)
    with pytest.raises(ConfigError, match="'scale'.*positive"):
        TruncatedLaplace(z, -1.0, 0.0, 1.0)
    with pytest.raises(ConfigError, match="'beta'.*positive"):
        GeneralizedNormal(z, 1.0, 0.0)
    with pytest.raises(ConfigError, match="'beta'.*positive"):
        TruncatedGeneralizedNormal(z, 1.0, -2.0, 0.0, 1.0)
    with pytest.raises(ConfigError, match="low < high"):
        TruncatedNormal(z, 1.0, 1.0, 1.0)
    with pytest.raises(ConfigError, match="low < high"):
        TruncatedNormal(z, 1.0, t64([0.0, 2.0, 0.0]), 1.0)
    with pytest.raises(ConfigError, match="'low'.*last dimension must be 3"):
        TruncatedNormal(z, 1.0, t64([0.0, 0.0]), 1.0)
    with pytest.raises(ConfigError, match="'scale'.*last dimension must be 3"):
        Laplace(z, t64([1.0, 2.0]))
    with pytest.raises(ConfigError, match="'loc'.*scalar"):
        Normal(0.0, 1.0)
    with pytest.raises(ConfigError, match="NaN or inf"):
        Normal(t64([0.0, math.nan]), 1.0)
    with pytest.raises(ConfigError, match="do not broadcast"):
        Normal(torch.zeros(2, 3, dtype=F64), torch.ones(4, 3, dtype=F64))
    with pytest.raises(ConfigError, match="last dimension must be 3"):
        Normal(z, 1.0).log_prob(torch.zeros(2, dtype=F64))
    with pytest.raises(NotImplementedError, match="no reparameterised sampler"):
        TruncatedNormal(z, 1.0, 0.0, 1.0).rsample()
