r"""The latent process: a space, a marginal :math:`p(z)` and a positive-pair conditional :math:`p(\tilde z | z)`.

:class:`LatentProcess` draws anchors :math:`z \sim p(z)`, positives :math:`\tilde z \sim p(\tilde z|z)`
and independent negatives :math:`z^- \sim p(z)` (paper 000, eq. (1)–(3) and Sec. 4.1), all from one
``torch.Generator`` so that a seed reproduces the data exactly.

:func:`build_latent_process` turns a :class:`~unmix.settings.LatentSpec` into the concrete
distributions (see :class:`~unmix.settings.DistributionSpec` for what each ``kind`` means on each
space). A sphere of radius r is handled by sampling on the unit sphere and scaling by r.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from unmix.distributions.base import Distribution
from unmix.spaces import Box, Euclidean, Space, Sphere

if TYPE_CHECKING:
    from unmix.settings import DistributionSpec, LatentSpec

ConditionalFactory = Callable[[torch.Tensor], Distribution]


@dataclass
class LatentProcess:
    """Marginal and conditional on a space. ``conditional(z)`` returns the distribution of z̃ given
    z (batch shape ``z.shape[:-1]``). On a sphere of radius r both act on the unit sphere and samples
    are scaled by r (``scale``)."""

    space: Space
    marginal: Distribution
    conditional: ConditionalFactory
    scale: float = 1.0

    @property
    def dim(self) -> int:
        return self.space.dim

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` draws from the marginal, shape ``(n, dim)``."""
        return self.scale * self.marginal.sample((n,), generator=generator)

    def sample_positive(self, z: torch.Tensor, generator: torch.Generator | None = None):
        """One positive z̃ ~ p(· | z) per row of ``z``."""
        self.space.check_dim(z)
        return self.scale * self.conditional(z / self.scale).sample(generator=generator)

    def sample_pairs(self, n: int, generator: torch.Generator | None = None):
        """``(z, z_pos)``, each ``(n, dim)``: anchors from the marginal and their positives."""
        z = self.sample(n, generator)
        return z, self.sample_positive(z, generator)

    def sample_negatives(self, n: int, m: int, generator: torch.Generator | None = None):
        """``(n, m, dim)`` independent draws from the marginal (M negatives per anchor)."""
        return self.sample(n * m, generator).reshape(n, m, self.dim)


def make_space(spec: LatentSpec) -> Space:
    if spec.space == "sphere":
        return Sphere(spec.dim, radius=spec.radius)
    if spec.space == "box":
        return Box(spec.dim, low=spec.low, high=spec.high)
    return Euclidean(spec.dim)


def _euclidean_family(spec: DistributionSpec, loc: torch.Tensor, box: Box | None):
    from unmix.distributions import factorized as fz

    if box is None:
        if spec.kind == "normal":
            return fz.Normal(loc, spec.scale)
        if spec.kind == "laplace":
            return fz.Laplace(loc, spec.scale)
        return fz.GeneralizedNormal(loc, spec.scale, spec.beta)
    if spec.kind == "normal":
        return fz.TruncatedNormal(loc, spec.scale, box.low, box.high)
    if spec.kind == "laplace":
        return fz.TruncatedLaplace(loc, spec.scale, box.low, box.high)
    return fz.TruncatedGeneralizedNormal(loc, spec.scale, spec.beta, box.low, box.high)


def _sphere_family(spec: DistributionSpec, loc: torch.Tensor):
    from unmix.distributions import projected as pj
    from unmix.distributions.vmf import VonMisesFisher

    if spec.kind == "vmf":
        kappa = torch.as_tensor(spec.kappa, dtype=loc.dtype, device=loc.device)
        return VonMisesFisher(loc, kappa)
    if spec.kind == "normal":
        return pj.ProjectedNormal(loc, spec.scale)
    if spec.kind == "laplace":
        return pj.ProjectedLaplace(loc, spec.scale)
    return pj.ProjectedGeneralizedNormal(loc, spec.scale, spec.beta)


def make_marginal(
    spec: LatentSpec, space: Space, dtype=torch.float32, device=None, seed: int = 0
) -> Distribution:
    """The marginal p(z): uniform on sphere/box; vMF/normal around the pole e₁ on the sphere;
    normal/laplace/gennorm around the centre (truncated) on the box, around 0 on R^N; factorised
    Beta on the box (fixed ``alpha``/``beta`` or per-coordinate ``shapes``, or shapes from
    ``shape_range`` drawn from ``seed``, the data seed)."""
    from unmix.distributions.uniform import UniformBox, UniformSphere

    m = spec.marginal
    if m.kind == "beta":
        from unmix.distributions.beta import FactorizedBeta, random_beta_shapes

        assert isinstance(space, Box)
        if m.shape_range is not None:
            alpha, beta = random_beta_shapes(seed, space.dim, *m.shape_range)
        elif m.shapes is not None:
            pairs = torch.tensor(m.shapes, dtype=torch.float64)
            alpha, beta = pairs[:, 0].clone(), pairs[:, 1].clone()
        else:
            alpha = torch.full((space.dim,), m.alpha, dtype=torch.float64)
            beta = torch.full((space.dim,), m.beta, dtype=torch.float64)
        return FactorizedBeta(alpha, beta, space.low, space.high, dtype=dtype, device=device)
    if m.kind == "uniform":
        if isinstance(space, Sphere):
            return UniformSphere(space.dim, dtype=dtype, device=device)
        assert isinstance(space, Box)
        return UniformBox(space.low, space.high, space.dim, dtype=dtype, device=device)
    if isinstance(space, Sphere):
        pole = Sphere(space.dim).center(dtype=dtype, device=device)
        return _sphere_family(m, pole)
    centre = space.center(dtype=dtype, device=device)
    return _euclidean_family(m, centre, space if isinstance(space, Box) else None)


def _no_conditional(z: torch.Tensor) -> Distribution:
    from unmix.errors import ConfigError

    raise ConfigError(
        "this setting's latent has no conditional, so there are no positive pairs: add "
        "latent.conditional (e.g. {kind: normal, scale: 0.05}) or draw z with sample(n)"
    )


def make_conditional(spec: LatentSpec, space: Space) -> ConditionalFactory:
    """z ↦ p(z̃ | z): vMF / projected noise on the (unit) sphere, truncated noise on the box, exact
    noise on R^N. Without a conditional (``spec.conditional`` is None, e.g. for a VAE) the factory
    raises a ConfigError that says so."""
    c = spec.conditional
    if c is None:
        return _no_conditional
    if isinstance(space, Sphere):
        return lambda z: _sphere_family(c, z)
    box = space if isinstance(space, Box) else None
    return lambda z: _euclidean_family(c, z, box)


def build_latent_process(
    spec: LatentSpec, dtype=torch.float32, device=None, seed: int = 0
) -> LatentProcess:
    """The :class:`LatentProcess` a :class:`LatentSpec` describes; ``seed`` (the data seed) fixes
    the marginal's random parameters where it has any (a Beta marginal's ``shape_range``)."""
    space = make_space(spec)
    scale = spec.radius if isinstance(space, Sphere) else 1.0
    return LatentProcess(
        space, make_marginal(spec, space, dtype, device, seed), make_conditional(spec, space), scale
    )
