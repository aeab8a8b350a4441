r"""Output heads: put the encoder's raw output into the model's latent space.

* :class:`SphereHead` — :math:`\hat z = r\,y/\|y\|_2` (radius r fixed or learnable).
* :class:`BoxHead` — the paper's **L∞ normalisation** with a learnable per-dimension magnitude
  :math:`b`: :math:`\hat z = b \odot y / \|y\|_\infty` (paper 000, Sec. 4.1: "for the hyperrectangle we
  apply an L∞ normalization … we parameterize the normalization magnitude … initialised as 1").
* :class:`SigmoidBoxHead` — :math:`\hat z = b \odot \mathrm{sigmoid}(y)`, what the reference code did
  instead (kept under its own name for comparison).
* :class:`IdentityHead` — unbounded: :math:`\hat z = y`.
"""

from __future__ import annotations

import torch
from torch import nn


class SphereHead(nn.Module):
    def __init__(self, radius: float = 1.0, learnable: bool = False) -> None:
        super().__init__()
        r = torch.tensor(float(radius))
        if learnable:
            self.radius = nn.Parameter(r)
        else:
            self.register_buffer("radius", r)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.radius * y / y.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class BoxHead(nn.Module):
    def __init__(self, dim: int, init_magnitude: float = 1.0) -> None:
        super().__init__()
        self.magnitude = nn.Parameter(torch.full((dim,), float(init_magnitude)))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.magnitude * y / y.abs().amax(dim=-1, keepdim=True).clamp_min(1e-12)


class SigmoidBoxHead(nn.Module):
    def __init__(self, dim: int, init_magnitude: float = 1.0) -> None:
        super().__init__()
        self.magnitude = nn.Parameter(torch.full((dim,), float(init_magnitude)))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.magnitude * torch.sigmoid(y)


class IdentityHead(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y


def make_head(space: str, dim: int, radius: float = 1.0, learn_radius: bool = False) -> nn.Module:
    """The head for a model space name (``sphere``, ``box``, ``box_sigmoid``, ``unbounded``)."""
    if space == "sphere":
        return SphereHead(radius, learn_radius)
    if space == "box":
        return BoxHead(dim)
    if space == "box_sigmoid":
        return SigmoidBoxHead(dim)
    if space == "unbounded":
        return IdentityHead()
    from unmix.errors import ConfigError

    raise ConfigError(f"model.space must be sphere, box, box_sigmoid or unbounded, got '{space}'.")
