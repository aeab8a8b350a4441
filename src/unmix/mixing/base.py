r"""The common interface of every mixing function :math:`x = g(z)`.

A mixing is a fixed, deterministic map from latents :math:`z \in \mathbb{R}^{d_{in}}` to
observations :math:`x \in \mathbb{R}^{d_{out}}` (paper 000, Sec. 2 and 4.1; paper 004, Sec. 4).
Every mixing in :mod:`unmix.mixing` subclasses :class:`Mixing` and offers

* ``forward(z)`` — batched, ``(..., dim_in) -> (..., dim_out)``;
* ``inverse(x)`` — the exact inverse :math:`g^{-1}` where one exists, otherwise
  ``NotImplementedError`` with a message that says so;
* ``jacobian(z)`` — :math:`J_g(z) = \partial g / \partial z`, batched, shape
  ``(..., dim_out, dim_in)``; the default uses ``torch.func.vmap(jacrev(forward))`` and subclasses
  override it with closed forms;
* ``log_abs_det_jacobian(z)`` — :math:`\log|\det J_g(z)|` of the square Jacobian, shape ``(...)``.

Conventions
-----------
* The mixing's numbers (weight matrices, centres, …) are **buffers**, not parameters: they are
  never trained (``requires_grad`` is False), they move with ``.to(device/dtype)`` and they are
  saved in ``state_dict()``. ``mixing.parameters()`` is empty.
* Every mixing is a deterministic function of its constructor arguments, in particular its
  ``seed``: randomness comes from a local ``torch.Generator`` seeded with it, never from (and never
  touching) the global RNG state (InvertibleMLP uses a local ``numpy.random.default_rng``
  instead). Weights are drawn in float64 and then cast to ``dtype``
  (default: ``torch.get_default_dtype()``). Construct with ``dtype=torch.float64`` for float64
  work: ``mixing.to(torch.float64)`` after a float32 construction keeps the float32-rounded
  weights (still a valid, exactly invertible map, just a slightly different one).
* Inputs are checked: a wrong last dimension, a non-floating tensor, or a dtype/device that
  differs from the mixing's raises :class:`unmix.errors.ConfigError` naming the fix.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from unmix.errors import ConfigError


def check_dim_arg(name: str, value: object, owner: str, minimum: int = 1) -> int:
    """Return ``value`` if it is an ``int >= minimum``; otherwise raise a readable ConfigError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(
            f"Parameter '{name}' of {owner} must be an integer >= {minimum}, got {value!r}: "
            f"pass a whole number {name} >= {minimum}."
        )
    return int(value)


def check_seed(seed: object, owner: str) -> int:
    """Return ``seed`` if it is a non-negative ``int``; otherwise raise a readable ConfigError."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ConfigError(
            f"Parameter 'seed' of {owner} must be a non-negative integer, got {seed!r}: "
            "pass e.g. seed=0."
        )
    return int(seed)


def check_finite_real(name: str, value: object, owner: str, positive: bool = False) -> float:
    """``float(value)`` if it is a finite real (and > 0 if ``positive``); else a ConfigError."""
    ok = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
    if ok and positive:
        ok = value > 0
    if not ok:
        need = "a positive finite number" if positive else "a finite number"
        raise ConfigError(f"Parameter '{name}' of {owner} must be {need}, got {value!r}.")
    return float(value)


def resolve_dtype(dtype: torch.dtype | None, owner: str) -> torch.dtype:
    """``dtype`` or the default dtype; a ConfigError unless it is a floating dtype."""
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ConfigError(
            f"Parameter 'dtype' of {owner} must be a floating torch dtype (e.g. torch.float64), "
            f"got {dtype!r}."
        )
    return dtype


def make_generator(seed: int) -> torch.Generator:
    """A fresh CPU ``torch.Generator`` seeded with ``seed`` (the global RNG is never touched)."""
    return torch.Generator(device="cpu").manual_seed(seed)


def random_orthogonal(dim: int, generator: torch.Generator) -> torch.Tensor:
    r"""A Haar-distributed random orthogonal ``dim × dim`` matrix (float64).

    :math:`Q R = G` with :math:`G_{ij} \sim N(0, 1)`, then
    :math:`Q \operatorname{diag}(\operatorname{sign} R_{ii})` — the sign fix that makes the QR
    factor Haar-distributed on :math:`O(d)`
    (Mezzadri 2007). Its determinant is ±1.
    """
    g = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    signs = torch.sign(torch.diagonal(r))
    signs[signs == 0] = 1.0
    return q * signs.unsqueeze(0)


class Mixing(nn.Module):
    r"""Base class of a fixed mixing :math:`g: \mathbb{R}^{d_{in}} \to \mathbb{R}^{d_{out}}`.

    Subclasses call ``super().__init__(dim_in, dim_out)``, register their numbers with
    ``register_buffer`` and implement :meth:`forward`; they override :meth:`inverse`,
    :meth:`jacobian` and :meth:`log_abs_det_jacobian` where they can do better than the defaults.
    Subclasses call :meth:`_check_input` at the start of ``forward``/``inverse``.
    """

    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        owner = type(self).__name__
        self.dim_in = check_dim_arg("dim_in", dim_in, owner)
        self.dim_out = check_dim_arg("dim_out", dim_out, owner)

    # ----------------------------------------------------------------------------------- checks
    def _reference_buffer(self) -> torch.Tensor | None:
        for b in self.buffers():
            if b.is_floating_point():
                return b
        return None

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype of the mixing's floating buffers (``None`` if it has none)."""
        b = self._reference_buffer()
        return None if b is None else b.dtype

    @property
    def device(self) -> torch.device | None:
        """The device of the mixing's buffers (``None`` if it has none)."""
        b = self._reference_buffer()
        return None if b is None else b.device

    def _check_input(self, t: torch.Tensor, name: str, dim: int) -> None:
        """Raise a readable ConfigError unless ``t`` is a floating tensor ``(..., dim)`` that
        matches the mixing's dtype and device."""
        owner = type(self).__name__
        if not isinstance(t, torch.Tensor):
            raise ConfigError(
                f"{owner} expects '{name}' to be a torch.Tensor of shape (..., {dim}), "
                f"got {type(t).__name__}: wrap it with torch.as_tensor."
            )
        if t.ndim == 0 or t.shape[-1] != dim:
            raise ConfigError(
                f"{owner} got '{name}' of shape {tuple(t.shape)}; its last dimension must be "
                f"{dim}: pass a tensor of shape (..., {dim})."
            )
        if not t.is_floating_point():
            raise ConfigError(
                f"{owner} expects a floating '{name}', got dtype {t.dtype}: convert it with "
                f"{name}.to({self.dtype or torch.get_default_dtype()})."
            )
        ref = self._reference_buffer()
        if ref is not None and t.dtype != ref.dtype:
            raise ConfigError(
                f"{owner} holds {ref.dtype} weights but '{name}' is {t.dtype}: convert one of "
                f"them, e.g. mixing.to({t.dtype}) or {name}.to({ref.dtype})."
            )
        if ref is not None and t.device != ref.device:
            raise ConfigError(
                f"{owner} lives on {ref.device} but '{name}' is on {t.device}: move one of "
                f"them, e.g. mixing.to({name}.device)."
            )

    # -------------------------------------------------------------------------------- interface
    def forward(self, z: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """:math:`x = g(z)`, ``(..., dim_in) -> (..., dim_out)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward(z).")

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`z = g^{-1}(x)`, ``(..., dim_out) -> (..., dim_in)``, where it exists exactly."""
        raise NotImplementedError(
            f"{type(self).__name__} has no exact inverse: it is not invertible in closed form "
            "(use a learned encoder, or a mixing such as InvertibleMLP or Moebius)."
        )

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""Batched Jacobian :math:`J_{ij} = \partial g_i / \partial z_j`, shape
        ``(..., dim_out, dim_in)``; default: ``torch.func.vmap(torch.func.jacrev(forward))``."""
        self._check_input(z, "z", self.dim_in)
        batch = z.shape[:-1]
        flat = z.reshape(-1, self.dim_in)
        if flat.shape[0] == 0:
            return z.new_zeros(*batch, self.dim_out, self.dim_in)
        jac = torch.func.vmap(torch.func.jacrev(self.forward))(flat)
        return jac.reshape(*batch, self.dim_out, self.dim_in)

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`\log|\det J_g(z)|`, shape ``(...)``; default: ``slogdet`` of :meth:`jacobian`.

        Only defined when ``dim_in == dim_out``.
        """
        if self.dim_in != self.dim_out:
            raise NotImplementedError(
                f"{type(self).__name__} maps {self.dim_in} -> {self.dim_out} dimensions: "
                "log|det J| is only defined for square Jacobians (dim_in == dim_out)."
            )
        return torch.linalg.slogdet(self.jacobian(z)).logabsdet

    def extra_repr(self) -> str:
        return f"dim_in={self.dim_in}, dim_out={self.dim_out}"
