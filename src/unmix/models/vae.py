r"""The Gaussian VAE of Reizinger et al. (2022, paper 004), eq. (3), and its priors.

Generative side: :math:`z \sim p_0(z)`, :math:`x | z \sim \mathcal N(f^\theta(z), \gamma^{-2} I_d)`
— a decoder *mean* network :math:`f^\theta` and an isotropic Gaussian likelihood of precision
:math:`\gamma^2` (variance :math:`1/\gamma^2`), fixed or learned. Inference side: a factorised
Gaussian :math:`q_\phi(u | x) = \mathcal N(\mu^\phi(x), \operatorname{diag}\sigma^\phi(x)^2)` whose
mean and log-variance come from one encoder MLP.

Priors (:class:`VAEPrior`)
--------------------------
* ``gaussian``: :math:`p_0 = \mathcal N(0, I)`, and :math:`z = u` — the textbook VAE.
* ``uniform`` and ``beta``: :math:`p_0` on the open unit box :math:`(0, 1)^d`, per dimension
  :math:`\mathrm{Beta}(\alpha, \beta)` (uniform is :math:`\alpha = \beta = 1`). **How the support is
  respected.** The encoder's Gaussian lives on the unconstrained :math:`u \in \mathbb R^d` and
  :math:`z = s(u)`, :math:`s` the logistic sigmoid, a bijection :math:`\mathbb R \to (0, 1)`. The
  model is rewritten exactly on :math:`u`: prior density (change of variables)

  .. math::

      p_U(u) = p_0(s(u))\, s'(u) = \frac{s(u)^\alpha (1 - s(u))^\beta}{B(\alpha, \beta)},
      \qquad \log p_U(u) = -\alpha\,\mathrm{softplus}(-u) - \beta\,\mathrm{softplus}(u)
      - \log B(\alpha, \beta),

  and decoder mean :math:`f^\theta(s(u))`. Since :math:`s` is a bijection, this model has the same
  marginal :math:`p_\theta(x)` as the one on :math:`z`, so the ELBO on :math:`u` is a lower bound
  on the same :math:`\log p_\theta(x)`; every decoded latent lies strictly inside the box, and the
  variational posterior on :math:`z` is the logit-normal :math:`s_*q_\phi`. (Paper 004's code uses
  the same sigmoid-plus-log-Jacobian construction.) :math:`\log p_U` is concave for all
  :math:`\alpha, \beta > 0`, so Assumption 1's log-concave prior holds on :math:`u`.

The quantities Theorem 1 talks about are computed in :math:`u`: the posterior variances
:math:`\sigma_k^2`, the prior curvature :math:`-\partial_k^2 \log p_U` (1 for the Gaussian;
:math:`(\alpha + \beta)s(u)(1 - s(u))` for the box priors) and the decoder Jacobian of
:math:`u \mapsto f^\theta(s(u))` (:meth:`GaussianVAE.decode`). The IMA contrast is the same in
:math:`u` and :math:`z`, since :math:`s` acts elementwise (it rescales the Jacobian's columns).

Expectations under :math:`q` of functions of one coordinate (:math:`\mathbb E_q[\log p_U(u_k)]`,
the posterior mean :math:`\mathbb E_q[s(u_k)]`) use Gauss–Hermite quadrature with
:data:`GH_NODES` nodes (smooth integrands; checked against ``scipy.integrate.quad`` in the tests).

Architecture (paper 004's code, README facts): encoder MLP :math:`d \to \dots \to 2d`
(mean, log-variance), decoder MLP :math:`d \to \dots \to d`, LeakyReLU(0.2) after each hidden
layer; the hidden widths are multiples of :math:`d` (``hidden``). unmix initialises the
log-variance output's bias at :math:`-\log\min(\gamma^2, \gamma^2_{start})` (default
:math:`\gamma^2_{start} = 100`: posterior standard deviations of 0.1 at the start) instead of 0, so
that a large-:math:`\gamma` VAE does not spend its first thousands of Adam steps walking that bias
down; the start does not depend on the target :math:`\gamma^2` beyond 100, so the
:math:`1/\gamma^2` law of the trained variances (Fig. 2) is learned, not built in (an unmix
choice, not the paper's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from unmix.errors import ConfigError
from unmix.models.linear import Linear

__all__ = ["GH_NODES", "VAEPrior", "GaussianVAE", "gauss_hermite_expectation", "mlp"]

GH_NODES = 64
"""Gauss–Hermite nodes for one-dimensional Gaussian expectations."""

PriorKind = Literal["gaussian", "uniform", "beta"]


@lru_cache(maxsize=8)
def _hermgauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    nodes, weights = np.polynomial.hermite.hermgauss(n)
    return nodes, weights / math.sqrt(math.pi)


def gauss_hermite_expectation(
    fn, mu: torch.Tensor, logvar: torch.Tensor, n: int = GH_NODES
) -> torch.Tensor:
    r""":math:`\mathbb E_{u \sim \mathcal N(\mu, e^{\text{logvar}})}[\text{fn}(u)]`, elementwise.

    Gauss–Hermite: :math:`\pi^{-1/2}\sum_i w_i\, \text{fn}(\mu + \sqrt2\,\sigma\, t_i)` with the
    ``n`` nodes :math:`t_i` and weights :math:`w_i` of :math:`\int e^{-t^2} g(t)\,dt`. Exact for
    polynomials of degree :math:`< 2n`; differentiable in ``mu`` and ``logvar``.
    """
    t, w = _hermgauss(n)
    t = torch.as_tensor(t, dtype=mu.dtype, device=mu.device)
    w = torch.as_tensor(w, dtype=mu.dtype, device=mu.device)
    sigma = torch.exp(0.5 * logvar)
    u = mu.unsqueeze(-1) + math.sqrt(2.0) * sigma.unsqueeze(-1) * t
    return (fn(u) * w).sum(-1)


class VAEPrior(nn.Module):
    r"""The VAE's prior :math:`p_0` and the latent map :math:`z = h(u)` (module docstring).

    ``kind``: ``gaussian`` (:math:`\mathcal N(0, I)`, :math:`h = \mathrm{id}`), ``uniform`` (on
    :math:`(0, 1)^d`) or ``beta`` (:math:`\mathrm{Beta}(\alpha, \beta)` per dimension on
    :math:`(0, 1)^d`); for both box priors :math:`h` is the sigmoid. ``alpha``, ``beta`` > 0 are the
    Beta shapes (1, 1 for uniform). All methods act elementwise on ``(..., d)`` tensors.
    """

    def __init__(
        self,
        kind: PriorKind = "gaussian",
        alpha: float = 1.0,
        beta: float = 1.0,
        learn: bool = False,
        dim: int | None = None,
    ):
        super().__init__()
        if kind not in ("gaussian", "uniform", "beta"):
            raise ConfigError(f"VAE prior must be 'gaussian', 'uniform' or 'beta', got {kind!r}.")
        for name, v in (("alpha", alpha), ("beta", beta)):
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ConfigError(f"Beta prior's '{name}' must be a finite number > 0, got {v!r}.")
        if kind == "uniform" and (alpha != 1.0 or beta != 1.0):
            raise ConfigError("the uniform prior is Beta(1, 1): pass kind='beta' for other shapes.")
        if learn and kind != "beta":
            raise ConfigError(
                f"only a Beta prior has shapes to learn; prior {kind!r} has none: set "
                "kind='beta' or learn=False."
            )
        if learn and not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1):
            raise ConfigError(
                f"a learned Beta prior needs the latent dimension: pass dim >= 1, got {dim!r}."
            )
        self.kind = kind
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.learn = bool(learn)
        self.log_beta_fn = (
            math.lgamma(self.alpha) + math.lgamma(self.beta) - math.lgamma(self.alpha + self.beta)
        )
        if self.learn:
            # One (α_k, β_k) per latent, as log-shapes (positive for every parameter value),
            # initialised at the given shapes.
            self.log_alpha = nn.Parameter(torch.full((dim,), math.log(self.alpha)))
            self.log_beta = nn.Parameter(torch.full((dim,), math.log(self.beta)))

    def shapes(self) -> tuple[torch.Tensor | float, torch.Tensor | float, torch.Tensor | float]:
        r"""The Beta shapes and log normaliser :math:`(\alpha, \beta, \log B(\alpha, \beta))`:
        Python floats for a fixed prior, ``(d,)`` tensors (differentiable) for a learned one."""
        if not self.learn:
            return self.alpha, self.beta, self.log_beta_fn
        a, b = self.log_alpha.exp(), self.log_beta.exp()
        return a, b, torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)

    @property
    def bounded(self) -> bool:
        """True for the box priors (z = sigmoid(u) in (0, 1)^d)."""
        return self.kind != "gaussian"

    def to_latent(self, u: torch.Tensor) -> torch.Tensor:
        """:math:`z = h(u)`: identity (gaussian) or sigmoid (uniform, beta)."""
        return torch.sigmoid(u) if self.bounded else u

    def log_prob_u(self, u: torch.Tensor) -> torch.Tensor:
        r"""Elementwise :math:`\log p_U(u_k)`: :math:`-u^2/2 - \tfrac12\log 2\pi` (gaussian), or
        :math:`-\alpha\,\mathrm{softplus}(-u) - \beta\,\mathrm{softplus}(u) - \log B(\alpha,\beta)`."""
        if not self.bounded:
            return -0.5 * u * u - 0.5 * math.log(2 * math.pi)
        a, b, log_b = self.shapes()
        return -a * F.softplus(-u) - b * F.softplus(u) - log_b

    def log_prob_z(self, z: torch.Tensor) -> torch.Tensor:
        r"""Elementwise :math:`\log p_0(z_k)` on the latent space (``-inf`` outside the box)."""
        if not self.bounded:
            return -0.5 * z * z - 0.5 * math.log(2 * math.pi)
        inside = (z > 0) & (z < 1)
        zc = z.clamp(1e-300 if z.dtype == torch.float64 else 1e-38, 1.0)
        a, b, log_b = self.shapes()
        val = (a - 1) * torch.log(zc) + (b - 1) * torch.log1p(-zc.clamp(max=1 - 1e-16)) - log_b
        return torch.where(inside, val, torch.full_like(val, -math.inf))

    def curvature_u(self, u: torch.Tensor) -> torch.Tensor:
        r""":math:`-\partial^2 \log p_U / \partial u^2`: 1 (gaussian) or
        :math:`(\alpha + \beta)\,s(u)(1 - s(u))` — Theorem 1's prior term in eq. (12)."""
        if not self.bounded:
            return torch.ones_like(u)
        s = torch.sigmoid(u)
        a, b, _ = self.shapes()
        return (a + b) * s * (1 - s)

    def expected_log_prob_u(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        r"""Elementwise :math:`\mathbb E_{q}[\log p_U(u_k)]` for :math:`u_k \sim \mathcal N(\mu_k,
        \sigma_k^2)`: closed form :math:`-(\mu^2 + \sigma^2)/2 - \tfrac12\log 2\pi` (gaussian),
        Gauss–Hermite otherwise."""
        if not self.bounded:
            return -0.5 * (mu * mu + logvar.exp()) - 0.5 * math.log(2 * math.pi)
        if not self.learn:
            return gauss_hermite_expectation(self.log_prob_u, mu, logvar)
        # log p_U is linear in the (per-latent) shapes, and softplus(-u) = softplus(u) - u, so
        # E[log p_U] = -(α + β) E[softplus(u)] + α μ - log B(α, β): one quadrature.
        a, b, log_b = self.shapes()
        e_sp = gauss_hermite_expectation(F.softplus, mu, logvar)
        return -(a + b) * e_sp + a * mu - log_b

    def posterior_mean(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        r""":math:`\mathbb E_q[z_k] = \mathbb E_q[h(u_k)]`: ``mu`` (gaussian) or the logit-normal
        mean by Gauss–Hermite (box priors)."""
        if not self.bounded:
            return mu
        return gauss_hermite_expectation(torch.sigmoid, mu, logvar)

    def sample(
        self, shape: Sequence[int], generator: torch.Generator | None = None, dtype=None
    ) -> torch.Tensor:
        """Draws of z ~ p₀ of the given shape (``(..., d)``)."""
        dtype = dtype or torch.get_default_dtype()
        if not self.bounded:
            return torch.randn(*shape, generator=generator, dtype=dtype)
        if self.kind == "uniform":
            return torch.rand(*shape, generator=generator, dtype=dtype)
        # Beta by the ratio of Gammas: X/(X+Y), X ~ Gamma(alpha), Y ~ Gamma(beta).
        alpha, beta, _ = self.shapes()
        a = torch.as_tensor(alpha, dtype=torch.float64).detach().expand(tuple(shape)).contiguous()
        b = torch.as_tensor(beta, dtype=torch.float64).detach().expand(tuple(shape)).contiguous()
        x, y = torch._standard_gamma(a, generator), torch._standard_gamma(b, generator)
        return (x / (x + y)).to(dtype)

    def extra_repr(self) -> str:
        if self.kind == "beta" and self.learn:
            return f"kind=beta, learned, init alpha={self.alpha:g}, beta={self.beta:g}"
        if self.kind == "beta":
            return f"kind=beta, alpha={self.alpha:g}, beta={self.beta:g}"
        return f"kind={self.kind}"


def mlp(
    in_dim: int, widths: Sequence[int], out_dim: int, negative_slope: float = 0.2
) -> nn.Sequential:
    """``Linear`` layers ``in_dim → widths… → out_dim`` with LeakyReLU after each hidden layer."""
    sizes = [in_dim, *widths, out_dim]
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.LeakyReLU(negative_slope))
    return nn.Sequential(*layers)


class GaussianVAE(nn.Module):
    r"""Paper 004's VAE, eq. (3): factorised Gaussian encoder, decoder mean network, fixed or
    learned isotropic precision :math:`\gamma^2`, and a prior from :class:`VAEPrior`.

    Parameters
    ----------
    dim:
        Latent dimension :math:`d` (paper 004: equal to the observation dimension).
    obs_dim:
        Observation dimension (default ``dim``).
    hidden:
        Hidden widths of both MLPs as multiples of ``dim`` (``(10, 10)``: ``d → 10d → 10d → 2d``,
        three layers as in Sec. 4.1).
    negative_slope:
        LeakyReLU slope (0.2 as in the paper's code).
    prior:
        A :class:`VAEPrior` (default standard Gaussian).
    gamma2:
        Decoder precision :math:`\gamma^2 > 0`; the likelihood's variance is :math:`1/\gamma^2`.
    learn_gamma:
        Train :math:`\log\gamma^2` (a parameter initialised at ``log(gamma2)``) instead of fixing it.
    encoder_net, decoder_net:
        Networks to use instead of the MLPs (e.g. a conv encoder and decoder for images): the
        encoder maps flattened observations ``(B, obs_dim)`` to ``(B, 2·dim)`` and must end in a
        ``Linear``; the decoder maps ``(B, dim)`` to ``(B, obs_dim)`` and is trained.
    decoder:
        A fixed module to use as the decoder mean :math:`f^\theta` on the latent space (e.g. the
        ground-truth mixing, Sec. 4.2); it is frozen. ``None`` builds the decoder MLP.
    gamma2_warmup_steps, gamma2_start:
        Optional continuation schedule (an unmix choice, not the paper's): over the first
        ``gamma2_warmup_steps`` training steps (counted by :meth:`advance`) :math:`\log\gamma^2`
        rises linearly from :math:`\log` ``gamma2_start`` to :math:`\log` ``gamma2``, then stays
        there, so the objective optimised at the end is the paper's. 0 (default) = fixed
        :math:`\gamma^2` throughout; no warm-up when ``gamma2_start >= gamma2``. The encoder's
        log-variance bias starts at :math:`-\log\min(\gamma^2, \gamma^2_{start})` either way.

    ``forward(x)`` returns the posterior mean :math:`\mathbb E_q[z]` (the representation that MCC
    scores); :meth:`encode` gives the Gaussian's :math:`(\mu, \log\sigma^2)` on :math:`u`.
    """

    def __init__(
        self,
        dim: int,
        obs_dim: int | None = None,
        hidden: Sequence[int] = (10, 10),
        negative_slope: float = 0.2,
        prior: VAEPrior | None = None,
        gamma2: float = 1e5,
        learn_gamma: bool = False,
        decoder: nn.Module | None = None,
        gamma2_warmup_steps: int = 0,
        gamma2_start: float = 100.0,
        encoder_net: nn.Module | None = None,
        decoder_net: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if not (isinstance(dim, int) and dim >= 1):
            raise ConfigError(f"GaussianVAE 'dim' must be an integer >= 1, got {dim!r}.")
        obs_dim = dim if obs_dim is None else obs_dim
        if not (isinstance(gamma2, int | float) and math.isfinite(gamma2) and gamma2 > 0):
            raise ConfigError(
                f"GaussianVAE 'gamma2' is the decoder precision γ² and must be a finite number "
                f"> 0, got {gamma2!r}."
            )
        if any(int(h) < 1 for h in hidden):
            raise ConfigError(f"GaussianVAE 'hidden' widths must be >= 1, got {tuple(hidden)}.")
        self.dim, self.obs_dim = dim, obs_dim
        widths = [int(h) * dim for h in hidden]
        self.prior = prior if prior is not None else VAEPrior("gaussian")
        self.encoder = (
            encoder_net
            if encoder_net is not None
            else mlp(obs_dim, widths, 2 * dim, negative_slope)
        )
        linears = [m for m in self.encoder.modules() if isinstance(m, nn.Linear)]
        if not linears or linears[-1].out_features != 2 * dim:
            raise ConfigError(
                f"GaussianVAE: the encoder network must end in a Linear layer with 2·dim = "
                f"{2 * dim} outputs (mean, log-variance)."
            )
        last = linears[-1]
        if isinstance(gamma2_warmup_steps, bool) or not (
            isinstance(gamma2_warmup_steps, int) and gamma2_warmup_steps >= 0
        ):
            raise ConfigError(
                f"GaussianVAE 'gamma2_warmup_steps' must be an integer >= 0, got "
                f"{gamma2_warmup_steps!r}."
            )
        if not (
            isinstance(gamma2_start, int | float)
            and math.isfinite(gamma2_start)
            and gamma2_start > 0
        ):
            raise ConfigError(
                f"GaussianVAE 'gamma2_start' must be a finite number > 0, got {gamma2_start!r}."
            )
        if learn_gamma and gamma2_warmup_steps:
            raise ConfigError(
                "GaussianVAE: a learned γ² (learn_gamma=True) cannot also follow a warm-up "
                "schedule: set gamma2_warmup_steps=0 or learn_gamma=False."
            )
        self.gamma2_warmup_steps = gamma2_warmup_steps if gamma2_start < gamma2 else 0
        self.register_buffer("log_gamma2_start", torch.tensor(math.log(min(gamma2_start, gamma2))))
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        with torch.no_grad():
            last.bias[dim:].fill_(-math.log(min(gamma2_start, gamma2)))
        if decoder is not None and decoder_net is not None:
            raise ConfigError("GaussianVAE: pass a fixed 'decoder' or a 'decoder_net', not both.")
        if decoder_net is not None:
            self.decoder = decoder_net
            self.fixed_decoder = False
        elif decoder is None:
            self.decoder = mlp(dim, widths, obs_dim, negative_slope)
            self.fixed_decoder = False
        else:
            self.decoder = decoder
            self.decoder.requires_grad_(False)
            self.fixed_decoder = True
        log_g2 = torch.tensor(math.log(gamma2))
        if learn_gamma:
            self.log_gamma2 = nn.Parameter(log_g2)
        else:
            self.register_buffer("log_gamma2", log_g2)
        self.learn_gamma = learn_gamma

    @property
    def gamma2(self) -> torch.Tensor:
        r"""The current decoder precision :math:`\gamma^2` (0-dim tensor): the scheduled value
        during a warm-up, else :math:`\exp(\log\gamma^2)`."""
        warm = self.gamma2_warmup_steps
        if warm and int(self.step) < warm:
            t = self.step.to(self.log_gamma2.dtype) / warm
            return torch.exp(self.log_gamma2_start + t * (self.log_gamma2 - self.log_gamma2_start))
        return self.log_gamma2.exp()

    def advance(self) -> None:
        """Count one training step (drives the γ² warm-up; saved in the state dict)."""
        self.step += 1

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:math:`(\\mu^\\phi(x), \\log\\sigma^\\phi(x)^2)`, each ``(..., dim)``, on :math:`u`."""
        if x.shape[-1] != self.obs_dim:
            raise ConfigError(
                f"GaussianVAE expects observations of shape (..., {self.obs_dim}), got "
                f"{tuple(x.shape)}."
            )
        out = self.encoder(x)
        return out[..., : self.dim], out[..., self.dim :]

    def decoder_mean(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`f^\\theta(z)` on the latent space (z in :math:`(0, 1)^d` for box priors)."""
        return self.decoder(z)

    def decode(self, u: torch.Tensor) -> torch.Tensor:
        """:math:`f^\\theta(h(u))`: the decoder mean as a function of the unconstrained latent."""
        return self.decoder(self.prior.to_latent(u))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The posterior mean :math:`\\mathbb E_{q_\\phi(z|x)}[z]`, shape ``(..., dim)``."""
        mu, logvar = self.encode(x)
        return self.prior.posterior_mean(mu, logvar)
