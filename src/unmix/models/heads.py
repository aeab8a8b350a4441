r"""Output heads: put the encoder's raw output into the model's latent space.

* :class:`SphereHead` — :math:`\hat z = r\,y/\|y\|_2` (radius r fixed or learnable).
* :class:`BoxHead` — the paper's **L∞ normalisation** with a learnable per-dimension magnitude
  :math:`b`: :math:`\hat z = b \odot y / \|y\|_\infty` (paper 000, Sec. 4.1: "for the hyperrectangle we
  apply an L∞ normalization … we parameterize the normalization magnitude … initialised as 1");
  optionally with the raw outputs standardised over the batch first (``standardize=True``).
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
    r"""The L∞ head :math:`\hat z = b \odot y / \|y\|_\infty`: every output lies on one face of
    the box, the face of its largest :math:`|y_j|`, where :math:`\hat z_j = \pm b_j`.

    ``standardize=True`` first standardises each raw output over the batch (``BatchNorm1d``
    without affine parameters; its running mean and variance at evaluation). Without it one
    output can become the largest for nearly every input: that feature is then pinned at
    :math:`\pm b_j` (its own gradient is zero on its face) and the code keeps one dimension fewer.
    Measured on Table 4's row 1 at one seed of three: 82 % of the images on one face
    (``python benchmarks/feature_probe.py --factors RUN``; docs/images.md). Standardised, every
    output has zero mean and unit variance over the batch, so none can hold a face through a
    larger offset or scale than the others. In training each output then depends on the batch.

    Example: ``BoxHead(3)(torch.tensor([[2.0, -1.0, 0.5]]))`` is ``[[1.0, -0.5, 0.25]]``.
    """

    def __init__(
        self,
        dim: int,
        init_magnitude: float = 1.0,
        learn_magnitude: bool = True,
        standardize: bool = False,
    ) -> None:
        super().__init__()
        _magnitude(self, dim, init_magnitude, learn_magnitude)
        self.norm = nn.BatchNorm1d(dim, affine=False) if standardize else None

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        if self.norm is not None:
            y = self.norm(y)
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
    standardize_output: bool = False,
) -> nn.Module:
    """The head for a model space name (``sphere``, ``box``, ``box_sigmoid``, ``unbounded``);
    ``radius``/``learn_radius`` are the sphere's, ``learn_magnitude`` the box heads',
    ``standardize_output`` the L∞ box head's (:class:`BoxHead`)."""
    if standardize_output and space != "box":
        from unmix.errors import ConfigError

        raise ConfigError(
            f"model.standardize_output is the L∞ box head's (space: box), not space '{space}': "
            "set it to false or use space: box."
        )
    if space == "sphere":
        return SphereHead(radius, learn_radius)
    if space == "box":
        return BoxHead(dim, learn_magnitude=learn_magnitude, standardize=standardize_output)
    if space == "box_sigmoid":
        return SigmoidBoxHead(dim, learn_magnitude=learn_magnitude)
    if space == "unbounded":
        return IdentityHead()
    from unmix.errors import ConfigError

    raise ConfigError(f"model.space must be sphere, box, box_sigmoid or unbounded, got '{space}'.")
