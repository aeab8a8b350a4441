"""The built-in mixings as registered kinds (``mixing: {kind: ...}`` in a setting).

Each kind is a factory ``f(dim, seed, *, fields...)`` registered with
:func:`unmix.registry.register_mixing`; ``seed`` is the mixing's named stream of the data seed
(:mod:`unmix.seeds`). Every vector mixing also takes the stage-wide fields of
:class:`VectorMixingSpec` (``center``, ``center_samples``), applied by :func:`build_mixing` after the
factory: a user's mixing gets them too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch import nn

from unmix.errors import ConfigError
from unmix.registry import MIXINGS, SpecBase, register_mixing


class VectorMixingSpec(SpecBase):
    """Fields every vector mixing takes. ``center: true`` subtracts the mean observation E[g(z)]
    (estimated once from ``center_samples`` draws of p(z) with the data seed's ``center`` stream),
    as paper 004's code mean-centres its observations; the shift changes neither Jacobians nor
    c_IMA."""

    kind: str
    center: bool = False
    center_samples: Annotated[int, Field(ge=2, le=10_000_000)] = 100_000


class InvertibleMLPSpec(VectorMixingSpec):
    """Paper 000 (Sec. 4.1, Appx A.3): leaky-ReLU MLP with condition-controlled weights."""

    kind: Literal["invertible_mlp"] = "invertible_mlp"
    n_layers: Annotated[int, Field(ge=1, le=64)] = 3
    negative_slope: Annotated[float, Field(gt=0, le=1)] = 0.2
    cond_pool_size: Annotated[int, Field(ge=1, le=1_000_000)] = 25_000
    cond_quantile: Annotated[float, Field(ge=0, le=1)] = 0.0


class IdentityMixingSpec(VectorMixingSpec):
    kind: Literal["identity"] = "identity"


class MoebiusSpec(VectorMixingSpec):
    """Paper 004 (Sec. 4.3): conformal Möbius transform."""

    kind: Literal["moebius"] = "moebius"


class VolumePreservingSpec(VectorMixingSpec):
    """Paper 004 (Fig. 3): the volume-preserving linear map M₀/|det M₀|^{1/d}, M₀ ~ U[0,1]."""

    kind: Literal["volume_preserving"] = "volume_preserving"


class MoebiusLinearSpec(VectorMixingSpec):
    """Paper 004 (Fig. 3 right): Möbius followed by a volume-preserving linear map."""

    kind: Literal["moebius+linear"] = "moebius+linear"


class IMAMLPSpec(VectorMixingSpec):
    """Paper 004's MLP mixings: orthogonal layers with the smooth leaky ReLU (Sec. 4.1) or
    upper-triangular layers (Sec. 4.2 / Fig. 4)."""

    kind: Literal["smooth_leaky_mlp", "triangular_mlp"]
    n_layers: Annotated[int, Field(ge=1, le=64)] = 3
    negative_slope: Annotated[float, Field(gt=0, le=1)] = 0.2


class SmoothLeakyMLPSpec(IMAMLPSpec):
    kind: Literal["smooth_leaky_mlp"] = "smooth_leaky_mlp"


class TriangularMLPSpec(IMAMLPSpec):
    kind: Literal["triangular_mlp"] = "triangular_mlp"


INVERTIBLE_SQUARE = frozenset(
    {
        "invertible_mlp",
        "moebius",
        "volume_preserving",
        "moebius+linear",
        "smooth_leaky_mlp",
        "triangular_mlp",
    }
)
"""Built-in kinds with an exact inverse and Jacobian (a VAE's ground-truth decoder needs one)."""


@register_mixing("invertible_mlp", spec=InvertibleMLPSpec, invertible=True)
def invertible_mlp(
    dim: int,
    seed: int,
    *,
    n_layers: int = 3,
    negative_slope: float = 0.2,
    cond_pool_size: int = 25_000,
    cond_quantile: float = 0.0,
) -> nn.Module:
    from unmix.mixing.mlp import InvertibleMLP

    return InvertibleMLP(
        dim,
        n_layers=n_layers,
        negative_slope=negative_slope,
        cond_pool_size=cond_pool_size,
        cond_quantile=cond_quantile,
        seed=seed,
    )


@register_mixing("identity", spec=IdentityMixingSpec)
def identity(dim: int) -> nn.Module:
    return nn.Identity()


@register_mixing("moebius", spec=MoebiusSpec, invertible=True)
def moebius(dim: int, seed: int) -> nn.Module:
    from unmix.mixing.moebius import Moebius

    return Moebius(dim, seed=seed)


@register_mixing("volume_preserving", spec=VolumePreservingSpec, invertible=True)
def volume_preserving(dim: int, seed: int) -> nn.Module:
    from unmix.mixing.linear import VolumePreservingLinear

    return VolumePreservingLinear(dim, seed=seed, dtype=torch.get_default_dtype())


@register_mixing("moebius+linear", spec=MoebiusLinearSpec, invertible=True)
def moebius_linear(dim: int, seed: int) -> nn.Module:
    from unmix.mixing.compose import Compose
    from unmix.mixing.linear import VolumePreservingLinear
    from unmix.mixing.moebius import Moebius
    from unmix.seeds import stream_seed

    linear_seed = stream_seed(seed, "moebius+linear/linear")
    return Compose(
        Moebius(dim, seed=seed),
        VolumePreservingLinear(dim, seed=linear_seed, dtype=torch.get_default_dtype()),
    )


@register_mixing("smooth_leaky_mlp", spec=SmoothLeakyMLPSpec, invertible=True)
def smooth_leaky_mlp(
    dim: int, seed: int, *, n_layers: int = 3, negative_slope: float = 0.2
) -> nn.Module:
    from unmix.mixing.ima_mlp import SmoothLeakyMLP

    return SmoothLeakyMLP(dim, n_layers=n_layers, negative_slope=negative_slope, seed=seed)


@register_mixing("triangular_mlp", spec=TriangularMLPSpec, invertible=True)
def triangular_mlp(
    dim: int, seed: int, *, n_layers: int = 3, negative_slope: float = 0.2
) -> nn.Module:
    from unmix.mixing.ima_mlp import TriangularMLP

    return TriangularMLP(dim, n_layers=n_layers, negative_slope=negative_slope, seed=seed)


class Centred(nn.Module):
    """``x = g(z) − offset``: a mixing followed by a fixed shift (mean-centred observations).

    Jacobian, log|det J| and c_IMA are those of ``g``; the inverse is ``g⁻¹(x + offset)``.
    """

    def __init__(self, inner: nn.Module, offset: torch.Tensor) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer("offset", offset)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner(z) - self.offset

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner.inverse(x + self.offset)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner.jacobian(z)

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner.log_abs_det_jacobian(z)


def is_renderer(spec: Any) -> bool:
    """True for a mixing kind registered as an image renderer (``renderer_dim`` meta)."""
    return "renderer_dim" in MIXINGS.entry(spec.kind).meta


def build_mixing(
    spec: SpecBase,
    dim: int,
    seed: int,
    latent: Any = None,
    center_seed: int | None = None,
    sample_latents: Any = None,
) -> nn.Module:
    """The mixing g of ``spec`` (any registered kind), seeded by ``seed``; mean-centred if
    ``spec.center``: ``sample_latents(n, generator)`` draws z ~ p(z), with a generator seeded by
    ``center_seed``."""
    g = MIXINGS.build(spec, dim=dim, seed=seed, latent=latent)
    if not isinstance(g, nn.Module):
        raise ConfigError(
            f"mixing '{spec.kind}' built a {type(g).__name__}, not a torch.nn.Module: "
            "return a module (wrap a function in one)"
        )
    if not getattr(spec, "center", False):
        return g
    if sample_latents is None:
        raise ConfigError("mixing.center needs the latent process to estimate the mean of g(z)")
    gen = torch.Generator().manual_seed(center_seed if center_seed is not None else seed)
    with torch.no_grad():
        z = sample_latents(spec.center_samples, gen)
        offset = torch.cat([g(c).double() for c in z.split(8192)]).mean(0)
    return Centred(g, offset.to(torch.get_default_dtype()))
