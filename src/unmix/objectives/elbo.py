r"""The evidence lower bound of a Gaussian VAE (Reizinger et al. 2022, paper 004, eq. (1)).

For an observation :math:`x \in \mathbb R^D`, a VAE with decoder mean :math:`f`, precision
:math:`\gamma^2`, prior :math:`p_U` on the unconstrained latent :math:`u` and variational posterior
:math:`q(u|x) = \mathcal N(\mu, \operatorname{diag}\sigma^2)` (see :mod:`unmix.models.vae`),

.. math::

    \mathrm{ELBO}(x) = \underbrace{\mathbb E_{q}\big[\log\mathcal N(x; f(h(u)), \gamma^{-2}I)\big]}
    _{\text{reconstruction}} - \mathrm{KL}\big[q(u|x)\,\|\,p_U(u)\big] \le \log p_\theta(x),

.. math::

    \log\mathcal N(x; m, \gamma^{-2}I) = \tfrac D2 \log\frac{\gamma^2}{2\pi}
    - \tfrac{\gamma^2}{2}\lVert x - m\rVert^2 .

* Reconstruction: Monte Carlo with the reparameterisation trick, :math:`u = \mu + \sigma\odot
  \varepsilon`, :math:`\varepsilon \sim \mathcal N(0, I)` drawn from the given ``generator``
  (``mc_samples`` draws per observation, averaged).
* KL, standard Gaussian prior — analytic:
  :math:`\tfrac12\sum_k(\mu_k^2 + \sigma_k^2 - 1 - \log\sigma_k^2)`.
* KL, box priors (uniform, Beta through the sigmoid) — :math:`-H[q] - \mathbb E_q[\log p_U(u)]`
  with the Gaussian entropy :math:`H[q] = \tfrac12\sum_k(\log 2\pi + 1 + \log\sigma_k^2)` in
  closed form and the factorised cross term :math:`\sum_k \mathbb E_q[\log p_U(u_k)]` by
  Gauss–Hermite quadrature (no closed form exists; the quadrature is deterministic, so the KL adds
  no Monte Carlo noise).

The training loss is :math:`-\frac1B\sum_b[\mathrm{rec}_b - \beta\,\mathrm{KL}_b]` (nats per
observation); ``kl_weight`` :math:`=\beta \ne 1` gives a β-VAE, whose objective is not a bound on
:math:`\log p(x)`. :class:`ELBOTerms` keeps the per-observation terms, with ``elbo`` always the
unweighted bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import torch
from pydantic import Field
from torch import nn

from unmix.errors import ConfigError
from unmix.registry import register_objective

__all__ = [
    "ELBO",
    "ELBOTerms",
    "gaussian_entropy",
    "gaussian_log_likelihood",
    "kl_divergence",
    "kl_standard_normal",
]


def gaussian_log_likelihood(
    x: torch.Tensor, mean: torch.Tensor, gamma2: torch.Tensor | float
) -> torch.Tensor:
    r""":math:`\log\mathcal N(x; \text{mean}, \gamma^{-2}I)` summed over the last dimension.

    :math:`\tfrac D2\log(\gamma^2/2\pi) - \tfrac{\gamma^2}2\lVert x - \text{mean}\rVert^2`, with
    :math:`\gamma^2` the precision (inverse variance). Shapes broadcast; returns ``(...)``.
    """
    gamma2 = torch.as_tensor(gamma2, dtype=x.dtype, device=x.device)
    d = x.shape[-1]
    sq = (x - mean).pow(2).sum(-1)
    return 0.5 * d * torch.log(gamma2 / (2 * math.pi)) - 0.5 * gamma2 * sq


def kl_standard_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathrm{KL}[\mathcal N(\mu, \operatorname{diag} e^{\text{logvar}}) \| \mathcal N(0,
    I)] = \tfrac12\sum_k(\mu_k^2 + \sigma_k^2 - 1 - \log\sigma_k^2)`, summed over the last dim."""
    return 0.5 * (mu * mu + logvar.exp() - 1.0 - logvar).sum(-1)


def gaussian_entropy(logvar: torch.Tensor) -> torch.Tensor:
    r"""Differential entropy of :math:`\mathcal N(\mu, \operatorname{diag}\sigma^2)`:
    :math:`\tfrac12\sum_k(\log 2\pi + 1 + \log\sigma_k^2)`."""
    return 0.5 * (math.log(2 * math.pi) + 1.0 + logvar).sum(-1)


def kl_divergence(prior, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathrm{KL}[q(u|x) \| p_U]` per observation for a :class:`~unmix.models.vae.VAEPrior`:
    analytic for the Gaussian prior, entropy + Gauss–Hermite cross term for the box priors."""
    if not prior.bounded:
        return kl_standard_normal(mu, logvar)
    return -gaussian_entropy(logvar) - prior.expected_log_prob_u(mu, logvar).sum(-1)


@dataclass
class ELBOTerms:
    """Per-observation terms, each of shape ``(B,)``: ``elbo = reconstruction - kl``."""

    reconstruction: torch.Tensor
    kl: torch.Tensor
    elbo: torch.Tensor


class ELBO(nn.Module):
    r"""Negative (β-weighted) ELBO of a :class:`~unmix.models.vae.GaussianVAE` (module docstring).

    ``loss = ELBO(kl_weight, mc_samples)(vae, x, generator)`` returns the scalar loss
    :math:`-\operatorname{mean}_b[\mathrm{rec}_b - \beta\,\mathrm{KL}_b]`; :meth:`terms` returns
    the per-observation reconstruction, KL and (unweighted) ELBO.
    """

    def __init__(self, kl_weight: float = 1.0, mc_samples: int = 1) -> None:
        super().__init__()
        if not (isinstance(kl_weight, int | float) and math.isfinite(kl_weight) and kl_weight >= 0):
            raise ConfigError(
                f"ELBO 'kl_weight' (β of a β-VAE) must be a finite number >= 0, got {kl_weight!r}."
            )
        if isinstance(mc_samples, bool) or not isinstance(mc_samples, int) or mc_samples < 1:
            raise ConfigError(
                f"ELBO 'mc_samples' must be an integer >= 1 (reparameterised draws per "
                f"observation), got {mc_samples!r}."
            )
        self.kl_weight = float(kl_weight)
        self.mc_samples = mc_samples

    def terms(
        self,
        vae: nn.Module,
        x: torch.Tensor,
        generator: torch.Generator | None = None,
        mc_samples: int | None = None,
    ) -> ELBOTerms:
        """Per-observation ELBO terms of the batch ``x`` ``(B, D)``."""
        if x.ndim != 2:
            raise ConfigError(f"ELBO expects a batch of observations (B, D), got {tuple(x.shape)}.")
        s = mc_samples or self.mc_samples
        mu, logvar = vae.encode(x)
        eps = torch.randn((s, *mu.shape), generator=generator, dtype=mu.dtype, device=mu.device)
        u = mu + torch.exp(0.5 * logvar) * eps
        x_hat = vae.decode(u.reshape(-1, mu.shape[-1])).reshape(s, *x.shape)
        rec = gaussian_log_likelihood(x, x_hat, vae.gamma2).mean(0)
        kl = kl_divergence(vae.prior, mu, logvar)
        return ELBOTerms(rec, kl, rec - kl)

    def forward(
        self, vae: nn.Module, x: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        t = self.terms(vae, x, generator)
        return -(t.reconstruction - self.kl_weight * t.kl).mean()

    def extra_repr(self) -> str:
        return f"kl_weight={self.kl_weight:g}, mc_samples={self.mc_samples}"


@register_objective("elbo", needs_pairs=False)
def elbo(
    *,
    kl_weight: Annotated[float, Field(ge=0, le=1e6)] = 1.0,
    mc_samples: Annotated[int, Field(ge=1, le=1024)] = 1,
    kl_warmup: Annotated[float, Field(ge=0, le=1)] = 0.0,
    kl_start: Annotated[float, Field(ge=0, le=1)] = 0.0,
):
    """The negative ELBO of a ``model.kind: vae`` (paper 004, eq. (1)); ``kl_weight`` is β of a
    β-VAE (1 = the ELBO), ``mc_samples`` reparameterised samples per observation. ``kl_warmup``
    > 0 (a fraction of the run) raises the KL weight linearly from ``kl_start``·β to β over that
    part of the run (KL warm-up; :class:`unmix.objectives.base.ELBOObjective`); 0 = none."""
    from unmix.objectives.base import ELBOObjective

    if kl_start and not kl_warmup:
        raise ConfigError(
            "objective.kl_start is the KL weight (a fraction of kl_weight) at the start of the KL "
            "warm-up: set objective.kl_warmup too (the fraction of the run over which it rises, "
            "e.g. 0.5) or remove kl_start."
        )
    return ELBOObjective(
        ELBO(kl_weight=kl_weight, mc_samples=mc_samples), kl_start=kl_start, kl_warmup=kl_warmup
    )
