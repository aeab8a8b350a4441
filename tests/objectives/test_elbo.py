"""The VAE's ELBO (paper 004, eq. (1)) against closed forms, scipy quadrature and log p(x).

References: torch.distributions for the Gaussian pieces; the closed-form linear-Gaussian ELBO and
evidence of :mod:`unmix.papers.reizinger.checks` (independent code); a 1-d model with a uniform or Beta prior
whose log p(x) and ELBO are computed by ``scipy.integrate.quad``.
"""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize, stats
from torch import nn

from unmix.errors import ConfigError
from unmix.models.vae import VAEPrior
from unmix.objectives.elbo import (
    ELBO,
    gaussian_entropy,
    gaussian_log_likelihood,
    kl_divergence,
    kl_standard_normal,
)
from unmix.papers.reizinger import checks as ima

D64 = torch.float64
GAP_MAX = 0.01  # measured 0.0009 (uniform) and 0.0007 (Beta(2, 3))


class FixedQ(nn.Module):
    """A stand-in VAE with a given posterior (mu, logvar) and decoder, to probe the ELBO."""

    def __init__(self, mu, logvar, decoder, prior, gamma2):
        super().__init__()
        self.mu, self.logvar = mu, logvar
        self.decoder, self.prior = decoder, prior
        self.gamma2 = torch.tensor(float(gamma2), dtype=D64)

    def encode(self, x):
        return self.mu.expand(x.shape[0], -1), self.logvar.expand(x.shape[0], -1)

    def decode(self, u):
        return self.decoder(self.prior.to_latent(u))


def test_gaussian_pieces_match_torch_distributions():
    g = torch.Generator().manual_seed(0)
    x, m = torch.randn(5, 4, generator=g, dtype=D64), torch.randn(5, 4, generator=g, dtype=D64)
    gamma2 = 37.0
    ref = torch.distributions.Normal(m, gamma2**-0.5).log_prob(x).sum(-1)
    torch.testing.assert_close(gaussian_log_likelihood(x, m, gamma2), ref)
    mu, logvar = (
        torch.randn(5, 3, generator=g, dtype=D64),
        torch.randn(5, 3, generator=g, dtype=D64),
    )
    q = torch.distributions.Normal(mu, (0.5 * logvar).exp())
    p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    torch.testing.assert_close(
        kl_standard_normal(mu, logvar), torch.distributions.kl_divergence(q, p).sum(-1)
    )
    torch.testing.assert_close(gaussian_entropy(logvar), q.entropy().sum(-1))


@pytest.mark.parametrize(
    "kind, a, b", [("uniform", 1.0, 1.0), ("beta", 2.0, 5.0), ("beta", 0.5, 0.7)]
)
@pytest.mark.parametrize("mu, sigma", [(0.0, 1.0), (2.5, 0.05), (-1.0, 3.0), (4.0, 1e-3)])
def test_box_prior_kl_matches_quadrature(kind, a, b, mu, sigma):
    r"""KL[N(mu, sigma^2) || p_U] = int q (log q - log p_U) du, p_U(u) = Beta(s(u)) s'(u)."""
    prior = VAEPrior(kind, a, b)
    got = float(
        kl_divergence(
            prior, torch.tensor([[mu]], dtype=D64), torch.tensor([[2 * math.log(sigma)]], dtype=D64)
        )
    )

    def integrand(u):
        s = 1 / (1 + math.exp(-u))
        log_pu = stats.beta.logpdf(s, a, b) + math.log(s) + math.log1p(-s)
        return stats.norm.pdf(u, mu, sigma) * (stats.norm.logpdf(u, mu, sigma) - log_pu)

    ref, err = integrate.quad(integrand, mu - 12 * sigma, mu + 12 * sigma, limit=400, epsabs=1e-12)
    assert got == pytest.approx(ref, rel=1e-7, abs=1e-8)


def test_linear_gaussian_elbo_estimator_matches_closed_form_and_bounds_log_px():
    """Linear decoder A, Gaussian prior N(0, I): the MC ELBO agrees with the closed form of
    :func:`unmix.papers.reizinger.checks.elbo` within 4 standard errors, and is below log p(x)."""
    rng = np.random.default_rng(1)
    d, gamma2 = 3, 50.0
    a = torch.from_numpy(rng.normal(size=(d, d)))
    x = torch.from_numpy(rng.normal(size=d))
    decoder = nn.Linear(d, d, bias=False).to(D64).requires_grad_(False)
    decoder.weight.data = a.clone()
    prior = VAEPrior("gaussian")
    log_px = ima.log_evidence(x.numpy(), a.numpy(), np.ones(d), gamma2)
    obj = ELBO(mc_samples=20_000)
    for trial in range(5):
        mu = torch.from_numpy(rng.normal(size=(1, d)))
        logvar = torch.from_numpy(rng.normal(size=(1, d)) - 3)
        vae = FixedQ(mu, logvar, decoder, prior, gamma2)
        gen = torch.Generator().manual_seed(trial)
        # per-sample reconstruction terms, to get the standard error of the MC estimate
        eps = torch.randn((obj.mc_samples, 1, d), generator=gen, dtype=D64)
        rec = gaussian_log_likelihood(x, decoder(mu + (0.5 * logvar).exp() * eps), gamma2)
        est = float(rec.mean() - kl_standard_normal(mu, logvar).sum())
        se = float(rec.std()) / math.sqrt(obj.mc_samples)
        closed = float(ima.elbo(x, a, torch.ones(d, dtype=D64), gamma2, mu[0], logvar[0]))
        assert abs(est - closed) <= 4 * se + 1e-12
        terms = obj.terms(vae, x[None], torch.Generator().manual_seed(trial))
        assert float(terms.elbo) == pytest.approx(est, rel=1e-12)
        assert closed < log_px
    # at the ELBO-optimal factorised posterior the bound is tight up to the IMA gap (>= 0)
    mu_s, s2, elbo_star, _ = ima.optimal_posterior(x, a, torch.ones(d, dtype=D64), gamma2)
    vae = FixedQ(mu_s[None], s2.log()[None], decoder, prior, gamma2)
    terms = ELBO(mc_samples=50_000).terms(vae, x[None], torch.Generator().manual_seed(9))
    assert float(terms.elbo) == pytest.approx(elbo_star, abs=0.05)
    assert elbo_star <= log_px


@pytest.mark.parametrize("kind, a, b", [("uniform", 1.0, 1.0), ("beta", 2.0, 3.0)])
def test_one_dimensional_box_prior_elbo_is_below_log_px_by_quadrature(kind, a, b):
    """z ~ Beta(a, b) on (0, 1), x | z ~ N(f(z), 1/gamma2), f(z) = 2z + 0.5 sin(3z): log p(x) by
    quadrature over z; the ELBO of q(u) = N(mu, sigma^2), z = sigmoid(u), by quadrature over u,
    agrees with the MC estimator (4 SE) and never exceeds log p(x)."""
    gamma2 = 40.0
    x_obs = 1.1

    def f_np(z):
        return 2 * z + 0.5 * np.sin(3 * z)

    log_px = math.log(
        integrate.quad(
            lambda z: stats.norm.pdf(x_obs, f_np(z), gamma2**-0.5) * stats.beta.pdf(z, a, b),
            0,
            1,
            limit=400,
        )[0]
    )

    class F(nn.Module):
        def forward(self, z):
            return 2 * z + 0.5 * torch.sin(3 * z)

    prior = VAEPrior(kind, a, b)

    def quad_elbo(mu, sigma):
        def integrand(u):
            s = 1 / (1 + math.exp(-u))
            log_pu = stats.beta.logpdf(s, a, b) + math.log(s) + math.log1p(-s)
            log_lik = stats.norm.logpdf(x_obs, f_np(s), gamma2**-0.5)
            return stats.norm.pdf(u, mu, sigma) * (
                log_lik + log_pu - stats.norm.logpdf(u, mu, sigma)
            )

        return integrate.quad(integrand, mu - 12 * sigma, mu + 12 * sigma, limit=400)[0]

    for mu, sigma in [(0.0, 1.0), (0.3, 0.2), (-0.5, 0.05), (1.5, 0.5)]:
        ref = quad_elbo(mu, sigma)
        assert ref < log_px
        vae = FixedQ(
            torch.tensor([[mu]], dtype=D64),
            torch.tensor([[2 * math.log(sigma)]], dtype=D64),
            F(),
            prior,
            gamma2,
        )
        n = 40_000
        t = ELBO(mc_samples=n).terms(
            vae, torch.tensor([[x_obs]], dtype=D64), torch.Generator().manual_seed(3)
        )
        # standard error from the reconstruction samples (the KL part is deterministic)
        eps = torch.randn((n, 1, 1), generator=torch.Generator().manual_seed(3), dtype=D64)
        rec = gaussian_log_likelihood(
            torch.tensor([[x_obs]], dtype=D64), vae.decode(vae.mu + sigma * eps), gamma2
        )
        se = float(rec.std()) / math.sqrt(n)
        assert abs(float(t.elbo) - ref) <= 4 * se + 1e-9
    # the best logit-normal q: the bound holds and is nearly tight (the posterior is near-Gaussian)
    zs = np.linspace(1e-4, 1 - 1e-4, 20_001)  # start at the posterior mode, in u
    z_mode = zs[
        np.argmax(stats.norm.logpdf(x_obs, f_np(zs), gamma2**-0.5) + stats.beta.logpdf(zs, a, b))
    ]
    res = optimize.minimize(
        lambda th: -quad_elbo(th[0], math.exp(th[1])),
        x0=[math.log(z_mode / (1 - z_mode)), math.log(0.1)],
        method="Nelder-Mead",
        options={"xatol": 1e-4, "fatol": 1e-7},
    )
    gap = log_px + res.fun
    assert 0 < gap < GAP_MAX


def test_loss_weights_the_kl_and_is_reproducible():
    d = 2
    prior = VAEPrior("gaussian")
    dec = nn.Linear(d, d).to(D64)
    vae = FixedQ(
        torch.zeros(1, d, dtype=D64), torch.full((1, d), -2.0, dtype=D64), dec, prior, 10.0
    )
    x = torch.randn(6, d, generator=torch.Generator().manual_seed(0), dtype=D64)
    t = ELBO().terms(vae, x, torch.Generator().manual_seed(1))
    for beta in (0.0, 1.0, 4.0):
        loss = ELBO(kl_weight=beta)(vae, x, torch.Generator().manual_seed(1))
        torch.testing.assert_close(loss, -(t.reconstruction - beta * t.kl).mean())
    t2 = ELBO().terms(vae, x, torch.Generator().manual_seed(1))
    torch.testing.assert_close(t.elbo, t2.elbo)
    torch.testing.assert_close(t.elbo, t.reconstruction - t.kl)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"kl_weight": -1.0}, "kl_weight"),
        ({"mc_samples": 0}, "mc_samples"),
        ({"mc_samples": 1.5}, "mc_samples"),
    ],
)
def test_bad_arguments_raise_config_errors(kwargs, words):
    with pytest.raises(ConfigError, match=words):
        ELBO(**kwargs)


def test_batch_must_be_two_dimensional():
    vae = FixedQ(torch.zeros(1, 2), torch.zeros(1, 2), nn.Identity(), VAEPrior(), 1.0)
    with pytest.raises(ConfigError, match=r"\(B, D\)"):
        ELBO().terms(vae, torch.zeros(2))
