"""Paper 004's Gaussian VAE: priors against scipy, the model's pieces, and its settings / training.

References: scipy.stats (Beta and normal densities), scipy.integrate.quad (normalisation and
Gaussian expectations), autograd (curvature), a KS test for prior samples, and the change-of-
variables / closed-form linear-Gaussian evidence for the evaluation's log p(x).
"""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from unmix.errors import ConfigError
from unmix.experiment import Experiment
from unmix.models.vae import GaussianVAE, VAEPrior, gauss_hermite_expectation
from unmix.settings import Setting
from unmix.train import train

D64 = torch.float64
PRIORS = [("uniform", 1.0, 1.0), ("beta", 2.0, 5.0), ("beta", 0.5, 0.5)]


def _sigmoid(u):
    return 1 / (1 + np.exp(-u))


@pytest.mark.parametrize("kind, a, b", PRIORS)
def test_box_prior_density_on_u_is_normalised_and_matches_scipy(kind, a, b):
    prior = VAEPrior(kind, a, b)
    u = np.linspace(-12, 12, 97)
    got = prior.log_prob_u(torch.from_numpy(u)).numpy()
    s = _sigmoid(u)
    ref = stats.beta.logpdf(s, a, b) + np.log(s) + np.log1p(-s)  # p0(s(u)) s'(u)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
    total, _ = integrate.quad(
        lambda v: math.exp(float(prior.log_prob_u(torch.tensor(v, dtype=D64)))), -60, 60, limit=400
    )
    assert total == pytest.approx(1.0, abs=1e-8)
    z = torch.tensor([0.1, 0.5, 0.93, -0.1, 1.2], dtype=D64)
    lz = prior.log_prob_z(z).numpy()
    np.testing.assert_allclose(lz[:3], stats.beta.logpdf(z[:3].numpy(), a, b), rtol=1e-10)
    assert np.all(np.isneginf(lz[3:]))


def test_gaussian_prior_matches_scipy():
    prior = VAEPrior("gaussian")
    u = torch.linspace(-5, 5, 11, dtype=D64)
    np.testing.assert_allclose(
        prior.log_prob_u(u).numpy(), stats.norm.logpdf(u.numpy()), rtol=1e-12
    )
    np.testing.assert_allclose(
        prior.log_prob_z(u).numpy(), stats.norm.logpdf(u.numpy()), rtol=1e-12
    )
    assert torch.equal(prior.to_latent(u), u)
    assert torch.equal(prior.curvature_u(u), torch.ones_like(u))


@pytest.mark.parametrize("kind, a, b", [("gaussian", 1.0, 1.0), *PRIORS])
def test_curvature_is_minus_second_derivative(kind, a, b):
    prior = VAEPrior(kind, a, b)
    u = torch.linspace(-6, 6, 25, dtype=D64, requires_grad=True)
    (g,) = torch.autograd.grad(prior.log_prob_u(u).sum(), u, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), u)
    torch.testing.assert_close(prior.curvature_u(u.detach()), -h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind, a, b", PRIORS)
@pytest.mark.parametrize("mu, sigma", [(0.0, 1.0), (3.0, 0.01), (-1.5, 2.5)])
def test_gauss_hermite_expectations_match_quadrature(kind, a, b, mu, sigma):
    prior = VAEPrior(kind, a, b)
    m, lv = torch.tensor([mu], dtype=D64), torch.tensor([2 * math.log(sigma)], dtype=D64)

    def expect(fn):
        return integrate.quad(
            lambda v: stats.norm.pdf(v, mu, sigma) * fn(v),
            mu - 12 * sigma,
            mu + 12 * sigma,
            limit=400,
            epsabs=1e-13,
        )[0]

    e_logp = expect(lambda v: float(prior.log_prob_u(torch.tensor(v, dtype=D64))))
    e_z = expect(lambda v: float(_sigmoid(v)))
    assert float(prior.expected_log_prob_u(m, lv)) == pytest.approx(e_logp, rel=1e-7, abs=1e-9)
    assert float(prior.posterior_mean(m, lv)) == pytest.approx(e_z, rel=1e-7, abs=1e-10)


def test_gauss_hermite_is_exact_for_polynomials():
    mu, lv = torch.tensor([0.7, -2.0], dtype=D64), torch.tensor([0.3, -1.0], dtype=D64)
    s2 = lv.exp()
    got = gauss_hermite_expectation(lambda u: u**4, mu, lv)
    torch.testing.assert_close(got, mu**4 + 6 * mu**2 * s2 + 3 * s2**2, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "kind, a, b", [("uniform", 1.0, 1.0), ("beta", 2.0, 5.0), ("gaussian", 1, 1)]
)
def test_prior_samples_follow_the_prior(kind, a, b):
    z = VAEPrior(kind, a, b).sample((4000,), torch.Generator().manual_seed(0), D64).numpy()
    cdf = stats.norm.cdf if kind == "gaussian" else (lambda v: stats.beta.cdf(v, a, b))
    assert stats.kstest(z, cdf).pvalue > 1e-3  # fixed seed; 4000 draws


def test_vae_shapes_init_and_posterior_mean_in_box():
    torch.manual_seed(0)
    vae = GaussianVAE(3, hidden=(4, 4), prior=VAEPrior("uniform"), gamma2=1e4)
    assert [m.out_features for m in vae.encoder if hasattr(m, "out_features")] == [12, 12, 6]
    assert [m.out_features for m in vae.decoder if hasattr(m, "out_features")] == [12, 12, 3]
    bias = vae.encoder[-1].bias.detach()
    torch.testing.assert_close(bias[3:], torch.full((3,), -math.log(100.0)))
    x = torch.randn(7, 3)
    mu, logvar = vae.encode(x)
    assert mu.shape == logvar.shape == (7, 3)
    z = vae(x)
    assert z.shape == (7, 3) and bool(((z > 0) & (z < 1)).all())
    assert float(vae.gamma2) == pytest.approx(1e4, rel=1e-6)
    assert vae.decode(mu).shape == (7, 3)


def test_gamma_warmup_schedule_and_learned_gamma():
    vae = GaussianVAE(2, gamma2=1e5, gamma2_warmup_steps=10, gamma2_start=1e1)
    seen = []
    for _ in range(12):
        seen.append(float(vae.gamma2))
        vae.advance()
    expected = [10 ** (1 + 4 * min(1.0, k / 10)) for k in range(12)]
    np.testing.assert_allclose(seen, expected, rtol=1e-5)
    assert "step" in vae.state_dict()
    learned = GaussianVAE(2, gamma2=50.0, learn_gamma=True)
    assert any(p is learned.log_gamma2 for p in learned.parameters())
    fixed = GaussianVAE(2, gamma2=50.0)
    assert all(p is not fixed.log_gamma2 for p in fixed.parameters())


def test_fixed_decoder_is_frozen():
    dec = torch.nn.Linear(2, 2)
    vae = GaussianVAE(2, decoder=dec)
    assert vae.fixed_decoder and not any(p.requires_grad for p in dec.parameters())


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"gamma2": 0.0}, "gamma2"),
        ({"gamma2": float("inf")}, "gamma2"),
        ({"learn_gamma": True, "gamma2_warmup_steps": 5}, "learn_gamma"),
        ({"gamma2_warmup_steps": -1}, "gamma2_warmup_steps"),
        ({"gamma2_start": -2.0}, "gamma2_start"),
        ({"hidden": (0,)}, "hidden"),
    ],
)
def test_bad_vae_arguments(kwargs, words):
    with pytest.raises(ConfigError, match=words):
        GaussianVAE(2, **kwargs)


@pytest.mark.parametrize(
    "args, words",
    [(("laplace",), "gaussian"), (("beta", 0.0, 1.0), "alpha"), (("uniform", 2.0, 1.0), "Beta")],
)
def test_bad_priors(args, words):
    with pytest.raises(ConfigError, match=words):
        VAEPrior(*args)


def test_learned_beta_prior_matches_scipy_per_dimension():
    prior = VAEPrior("beta", 2.0, 2.0, learn=True, dim=3)
    shapes = np.array([[0.7, 3.0], [2.0, 2.0], [9.0, 1.5]])
    with torch.no_grad():
        prior.log_alpha.copy_(torch.log(torch.from_numpy(shapes[:, 0])))
        prior.log_beta.copy_(torch.log(torch.from_numpy(shapes[:, 1])))
    u = np.linspace(-8, 8, 41)[:, None].repeat(3, 1)
    s = _sigmoid(u)
    ref = stats.beta.logpdf(s, shapes[:, 0], shapes[:, 1]) + np.log(s) + np.log1p(-s)
    got = prior.log_prob_u(torch.from_numpy(u)).detach().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)  # float32 shapes
    lz = prior.log_prob_z(torch.from_numpy(s)).detach().numpy()
    np.testing.assert_allclose(lz, stats.beta.logpdf(s, shapes[:, 0], shapes[:, 1]), rtol=1e-5)
    ut = torch.from_numpy(u).requires_grad_(True)
    (g,) = torch.autograd.grad(prior.log_prob_u(ut).sum(), ut, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), ut)
    torch.testing.assert_close(prior.curvature_u(ut.detach()).detach(), -h, rtol=1e-5, atol=1e-6)
    mu, sigma = torch.tensor([[0.3, -2.0, 1.5]], dtype=D64), torch.tensor([0.5, 1.2, 0.05])
    got = prior.expected_log_prob_u(mu, 2 * torch.log(sigma).double()).detach()[0]
    for k in range(3):
        ref, _ = integrate.quad(
            lambda v, k=k: (
                stats.norm.pdf(v, float(mu[0, k]), float(sigma[k]))
                * float(prior.log_prob_u(torch.full((1, 3), v, dtype=D64))[0, k].detach())
            ),
            -40,
            40,
            points=[float(mu[0, k])],
            limit=200,
        )
        assert float(got[k]) == pytest.approx(ref, abs=1e-5)
    z = prior.sample((20_000, 3), generator=torch.Generator().manual_seed(0), dtype=D64)
    for k in range(3):
        assert stats.kstest(z[:, k].numpy(), stats.beta(*shapes[k]).cdf).pvalue > 1e-3


def test_learned_beta_prior_trains_to_the_maximum_likelihood_shapes():
    # Maximising the mean log-density of logit(z), z ~ Beta(a_k, b_k), is the maximum-likelihood
    # fit of the shapes; it must land on scipy's fit of the same draws.
    true = [(5.0, 3.0), (2.0, 6.0)]
    rng = np.random.default_rng(0)
    z = np.stack([rng.beta(a, b, 4000) for a, b in true], 1)
    u = torch.logit(torch.from_numpy(z)).float()
    prior = VAEPrior("beta", 2.0, 2.0, learn=True, dim=2)
    assert len(list(prior.parameters())) == 2
    opt = torch.optim.Adam(prior.parameters(), lr=0.05)
    for _ in range(600):
        opt.zero_grad()
        (-prior.log_prob_u(u).sum(-1).mean()).backward()
        opt.step()
    a, b = (t.detach() for t in prior.shapes()[:2])
    for k in range(2):
        ref_a, ref_b, _, _ = stats.beta.fit(z[:, k], floc=0, fscale=1)
        assert float(a[k]) == pytest.approx(ref_a, rel=0.02)
        assert float(b[k]) == pytest.approx(ref_b, rel=0.02)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"kind": "gaussian", "learn": True, "dim": 2}, "only a Beta prior"),
        ({"kind": "beta", "learn": True}, "dim"),
    ],
)
def test_bad_learned_priors(kwargs, words):
    with pytest.raises(ConfigError, match=words):
        VAEPrior(**kwargs)


# ------------------------------------------------------------------ settings, training, evaluation
def vae_setting(**over) -> Setting:
    data = {
        "name": "vae-tiny",
        "latent": {"space": "box", "dim": 2, "low": -0.5, "high": 0.5},
        "mixing": {"kind": "moebius", "center": True, "center_samples": 2000},
        "model": {"kind": "vae", "hidden": [4, 4], "vae": {"prior": "uniform", "gamma2": 1e3}},
        "objective": {"kind": "elbo"},
        "train": {
            "steps": 20,
            "batch_size": 32,
            "lr": 1e-3,
            "eval_every": 10,
            "eval_samples": 64,
            "checkpoint_every": 10,
        },
    }
    for k, v in over.items():
        node = data
        *parents, leaf = k.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = v
    return Setting.from_dict(data)


@pytest.mark.parametrize(
    "over, words",
    [
        ({"objective.kind": "infonce"}, "go together"),
        ({"model.kind": "mlp", "model.vae": None}, "go together"),
        ({"model.vae.prior_alpha": 2.0}, "prior_alpha"),
        ({"model.vae.learn_prior": True}, "learn_prior"),
        ({"model.vae.decoder": "broadcast"}, "backbone: conv"),
        ({"model.vae.gamma2": -1.0}, "gamma2"),
        ({"model.vae.learn_gamma": True, "model.vae.gamma2_warmup_steps": 3}, "warm-up"),
        ({"model.vae.decoder": "ground_truth", "mixing.kind": "identity"}, "ground_truth"),
        ({"objective.kl_weight": -1.0}, "kl_weight"),
        ({"latent.space": "sphere"}, "sphere"),
        ({"model.standardize_input": True}, "standardize_input"),
    ],
)
def test_invalid_vae_settings_name_the_field(over, words):
    with pytest.raises(ConfigError) as info:
        vae_setting(**over)
    assert words in str(info.value) and "Traceback" not in str(info.value)


def test_contrastive_settings_still_need_a_conditional():
    with pytest.raises(ConfigError, match="needs positive pairs"):
        Setting.from_dict({"latent": {"space": "sphere", "dim": 3}})
    with pytest.raises(ConfigError, match="objective.kl_weight: unknown field"):
        Setting.from_dict(
            {
                "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 1}},
                "objective": {"kind": "infonce", "kl_weight": 2.0},
            }
        )
    with pytest.raises(ConfigError, match="model.vae: unknown field"):
        Setting.from_dict(
            {
                "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 1}},
                "model": {"vae": {"gamma2": 3.0}},
            }
        )


def test_vae_setting_round_trips_and_fills_the_vae_section():
    s = vae_setting()
    assert Setting.from_dict(s.to_dict()) == s
    bare = vae_setting(**{"model.vae": None})
    assert bare.model.vae is not None and bare.model.vae.gamma2 == 1e5


def test_training_resumes_to_the_same_numbers(tmp_path):
    s = vae_setting(**{"model.vae.gamma2_warmup_steps": 15, "model.vae.gamma2_start": 10.0})
    full = train(s, tmp_path / "full")
    part = train(s.replace(**{"train.steps": 10}), tmp_path / "part")
    assert part.summary["steps"] == 10
    # continue the interrupted run: the checkpoint at step 10 holds the γ² warm-up counter too
    (tmp_path / "part" / "summary.json").unlink()
    state = torch.load(tmp_path / "part" / "checkpoint.pt", weights_only=False)
    state["setting"] = s.to_dict()
    torch.save(state, tmp_path / "part" / "checkpoint.pt")
    resumed = train(s, tmp_path / "part", resume=True)
    assert resumed.summary["loss"] == full.summary["loss"]
    assert resumed.summary["elbo"] == full.summary["elbo"]
    assert int(resumed.experiment.encoder.step) == 20
    for key in ("mcc", "mcc_sample", "elbo", "c_ima", "posterior_var", "eq12_rhs", "recon_error"):
        assert key in full.summary and np.isfinite(full.summary[key])


def test_evaluation_log_px_of_a_linear_ground_truth_decoder():
    """Volume-preserving linear mixing M (|det M| = 1), standard normal sources and prior, decoder
    fixed to M: log p(x) (change of variables) = mean log N(z; 0, I), and it agrees with the exact
    finite-γ evidence log N(x; 0, MMᵀ + γ⁻²I) up to O(1/γ²)."""
    s = Setting.from_dict(
        {
            "latent": {
                "space": "euclidean",
                "dim": 3,
                "marginal": {"kind": "normal", "scale": 1.0},
            },
            "mixing": {"kind": "volume_preserving"},
            "model": {
                "kind": "vae",
                "hidden": [4],
                "vae": {"gamma2": 1e4, "decoder": "ground_truth"},
            },
            "objective": {"kind": "elbo"},
            "train": {"steps": 0, "eval_samples": 256},
        }
    )
    exp = Experiment.build(s)
    z = exp.eval_data()
    out = exp.evaluate(z)
    ref = float(stats.norm.logpdf(z.double().numpy()).sum(-1).mean())
    assert out["log_px"] == pytest.approx(ref, abs=1e-4)
    m = exp.mixing.matrix.double().numpy()
    x = (z.double().numpy()) @ m.T
    cov = m @ m.T + np.eye(3) / 1e4
    exact = stats.multivariate_normal(np.zeros(3), cov).logpdf(x).mean()
    assert out["log_px"] == pytest.approx(exact, abs=1e-2)
    from unmix.metrics import c_ima_from_jacobian

    assert out["c_ima_mixing"] == pytest.approx(
        float(c_ima_from_jacobian(exp.mixing.matrix.double())), abs=1e-5
    )
    assert out["gap"] == pytest.approx(out["log_px"] - out["elbo"])
    assert out["l_ima"] == pytest.approx(out["log_px"] - out["c_ima_mixing"])


def test_centred_mixing_has_mean_zero_and_the_same_jacobian():
    s = vae_setting(**{"mixing.center_samples": 20_000})
    exp = Experiment.build(s)
    z = exp.process.sample(20_000, torch.Generator().manual_seed(7))
    x = exp.mixing(z).double()
    se = x.std(0) / math.sqrt(z.shape[0])
    assert bool((x.mean(0).abs() <= 5 * math.sqrt(2) * se).all())  # two independent estimates
    torch.testing.assert_close(exp.mixing.jacobian(z[:5]), exp.mixing.inner.jacobian(z[:5]))
