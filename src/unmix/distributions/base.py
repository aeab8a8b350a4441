r"""Conventions shared by every unmix distribution.

unmix distributions subclass :class:`torch.distributions.Distribution` (batch and event shapes,
``log_prob``, ``mean``, ``support``) and add one thing torch lacks: a ``generator`` argument to
``sample``/``rsample`` so that every draw is reproducible from a seed::

    g = torch.Generator().manual_seed(0)
    z = dist.sample((1000,), generator=g)      # shape (1000, *batch_shape, *event_shape)

Parameters are validated on construction with :func:`check_positive` and friends, which raise
:class:`unmix.errors.ConfigError` naming the parameter and the fix — never a deep torch traceback.
Computations run in the parameters' dtype and device; samplers that need it work internally in
float64 and cast back.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import Distribution as _TorchDistribution

from unmix.errors import ConfigError


def check_positive(name: str, value: torch.Tensor | float, owner: str = "") -> None:
    """Raise a readable :class:`ConfigError` unless every entry of ``value`` is finite and > 0."""
    t = torch.as_tensor(value)
    if not bool(torch.isfinite(t).all()) or not bool((t > 0).all()):
        where = f" of {owner}" if owner else ""
        bad = t.flatten()[~(torch.isfinite(t.flatten()) & (t.flatten() > 0))][:3].tolist()
        raise ConfigError(
            f"Parameter '{name}'{where} must be positive and finite, got {bad}: "
            f"pass a value > 0 for '{name}'."
        )


def check_last_dim(name: str, value: torch.Tensor, dim: int, owner: str = "") -> None:
    """Raise a readable :class:`ConfigError` unless ``value.shape[-1] == dim``."""
    if value.ndim == 0 or value.shape[-1] != dim:
        where = f" of {owner}" if owner else ""
        raise ConfigError(
            f"Parameter '{name}'{where} has shape {tuple(value.shape)}; its last dimension must be "
            f"{dim} (the latent dimension)."
        )


def as_float_tensor(value, like: torch.Tensor | None = None) -> torch.Tensor:
    """``value`` as a floating tensor (float32 unless it already is floating, or matches ``like``)."""
    if like is not None:
        return torch.as_tensor(value, dtype=like.dtype, device=like.device)
    t = torch.as_tensor(value)
    return t if t.is_floating_point() else t.to(torch.get_default_dtype())


class Distribution(_TorchDistribution):
    """Base class: a torch ``Distribution`` whose ``sample``/``rsample`` accept a ``generator``.

    Subclasses implement :meth:`rsample` (reparameterised, if possible) or override :meth:`sample`.
    """

    def rsample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler.")

    def sample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        with torch.no_grad():
            return self.rsample(torch.Size(sample_shape), generator=generator)


LOG_2PI = math.log(2 * math.pi)
