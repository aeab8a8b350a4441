"""SlowVAE objective and model: closed forms, Monte Carlo against quadrature, one training step."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from unmix.models.slowvae import SlowVAE
from unmix.objectives.base import Batch
from unmix.objectives.elbo import gaussian_entropy, kl_standard_normal
from unmix.objectives.slowvae import (
    SlowVAEObjective,
    gaussian_log_density,
    laplace_log_density,
    transition_kl_sample,
)
from unmix.registry import MODELS, OBJECTIVES


def test_gaussian_kl_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    mu, logvar = (
        torch.randn(6, 4, generator=g, dtype=torch.float64),
        torch.randn(6, 4, generator=g, dtype=torch.float64),
    )
    q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar))
    p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    ref = torch.distributions.kl_divergence(q, p).sum(-1)
    assert torch.allclose(kl_standard_normal(mu, logvar), ref, rtol=1e-12, atol=1e-12)


def test_laplace_and_gaussian_log_densities_match_scipy():
    x = torch.linspace(-3, 3, 41, dtype=torch.float64)
    loc, rate = 0.4, 6.0
    ref = stats.laplace.logpdf(x.numpy(), loc=loc, scale=1 / rate)
    got = laplace_log_density(x, torch.tensor(loc, dtype=torch.float64), rate).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    ref_n = stats.norm.logpdf(x.numpy(), loc=0.3, scale=0.7)
    d = torch.float64
    got_n = gaussian_log_density(
        x, torch.tensor(0.3, dtype=d), torch.tensor(2 * math.log(0.7), dtype=d)
    )
    got_n = got_n.numpy()
    np.testing.assert_allclose(got_n, ref_n, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mu1, s1, z0, rate", [(0.3, 0.2, 0.1, 6.0), (-0.5, 1.0, 0.4, 1.5)])
def test_transition_kl_monte_carlo_matches_quadrature(mu1, s1, z0, rate):
    """E_q[log q(z) − log p(z | z0)] for q = N(mu1, s1²), p = Laplace(z0, 1/rate): the MC
    estimate from reparameterised samples against scipy.integrate.quad, within 4 standard errors."""

    def integrand(z):
        return stats.norm.pdf(z, mu1, s1) * (
            stats.norm.logpdf(z, mu1, s1) - stats.laplace.logpdf(z, z0, 1 / rate)
        )

    exact, _ = integrate.quad(integrand, mu1 - 12 * s1, mu1 + 12 * s1, points=[z0], limit=200)
    n = 200_000
    g = torch.Generator().manual_seed(1)
    eps = torch.randn(n, 1, generator=g, dtype=torch.float64)
    mu = torch.full((n, 1), mu1, dtype=torch.float64)
    lv = torch.full((n, 1), 2 * math.log(s1), dtype=torch.float64)
    z = mu + s1 * eps
    est = transition_kl_sample(z, mu, lv, torch.full((n, 1), z0, dtype=torch.float64), rate)
    se = est.std().item() / math.sqrt(n)
    assert abs(est.mean().item() - exact) < 4 * se + 1e-9
    assert exact > 0


def test_objective_terms_and_a_training_step():
    torch.manual_seed(0)
    model = MODELS.build(MODELS.validate({"kind": "slowvae"}), out_dim=3, image_shape=(1, 32, 32))
    assert isinstance(model, SlowVAE) and math.isclose(model.rate.item(), 6.0, rel_tol=1e-6)
    assert "log_rate" not in dict(model.named_parameters())
    obj = OBJECTIVES.build(OBJECTIVES.validate({"kind": "slowvae"}))
    assert isinstance(obj, SlowVAEObjective) and (obj.beta, obj.gamma) == (1.0, 10.0)
    x = (torch.rand(8, 1, 32, 32) > 0.7).float()
    x_pos = torch.roll(x, 1, dims=-1)
    g = torch.Generator().manual_seed(0)
    t = obj.terms(model, x, x_pos, g)
    assert all(v.shape == (8,) for v in t.values())
    assert (t["kl_normal"] >= 0).all() and (t["rec"] > 0).all()
    loss = obj(model, Batch(x=x, x_pos=x_pos, generator=torch.Generator().manual_seed(0)))
    expect = (t["rec"] + t["kl_normal"] + 10 * t["kl_transition"]).mean()
    assert torch.allclose(loss, expect)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss.backward()
    opt.step()
    assert model(x).shape == (8, 3)
    learned = MODELS.build(
        MODELS.validate({"kind": "slowvae", "learn_rate": True, "likelihood": "gaussian"}),
        out_dim=2,
        image_shape=(1, 16, 16),
    )
    assert "log_rate" in dict(learned.named_parameters())


def test_objective_refuses_a_model_without_a_posterior():
    from unmix.errors import ConfigError

    x = torch.zeros(2, 1, 16, 16)
    with pytest.raises(ConfigError, match="model.kind: slowvae"):
        SlowVAEObjective()(torch.nn.Flatten(), Batch(x=x, x_pos=x))


@pytest.mark.parametrize("m, s, rate", [(0.0, 0.3, 6.0), (0.4, 0.2, 6.0), (-1.2, 0.9, 1.5)])
def test_laplace_cross_entropy_matches_quadrature(m, s, rate):
    """−E_{N(m, s²)} log Laplace(u; 0, 1/λ), closed form against scipy.integrate.quad."""
    from unmix.objectives.slowvae import laplace_cross_entropy

    def integrand(u):
        return -stats.norm.pdf(u, m, s) * stats.laplace.logpdf(u, 0.0, 1 / rate)

    exact, _ = integrate.quad(integrand, m - 14 * s, m + 14 * s, points=[0.0], limit=200)
    d = torch.float64
    got = laplace_cross_entropy(
        torch.tensor(m, dtype=d), torch.tensor(2 * math.log(s), dtype=d), rate
    )
    assert math.isclose(got.item(), exact, rel_tol=1e-9, abs_tol=1e-9)


def test_gaussian_entropy_matches_scipy():
    for s in (0.05, 1.0, 3.0):
        got = gaussian_entropy(torch.tensor([2 * math.log(s)], dtype=torch.float64)).item()
        assert math.isclose(got, stats.norm(0, s).entropy(), rel_tol=1e-12)


def test_reference_transition_matches_a_loop_over_pairs_and_dimensions():
    """``transition: reference``: each pair's terms against a scalar loop written from the released
    code's definitions (quadrature for the cross-entropies, scipy for entropies and KLs)."""
    torch.manual_seed(0)
    model = MODELS.build(MODELS.validate({"kind": "slowvae"}), out_dim=2, image_shape=(1, 16, 16))
    model = model.double()
    obj = OBJECTIVES.build(OBJECTIVES.validate({"kind": "slowvae", "transition": "reference"}))
    x = (torch.rand(3, 1, 16, 16) > 0.6).double()
    x_pos = torch.roll(x, 2, dims=-2)
    t = obj.terms(model, x, x_pos, torch.Generator().manual_seed(0))
    with torch.no_grad():
        mu, logvar = model.encode(torch.cat([x, x_pos]))
    rate = model.rate.item()
    for i in range(3):
        kl_n, trans = 0.0, 0.0
        for k in range(2):
            m0, m1 = mu[i, k].item(), mu[3 + i, k].item()
            s0, s1 = math.exp(0.5 * logvar[i, k].item()), math.exp(0.5 * logvar[3 + i, k].item())
            for m, s in ((m0, s0), (m1, s1)):
                kl_n += 0.5 * (m * m + s * s - 1 - 2 * math.log(s))
            for m, s, loc in ((m0, s0, m1), (m1, s1, m0)):
                ce, _ = integrate.quad(
                    lambda u, m=m, s=s, loc=loc: (
                        -stats.norm.pdf(u, m, s) * stats.laplace.logpdf(u, loc, 1 / rate)
                    ),
                    m - 14 * s,
                    m + 14 * s,
                    points=[loc],
                    limit=200,
                )
                trans += ce
            trans -= 0.5 * (stats.norm(0, s0).entropy() + stats.norm(0, s1).entropy())
        assert math.isclose(t["kl_normal"][i].item(), kl_n / 2, rel_tol=1e-9)
        assert math.isclose(t["kl_transition"][i].item(), trans, rel_tol=1e-7, abs_tol=1e-9)
    loss = obj(model, Batch(x=x, x_pos=x_pos, generator=torch.Generator().manual_seed(0)))
    assert torch.allclose(loss, (t["rec"] + t["kl_normal"] + 10 * t["kl_transition"]).mean())


def test_transition_choice_is_validated_in_one_line():
    from unmix.errors import ConfigError

    with pytest.raises(ConfigError, match="transition"):
        SlowVAEObjective(transition="mean")
    with pytest.raises(Exception, match="transition"):
        OBJECTIVES.validate({"kind": "slowvae", "transition": "mean"})
