r"""SlowVAE's networks (Klindt et al. 2021): a Gaussian-posterior conv VAE for image pairs.

:class:`SlowVAE` holds the encoder :math:`x \mapsto (\mu, \log\sigma^2)` of
:math:`q(z|x) = \mathcal N(\mu, \operatorname{diag}\sigma^2)` — the conv backbone
(:class:`~unmix.models.conv.ConvBackbone`: 4 stride-2 convs of 32, 32, 64, 64 channels, a
256-unit layer; the encoder the SlowVAE authors use, which paper 000 also takes for its KITTI
encoder) and one ``Linear(256, 2d)`` — and the mirrored decoder
(:class:`~unmix.models.conv.ConvDecoder`) whose output is read as Bernoulli logits (binary masks)
or as a Gaussian mean. Called as ``model(x)`` it returns the posterior mean μ (what unmix scores);
the loss lives in :mod:`unmix.objectives.slowvae`. The transition prior's rate λ is a parameter
of the model (trained with ``learn_rate: true``, else a fixed buffer).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch import nn

from unmix.errors import ConfigError
from unmix.models.linear import Linear
from unmix.registry import SpecBase, register_model

__all__ = ["SlowVAE", "SlowVAEModelSpec"]


class SlowVAEModelSpec(SpecBase):
    """``slowvae``: conv encoder → (μ, log σ²), conv decoder; ``likelihood`` of p(x|z)
    (``bernoulli`` for masks, ``gaussian`` = unit-variance Gaussian); ``rate`` λ of the Laplace
    transition prior (Klindt et al.'s released default 6), trained when ``learn_rate``."""

    kind: Literal["slowvae"] = "slowvae"
    likelihood: Literal["bernoulli", "gaussian"] = "bernoulli"
    rate: Annotated[float, Field(gt=0, le=1e4)] = 6.0
    learn_rate: bool = False
    out_dim: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        default=None,
        description="Dimensions of the code z; default latent.dim (Klindt et al.'s loaders: 10).",
    )


class SlowVAE(nn.Module):
    """Encoder and decoder of SlowVAE for images ``image_shape = (C, H, W)``; see the module doc."""

    def __init__(
        self,
        dim: int,
        image_shape: tuple[int, int, int],
        likelihood: str = "bernoulli",
        rate: float = 6.0,
        learn_rate: bool = False,
    ) -> None:
        super().__init__()
        from unmix.models.conv import ConvBackbone, ConvDecoder

        channels, height, width = image_shape
        if height != width:
            raise ConfigError(f"SlowVAE takes square images, got {height}×{width}")
        self.dim = int(dim)
        self.likelihood = likelihood
        self.backbone = ConvBackbone(in_channels=channels, image_size=height)
        self.to_posterior = Linear(self.backbone.feature_dim, 2 * self.dim)
        self.decoder = ConvDecoder(self.dim, out_channels=channels, image_size=height)
        log_rate = torch.tensor(math.log(rate))
        if learn_rate:
            self.log_rate = nn.Parameter(log_rate)
        else:
            self.register_buffer("log_rate", log_rate)

    @property
    def rate(self) -> torch.Tensor:
        """λ of the Laplace transition prior p(z_{t+1} | z_t) ∝ exp(−λ‖z_{t+1} − z_t‖₁)."""
        return self.log_rate.exp()

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(μ, log σ²)`` of q(z|x), each ``(B, d)``."""
        mu, logvar = self.to_posterior(self.backbone(x)).chunk(2, dim=-1)
        return mu, logvar

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """The decoder's output ``(B, C, H, W)``: Bernoulli logits or the Gaussian mean."""
        return self.decoder(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encode(x)[0]


@register_model("slowvae", spec=SlowVAEModelSpec)
def slowvae(
    out_dim: int,
    image_shape: Any,
    *,
    likelihood: str = "bernoulli",
    rate: float = 6.0,
    learn_rate: bool = False,
) -> nn.Module:
    if image_shape is None:
        raise ConfigError(
            "model.kind: slowvae needs image observations (a frame-sequence data set such as "
            "data.kind: mask_sequences)"
        )
    return SlowVAE(out_dim, tuple(image_shape), likelihood, rate, learn_rate)
