r"""The supervised baseline of Zimmermann et al. (2021, Sec. 4): regress the true latents.

.. math::

    \mathcal{L}(f) = \frac{1}{B\,n}\sum_{i=1}^{B}\sum_{k=1}^{n}\bigl(\hat z_{ik} - z_{ik}\bigr)^2,
    \qquad \hat z = f(x),

the mean squared error over the batch and the latent dimensions (``torch.nn.MSELoss`` with
``reduction="mean"``). It gives the topline scores of the paper's tables.
"""

from __future__ import annotations

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.registry import register_objective

__all__ = ["Supervised"]


class Supervised(nn.Module):
    r"""Mean squared error between recovered latents ``z_hat`` and true latents ``z``.

    ``forward(z_hat, z)`` with both of shape ``(B, n)`` (or any equal shapes) returns
    :math:`\operatorname{mean}\,(\hat z - z)^2` as a 0-dim tensor; gradients flow into ``z_hat``.
    """

    def forward(self, z_hat: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if not isinstance(z_hat, torch.Tensor) or not isinstance(z, torch.Tensor):
            raise ConfigError("Supervised: 'z_hat' and 'z' must be torch tensors.")
        if z_hat.shape != z.shape:
            raise ConfigError(
                f"Supervised: 'z_hat' (model output) and 'z' (true latents) must have the same "
                f"shape, got {tuple(z_hat.shape)} and {tuple(z.shape)}; check that the encoder's "
                f"output dimension equals the latent dimension."
            )
        if z_hat.numel() == 0:
            raise ConfigError("Supervised: empty batch; pass at least one sample.")
        return (z_hat - z.to(z_hat.dtype)).pow(2).mean()


@register_objective("supervised", needs_pairs=False)
def supervised():
    """Mean squared error of f(x) to the true latents z (the supervised baseline)."""
    from unmix.objectives.base import SupervisedObjective

    return SupervisedObjective(Supervised())
