r"""Latent spaces: where the ground-truth factors :math:`z` live.

* :class:`Sphere` — :math:`\{z \in \mathbb{R}^d : \|z\|_2 = r\}` (paper 000, Sec. 3.1).
* :class:`Box` — :math:`\prod_i [\mathrm{low}_i, \mathrm{high}_i]`, a convex body (paper 000, Sec. 3.3).
* :class:`Euclidean` — :math:`\mathbb{R}^d`, unbounded.

Each space knows its dimension, whether a point belongs to it (:meth:`Space.contains`), how to map
an arbitrary point onto it (:meth:`Space.project`), its log-volume (``inf`` when unbounded) and its
centre. Spaces are plain immutable descriptions; distributions on them live in
:mod:`unmix.distributions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from unmix.errors import ConfigError
from unmix.special import log_sphere_area


@dataclass(frozen=True)
class Space:
    """Base class of latent spaces. ``dim`` is the ambient dimension :math:`d` of :math:`z`."""

    dim: int

    def __post_init__(self) -> None:
        if not isinstance(self.dim, int) or self.dim < 1:
            raise ConfigError(f"dim must be a positive integer, got {self.dim!r}.")

    name: str = field(default="space", init=False, repr=False)

    def contains(self, z: torch.Tensor, atol: float = 1e-5) -> torch.Tensor:
        """Boolean tensor of shape ``z.shape[:-1]``: is each point in the space (within ``atol``)?"""
        raise NotImplementedError

    def project(self, z: torch.Tensor) -> torch.Tensor:
        """The nearest point of the space (Euclidean projection)."""
        raise NotImplementedError

    @property
    def log_volume(self) -> float:
        """Log of the Lebesgue (surface, for the sphere) measure of the space; ``inf`` if unbounded."""
        raise NotImplementedError

    def center(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        """A canonical centre: the box centre, the origin, or the sphere's north pole :math:`r e_1`."""
        raise NotImplementedError

    def check_dim(self, z: torch.Tensor, what: str = "z") -> None:
        """Raise a readable :class:`ConfigError` if ``z``'s last dimension is not ``dim``."""
        if z.ndim == 0 or z.shape[-1] != self.dim:
            raise ConfigError(
                f"{what} has shape {tuple(z.shape)} but this {self.name} has dim={self.dim}: "
                f"the last dimension of {what} must be {self.dim}."
            )


@dataclass(frozen=True)
class Sphere(Space):
    r"""The sphere :math:`S^{d-1}_r \subset \mathbb{R}^d` of radius ``radius`` (``dim`` = d ≥ 2)."""

    radius: float = 1.0
    name: str = field(default="sphere", init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dim < 2:
            raise ConfigError(f"A sphere needs dim >= 2 (ambient dimension), got dim={self.dim}.")
        if not (self.radius > 0 and math.isfinite(self.radius)):
            raise ConfigError(
                f"Sphere radius must be positive and finite, got radius={self.radius}."
            )

    def contains(self, z: torch.Tensor, atol: float = 1e-5) -> torch.Tensor:
        self.check_dim(z)
        return (z.norm(dim=-1) - self.radius).abs() <= atol * max(1.0, self.radius)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        self.check_dim(z)
        return self.radius * z / z.norm(dim=-1, keepdim=True).clamp_min(1e-30)

    @property
    def log_volume(self) -> float:
        return log_sphere_area(self.dim, self.radius)

    def center(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        e1 = torch.zeros(self.dim, dtype=dtype, device=device)
        e1[0] = self.radius
        return e1


@dataclass(frozen=True)
class Box(Space):
    r"""The box :math:`[\mathrm{low}, \mathrm{high}]^d` (scalar bounds, the same on every axis)."""

    low: float = 0.0
    high: float = 1.0
    name: str = field(default="box", init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ConfigError(f"Box bounds must be finite, got low={self.low}, high={self.high}.")
        if not self.low < self.high:
            raise ConfigError(
                f"Box needs low < high, got low={self.low}, high={self.high}: swap or widen them."
            )

    def contains(self, z: torch.Tensor, atol: float = 1e-5) -> torch.Tensor:
        self.check_dim(z)
        return ((z >= self.low - atol) & (z <= self.high + atol)).all(dim=-1)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        self.check_dim(z)
        return z.clamp(self.low, self.high)

    @property
    def log_volume(self) -> float:
        return self.dim * math.log(self.high - self.low)

    def center(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        return torch.full((self.dim,), 0.5 * (self.low + self.high), dtype=dtype, device=device)


@dataclass(frozen=True)
class Euclidean(Space):
    r"""The whole space :math:`\mathbb{R}^d`."""

    name: str = field(default="euclidean", init=False, repr=False)

    def contains(self, z: torch.Tensor, atol: float = 1e-5) -> torch.Tensor:
        self.check_dim(z)
        return torch.isfinite(z).all(dim=-1)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        self.check_dim(z)
        return z

    @property
    def log_volume(self) -> float:
        return math.inf

    def center(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        return torch.zeros(self.dim, dtype=dtype, device=device)
