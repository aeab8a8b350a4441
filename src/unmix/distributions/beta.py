r"""Factorised Beta marginals on a box: :math:`z_i = \text{low} + (\text{high}-\text{low})\,B_i`,
:math:`B_i \sim \mathrm{Beta}(\alpha_i, \beta_i)` independently.

This is paper 004's ground truth for Sprites (Sec. 4.3): one Beta per factor, with shapes
:math:`\alpha_i, \beta_i \sim U(2, 15)` fixed by the data seed (:func:`random_beta_shapes`).
Sampling is by the exact inverse CDF, :math:`B = I^{-1}_{\alpha,\beta}(U)` with
:math:`U \sim U(0,1)` (``scipy.special.betaincinv`` in float64), so a ``torch.Generator`` makes it
reproducible; ``log_prob`` is the sum of the Beta log-densities minus :math:`d\log(\text{high}-\text{low})`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special as sp_special
from torch.distributions import constraints

from unmix.distributions.base import Distribution, check_positive
from unmix.errors import ConfigError

EDGE = 1e-7
"""Samples are clipped to [EDGE, 1 − EDGE] (in B) so that log_prob stays finite in float32."""


def random_beta_shapes(
    seed: int, dim: int, low: float = 2.0, high: float = 15.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-factor shapes :math:`\\alpha_i, \\beta_i \\sim U(\\text{low}, \\text{high})` from ``seed``.

    With ``g = torch.Generator().manual_seed(seed)``: ``u = torch.rand(2, dim, generator=g,
    dtype=float64)``, ``alpha = low + (high − low)·u[0]``, ``beta = low + (high − low)·u[1]``.
    """
    if not (0 < low <= high):
        raise ConfigError(f"Beta shape range must satisfy 0 < low <= high, got ({low}, {high}).")
    g = torch.Generator().manual_seed(int(seed))
    u = torch.rand(2, dim, generator=g, dtype=torch.float64)
    return low + (high - low) * u[0], low + (high - low) * u[1]


class FactorizedBeta(Distribution):
    """Independent Beta(α_i, β_i) per coordinate, rescaled onto ``[low, high]``; event shape (d,)."""

    arg_constraints = {}
    has_rsample = False

    def __init__(
        self,
        alpha: torch.Tensor,
        beta: torch.Tensor,
        low: float = 0.0,
        high: float = 1.0,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> None:
        alpha = torch.as_tensor(alpha, dtype=torch.float64).reshape(-1)
        beta = torch.as_tensor(beta, dtype=torch.float64).reshape(-1)
        check_positive("alpha", alpha, "FactorizedBeta")
        check_positive("beta", beta, "FactorizedBeta")
        if alpha.shape != beta.shape:
            raise ConfigError(
                f"FactorizedBeta: alpha has {alpha.numel()} entries but beta has {beta.numel()}: "
                "give one of each per factor."
            )
        if not low < high:
            raise ConfigError(f"FactorizedBeta needs low < high, got low={low}, high={high}.")
        self.alpha, self.beta = alpha, beta
        self.low, self.high = float(low), float(high)
        self._dtype, self._device = dtype, device
        super().__init__(torch.Size(), torch.Size([alpha.numel()]), validate_args=False)

    @property
    def support(self):
        return constraints.independent(constraints.interval(self.low, self.high), 1)

    @property
    def mean(self) -> torch.Tensor:
        m = self.alpha / (self.alpha + self.beta)
        return (self.low + (self.high - self.low) * m).to(self._dtype)

    def sample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        shape = torch.Size(sample_shape) + self.event_shape
        u = torch.rand(shape, generator=generator, dtype=torch.float64, device=self._device)
        b = sp_special.betaincinv(self.alpha.numpy(), self.beta.numpy(), u.cpu().numpy())
        b = torch.from_numpy(np.clip(b, EDGE, 1 - EDGE))
        z = self.low + (self.high - self.low) * b
        return z.to(dtype=self._dtype, device=self._device or "cpu")

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        v = torch.as_tensor(value, dtype=torch.float64)
        b = (v - self.low) / (self.high - self.low)
        a, bb = self.alpha.to(v.device), self.beta.to(v.device)
        log_b_fn = torch.lgamma(a) + torch.lgamma(bb) - torch.lgamma(a + bb)
        inside = (b > 0) & (b < 1)
        bc = b.clamp(EDGE * 1e-3, 1 - EDGE * 1e-3)
        lp = (a - 1) * torch.log(bc) + (bb - 1) * torch.log1p(-bc) - log_b_fn
        lp = torch.where(inside, lp, torch.full_like(lp, -math.inf))
        out = lp.sum(-1) - self.event_shape[0] * math.log(self.high - self.low)
        return out.to(self._dtype)

    def __repr__(self) -> str:
        a = ", ".join(f"{x:.3f}" for x in self.alpha.tolist())
        b = ", ".join(f"{x:.3f}" for x in self.beta.tolist())
        return f"FactorizedBeta(alpha=[{a}], beta=[{b}], low={self.low:g}, high={self.high:g})"
