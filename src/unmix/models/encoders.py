r"""Encoders f: x → ẑ.

:class:`MLPEncoder` is paper 000's feature encoder (Appx A.3): an MLP
:math:`n \to 10n \to 50n \to 50n \to 50n \to 50n \to 10n \to n` with LeakyReLU(0.01) after each
hidden layer (≈ 854k parameters at n = 10), followed by a head (:mod:`unmix.models.heads`) that maps
into the model's latent space. ``hidden`` gives the hidden widths as multiples of the input
dimension, so depth and width are configurable. Optionally the input is standardised per
dimension with a mean and standard deviation fixed before training (buffers, saved with the model).

Under bfloat16 autocast (``train.precision: bf16``) the hidden layers run in bf16, but the first
and last linear layers and the head stay in float32: bf16 keeps 8 significant bits (a relative step
of 2⁻⁸), coarser than the differences a contrastive loss compares — a positive pair's latents
differ by ≈ 0.05, and rounding the input or the output code to bf16 blurs them by a few percent.
Those two layers hold ≈ 0.2 % of the default encoder's multiply-adds (n·10n + 10n·n of ≈ 10⁴·n²).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from unmix.models.heads import make_head
from unmix.models.linear import Linear, float32_tail


class MLPEncoder(nn.Module):
    """MLP backbone + head. ``forward(x)`` → ẑ of shape ``(..., out_dim)``."""

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden: Sequence[int] = (10, 50, 50, 50, 50, 10),
        negative_slope: float = 0.01,
        space: str = "sphere",
        radius: float = 1.0,
        learn_radius: bool = False,
        learn_magnitude: bool = True,
        standardize_output: bool = False,
    ) -> None:
        super().__init__()
        widths = [in_dim, *(h * in_dim for h in hidden), out_dim]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            layers.append(Linear(a, b))
            if i < len(widths) - 2:
                # in place: the backward reads the output (slope > 0), so each layer keeps one
                # activation for the backward instead of two
                layers.append(nn.LeakyReLU(negative_slope, inplace=negative_slope > 0))
        self.backbone = nn.Sequential(*layers)
        self.head = make_head(
            space, out_dim, radius, learn_radius, learn_magnitude, standardize_output
        )
        self.in_dim, self.out_dim = in_dim, out_dim
        self.register_buffer("input_shift", torch.zeros(in_dim))
        self.register_buffer("input_scale", torch.ones(in_dim))

    def fit_input_standardization(self, x: torch.Tensor) -> None:
        """Fix ``x ↦ (x − mean)/std`` (per dimension, from the sample ``x``) as the first step."""
        self.input_shift.copy_(x.mean(dim=0))
        self.input_scale.copy_(1.0 / x.std(dim=0).clamp_min(1e-12))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.input_shift) * self.input_scale
        if not torch.is_autocast_enabled(x.device.type) or len(self.backbone) < 3:
            return self.head(self.backbone(x))
        # bf16 autocast: the hidden layers in bf16, the input's and the output's layers in float32
        first, *hidden, last = self.backbone
        y = float32_tail(x, first)
        for layer in hidden:
            y = layer(y)
        return float32_tail(y, last, self.head)


class IdentityEncoder(nn.Module):
    """The paper's *Identity* baseline: ẑ = x (scores the observations g(z) themselves)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
