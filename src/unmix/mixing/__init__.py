r"""Mixing functions :math:`x = g(z)`: the fixed maps from latents to observations.

=============================  ==============================================================
:class:`InvertibleMLP`         leaky-ReLU MLP with condition-controlled weights (paper 000, 4.1)
:class:`Moebius`               conformal Möbius transform, IMA class (paper 004, 4.3, Fig. 3)
:class:`LinearMixing`          any invertible matrix
:class:`VolumePreservingLinear`  :math:`M_0/|\det M_0|^{1/d}`, :math:`M_0 \sim U[0,1]` (004, Fig. 3)
:class:`SmoothLeakyMLP`        orthogonal layers + smooth leaky ReLU (paper 004, Sec. 4.1)
:class:`TriangularMLP`         upper-triangular layers, outside IMA (paper 004, Sec. 4.2, Fig. 4)
:class:`Compose`               :math:`g_n \circ \cdots \circ g_1`, e.g. Möbius then linear
=============================  ==============================================================

All share the :class:`Mixing` interface (``forward``, ``inverse``, ``jacobian``,
``log_abs_det_jacobian``; buffers, not parameters; deterministic given ``seed``).
:func:`make_mixing` builds one by name (the names in :data:`MIXINGS`).
"""

from __future__ import annotations

from typing import Any

from unmix.errors import ConfigError
from unmix.mixing.base import Mixing
from unmix.mixing.compose import Compose
from unmix.mixing.ima_mlp import (
    SmoothLeakyMLP,
    TriangularMLP,
    smooth_leaky_relu,
    smooth_leaky_relu_inverse,
)
from unmix.mixing.linear import LinearMixing, VolumePreservingLinear
from unmix.mixing.mlp import InvertibleMLP, condition_number
from unmix.mixing.moebius import Moebius

MIXINGS: dict[str, type[Mixing]] = {
    "invertible_mlp": InvertibleMLP,
    "moebius": Moebius,
    "volume_preserving_linear": VolumePreservingLinear,
    "smooth_leaky_mlp": SmoothLeakyMLP,
    "triangular_mlp": TriangularMLP,
}
"""Mixings that are built from ``(dim, seed, **options)``, by name."""


def make_mixing(name: str, dim: int, seed: int = 0, **options: Any) -> Mixing:
    """Build the mixing ``name`` (a key of :data:`MIXINGS`): ``cls(dim, seed=seed, **options)``.

    >>> g = make_mixing("moebius", 3, seed=1)
    """
    try:
        cls = MIXINGS[name]
    except KeyError:
        raise ConfigError(f"Unknown mixing {name!r}: choose one of {sorted(MIXINGS)}.") from None
    try:
        return cls(dim, seed=seed, **options)
    except TypeError as err:
        raise ConfigError(f"Bad options for mixing {name!r}: {err}.") from err


__all__ = [
    "MIXINGS",
    "Compose",
    "InvertibleMLP",
    "LinearMixing",
    "Mixing",
    "Moebius",
    "SmoothLeakyMLP",
    "TriangularMLP",
    "VolumePreservingLinear",
    "condition_number",
    "make_mixing",
    "smooth_leaky_relu",
    "smooth_leaky_relu_inverse",
]
