"""A renderer as a mixing module: ``x = g(z)`` with images for x (see :mod:`unmix.mixing`).

:class:`RenderMixing` wraps :class:`~unmix.render.SpritesRenderer` or
:class:`~unmix.render.SceneRenderer` as a parameter-free ``nn.Module`` so that an image setting
runs through the same experiment code as a vector mixing. Rendering happens on the CPU (the
renderers are CPU code); images are moved to the latents' device and dtype. ``flatten=True`` gives
``(B, 3·H·W)`` vectors (the VAE's Gaussian likelihood is over flattened pixels).
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
from pydantic import Field
from torch import nn

from unmix.registry import SpecBase, register_mixing

RANGE_SLACK = 1e-6
"""Latents within this distance outside [0, 1] (float rounding at the box's edge) are clamped;
anything further is passed on and rejected by the renderer with a ConfigError."""


class RenderMixing(nn.Module):
    """``forward(z)``: ``(B, d)`` factors in [0, 1] → images ``(B, 3, H, W)`` (or flattened)."""

    def __init__(self, renderer, flatten: bool = False) -> None:
        super().__init__()
        self.renderer = renderer
        self.flatten = flatten

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return (3, self.renderer.size, self.renderer.size)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        zc = z.detach().to("cpu", torch.float32)
        inside = (zc >= -RANGE_SLACK) & (zc <= 1 + RANGE_SLACK)
        zc = torch.where(inside, zc.clamp(0.0, 1.0), zc)
        x = self.renderer.render(zc).to(device=z.device, dtype=z.dtype)
        return x.flatten(1) if self.flatten else x

    def extra_repr(self) -> str:
        return f"{type(self.renderer).__name__}(size={self.renderer.size}), flatten={self.flatten}"


class SpritesSpec(SpecBase):
    """Paper 004's Sprites (x, y, scale, hue; one ``sprite_shape`` on black), ``image_size`` px."""

    kind: Literal["sprites"] = "sprites"
    image_size: Annotated[int, Field(ge=8, le=512)] = 64
    sprite_shape: Literal["triangle", "square", "ellipse", "circle"] = "triangle"


class Scenes3DSpec(SpecBase):
    """A 3DIdent-like scene (10 factors), ``image_size`` px; ``antialias`` sub-pixel rays per
    pixel side, ``object_scale`` the object's size, ``two_tone`` contrasting albedos on its small
    asymmetric parts, ``texture: ramp | ramps | ramp_cap`` patterns painted on the object,
    ``spot_cone`` the spotlight's full cone angle in degrees (see
    :class:`~unmix.render.SceneRenderer`)."""

    kind: Literal["scenes3d"] = "scenes3d"
    image_size: Annotated[int, Field(ge=8, le=512)] = 64
    antialias: Annotated[int, Field(ge=1, le=8)] = 1
    object_scale: Annotated[float, Field(ge=0.1, le=4.0)] = 1.4
    two_tone: bool = False
    texture: Literal["none", "ramp", "ramps", "ramp_cap"] = "none"
    spot_cone: Annotated[float, Field(ge=10.0, le=120.0)] = 35.0


@register_mixing("sprites", spec=SpritesSpec, renderer_dim=4)
def sprites(*, image_size: int = 64, sprite_shape: str = "triangle") -> RenderMixing:
    """The Sprites renderer as a mixing (latents in the unit box [0, 1]^4)."""
    from unmix.render.sprites import SpritesRenderer

    return RenderMixing(SpritesRenderer(size=image_size, shape=sprite_shape))


@register_mixing("scenes3d", spec=Scenes3DSpec, renderer_dim=10)
def scenes3d(
    *,
    image_size: int = 64,
    antialias: int = 1,
    object_scale: float = 1.4,
    two_tone: bool = False,
    texture: str = "none",
    spot_cone: float = 35.0,
) -> RenderMixing:
    """The 3D-scene renderer as a mixing (latents in the unit box [0, 1]^10)."""
    from unmix.render.scenes3d import SceneRenderer

    return RenderMixing(
        SceneRenderer(
            size=image_size,
            antialias=antialias,
            object_scale=object_scale,
            two_tone=two_tone,
            texture=texture,
            spot_cone=spot_cone,
        )
    )


def build_renderer(spec: SpecBase, flatten: bool = False) -> RenderMixing:
    """The renderer of a ``mixing.kind: sprites | scenes3d`` setting."""
    from unmix.registry import MIXINGS

    g = MIXINGS.build(spec)
    g.flatten = flatten
    return g
