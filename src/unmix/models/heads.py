r"""Output heads: put the encoder's raw output into the model's latent space.

* :class:`SphereHead` — :math:`\hat z = r\,y/\|y\|_2` (radius r fixed or learnable).
* :class:`BoxHead` — the paper's **L∞ normalisation** with a learnable per-dimension magnitude
  :math:`b`: :math:`\hat z = b \odot y / \|y\|_\infty` (paper 000, Sec. 4.1: "for the hyperrectangle we
  apply an L∞ normalization … we parameterize the normalization magnitude … initialised as 1").
* :class:`SigmoidBoxHead` — :math:`\hat z = b \odot \mathrm{sigmoid}(y)`, what the reference code did
  instead (kept under its own name for comparison).

Both box heads learn :math:`b` by default (``learn_magnitude=False`` keeps it fixed at its initial
value, a buffer: with b = 1 the sigmoid head spans the unit box (0, 1)^N exactly, so the model's
scale is the latent box's and a contrastive loss cannot lower itself by inflating it).
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


def _magnitude(module: nn.Module, dim: int, init: float, learn: bool) -> None:
    b = torch.full((dim,), float(init))
    if learn:
        module.magnitude = nn.Parameter(b)
    else:
        module.register_buffer("magnitude", b)


class BoxHead(nn.Module):
    def __init__(self, dim: int, init_magnitude: float = 1.0, learn_magnitude: bool = True) -> None:
        super().__init__()
        _magnitude(self, dim, init_magnitude, learn_magnitude)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.magnitude * y / y.abs().amax(dim=-1, keepdim=True).clamp_min(1e-12)


class SigmoidBoxHead(nn.Module):
    def __init__(self, dim: int, init_magnitude: float = 1.0, learn_magnitude: bool = True) -> None:
        super().__init__()
        _magnitude(self, dim, init_magnitude, learn_magnitude)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.magnitude * torch.sigmoid(y)


class IdentityHead(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y


def make_head(
    space: str,
    dim: int,
    radius: float = 1.0,
    learn_radius: bool = False,
    learn_magnitude: bool = True,
) -> nn.Module:
    """The head for a model space name (``sphere``, ``box``, ``box_sigmoid``, ``unbounded``);
    ``radius``/``learn_radius`` are the sphere's, ``learn_magnitude`` the box heads'."""
    if space == "sphere":
        return SphereHead(radius, learn_radius)
    if space == "box":
        return BoxHead(dim, learn_magnitude=learn_magnitude)
    if space == "box_sigmoid":
        return SigmoidBoxHead(dim, learn_magnitude=learn_magnitude)
    if space == "unbounded":
        return IdentityHead()
    from unmix.errors import ConfigError

    raise ConfigError(f"model.space must be sphere, box, box_sigmoid or unbounded, got '{space}'.")
