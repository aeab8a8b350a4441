r"""The IMA contrast: how far a map's Jacobian is from having orthogonal columns.

Reizinger et al. (2022), Eq. (5) (after Gresele et al. 2021): for a map :math:`f` from
latents :math:`z \in \mathbb{R}^n` to observations :math:`x \in \mathbb{R}^m` (:math:`m \ge n`)
with Jacobian :math:`J = J_f(z) = \partial f / \partial z` (shape ``(m, n)``, column ``k`` is
:math:`\partial f/\partial z_k`), the *local* IMA contrast is

.. math::

    c_{\text{IMA}}(f, z) = \sum_{k=1}^{n} \log\Bigl\|\frac{\partial f}{\partial z_k}(z)\Bigr\|_2
        - \log\bigl|\det J_f(z)\bigr|
      = \tfrac12\bigl[\log\det\operatorname{diag}(J^\top J) - \log\det J^\top J\bigr],

where the second form (the Gram form) also covers tall Jacobians (:math:`m > n`, with
:math:`|\det J|` read as :math:`\sqrt{\det J^\top J}`). By Hadamard's inequality
:math:`c_{\text{IMA}} \ge 0`, with equality iff the columns are orthogonal; it is invariant to
rescaling columns (:math:`J \to J D`) and to orthogonal maps applied on the left
(:math:`J \to Q J`). The *global* contrast is its expectation over the latent prior,
:math:`C_{\text{IMA}}(f, p_0) = \mathbb{E}_{z\sim p_0}[c_{\text{IMA}}(f, z)]`, estimated by
:func:`global_c_ima` as the mean over samples.

**Difference to the reference code.** The reference logged :math:`c_{\text{IMA}}` of the
*batch-mean Jacobian*, :math:`c_{\text{IMA}}(\frac1B\sum_b J_f(z_b))` — a different quantity,
not an estimate of :math:`C_{\text{IMA}}`: averaging Jacobians first mixes the local geometry of
different points (0.0021 against 0.0084 for the mean per-sample contrast on the same model, paper
README). It is available as :func:`c_ima_of_mean_jacobian` only
to compare with the reference's logs; unmix's metric is :func:`global_c_ima`.

For maps that provide their own batched Jacobian (every unmix mixing has ``jacobian(z)``), call
:func:`c_ima_from_jacobian` on it directly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

from unmix.errors import ConfigError

__all__ = [
    "c_ima",
    "c_ima_from_jacobian",
    "global_c_ima",
    "c_ima_of_mean_jacobian",
    "batched_jacobian",
]


def c_ima_from_jacobian(jacobian: torch.Tensor) -> torch.Tensor:
    r"""Local IMA contrast of Jacobians of shape ``(..., m, n)`` with ``m >= n``; returns ``(...)``.

    Computes :math:`\sum_k \log\|J_{:k}\|_2 - \log|\det J|` with :math:`\log|\det J|` from
    ``torch.linalg.slogdet`` for square ``J`` and, for tall ``J``, as
    :math:`\sum_k \log|R_{kk}|` of the reduced QR factorisation :math:`J = QR`
    (:math:`= \tfrac12\log\det J^\top J` without squaring the condition number). Differentiable.
    A rank-deficient Jacobian gives ``+inf``. Computed in the dtype of ``jacobian`` (pass float64
    for accuracy when columns are nearly parallel).
    """
    if not isinstance(jacobian, torch.Tensor):
        jacobian = torch.as_tensor(np.asarray(jacobian))
    if jacobian.ndim < 2 or not jacobian.is_floating_point():
        raise ConfigError(
            f"'jacobian' must be a floating tensor of shape (..., m, n), got shape "
            f"{tuple(jacobian.shape)} and dtype {jacobian.dtype}."
        )
    m, n = jacobian.shape[-2:]
    if m < n or n == 0:
        raise ConfigError(
            f"'jacobian' has shape (..., {m}, {n}) but c_IMA needs m >= n >= 1 (observation dim "
            f"at least the latent dim, columns = ∂f/∂z_k); for an encoder pass the decoder/mixing "
            f"direction, or transpose a row-convention Jacobian."
        )
    log_col_norms = torch.log(torch.linalg.vector_norm(jacobian, dim=-2)).sum(dim=-1)
    if m == n:
        log_abs_det = torch.linalg.slogdet(jacobian).logabsdet
    else:
        r = torch.linalg.qr(jacobian, mode="reduced").R
        log_abs_det = torch.log(torch.diagonal(r, dim1=-2, dim2=-1).abs()).sum(dim=-1)
    return log_col_norms - log_abs_det


def _as_latents(z) -> torch.Tensor:
    if not isinstance(z, torch.Tensor):
        arr = np.asarray(z)
        z = torch.as_tensor(arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(float))
    if z.ndim != 2:
        raise ConfigError(
            f"'z' must have shape (N, n) (samples × latent dims), got {tuple(z.shape)}; for one "
            f"point use z.unsqueeze(0)."
        )
    if not z.is_floating_point():
        z = z.to(torch.get_default_dtype())
    return z


def batched_jacobian(
    fn: Callable[[torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    chunk_size: int | None = None,
) -> torch.Tensor:
    r"""Per-sample Jacobians :math:`J_f(z_b) = \partial f/\partial z` of a batched map: (N, m, n).

    ``fn`` maps a batch ``(B, n)`` to ``(B, ...)``; each sample's output is flattened to ``m``
    values. Each sample is differentiated *on its own* (``fn`` is called on batches of one), so maps
    that mix samples within a batch cannot leak into the Jacobian. Uses
    ``torch.func.vmap(torch.func.jacrev(·), chunk_size=chunk_size)`` — or ``jacfwd`` when each
    sample has more outputs than inputs (``m > n``, e.g. a decoder to images: n forward passes
    instead of m backward ones); if ``fn`` is not
    functorch-compatible (``.item()``, data-dependent control flow, …) falls back, with a warning,
    to a slower loop over samples with ``torch.autograd.functional.jacobian`` (whose result is not
    differentiable with respect to ``fn``'s parameters). Runs in ``z``'s dtype and device: pass
    float64 latents (and a float64 ``fn``) for float64 Jacobians. Put modules in ``eval()`` mode
    first (batch statistics and dropout make per-sample Jacobians meaningless).
    """
    z = _as_latents(z)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ConfigError(f"'chunk_size' must be a positive integer or None, got {chunk_size!r}.")

    def single(zi: torch.Tensor) -> torch.Tensor:
        return fn(zi.unsqueeze(0)).reshape(-1)

    try:
        with torch.no_grad():
            m = single(z[:1][0]).numel() if z.shape[0] else 0
        jac_fn = torch.func.jacfwd if m > z.shape[-1] else torch.func.jacrev
        jac = torch.func.vmap(jac_fn(single), chunk_size=chunk_size)(z)
    except Exception as exc:  # functorch-incompatible fn: fall back to a plain loop.
        warnings.warn(
            f"batched_jacobian: fn is not compatible with torch.func ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:120]}); falling back to a per-sample loop (slower).",
            RuntimeWarning,
            stacklevel=2,
        )
        jac = torch.stack(
            [torch.autograd.functional.jacobian(single, z[i]) for i in range(z.shape[0])]
        )
    if jac.ndim != 3:
        raise ConfigError(
            f"fn must map a batch (B, n) to outputs (B, ...); got Jacobians of shape "
            f"{tuple(jac.shape)}."
        )
    return jac


def c_ima(
    fn: Callable[[torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    chunk_size: int | None = None,
) -> torch.Tensor:
    r"""Local IMA contrast :math:`c_{\text{IMA}}(f, z_b)` of every sample; returns shape ``(N,)``.

    Args:
        fn: the map whose Jacobian is scored — a mixing/decoder from latents ``(B, n)`` to
            observations ``(B, m)`` (or ``(B, ...)``, flattened), ``m >= n``.
        z: latents ``(N, n)`` at which to evaluate (tensor or array; float64 stays float64).
        chunk_size: samples per ``vmap`` chunk (bounds memory); ``None`` = all at once.

    See :func:`batched_jacobian` for how the Jacobians are computed and
    :func:`c_ima_from_jacobian` for the formula (Reizinger et al., Eq. 5).
    """
    return c_ima_from_jacobian(batched_jacobian(fn, z, chunk_size=chunk_size))


def global_c_ima(
    fn: Callable[[torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    chunk_size: int | None = None,
) -> float:
    r"""Global IMA contrast :math:`C_{\text{IMA}} = \mathbb{E}_{z\sim p_0}[c_{\text{IMA}}(f, z)]`.

    Monte Carlo estimate: the mean of :func:`c_ima` over the given samples ``z`` (drawn from the
    prior :math:`p_0`). Returns a float. For a differentiable regulariser use
    ``c_ima(fn, z).mean()``.
    """
    return float(c_ima(fn, z, chunk_size=chunk_size).detach().mean())


def c_ima_of_mean_jacobian(
    fn: Callable[[torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    chunk_size: int | None = None,
) -> float:
    r""":math:`c_{\text{IMA}}` of the batch-mean Jacobian :math:`\frac1N\sum_b J_f(z_b)` (a float).

    This is the quantity the reference code of Reizinger et al. logged. It is **not** the global
    IMA contrast (see :func:`global_c_ima`); the two coincide when the Jacobian is constant (linear
    maps) and differ in general for nonlinear ones. Provided to compare with the reference.
    """
    jac = batched_jacobian(fn, z, chunk_size=chunk_size)
    return float(c_ima_from_jacobian(jac.detach().mean(dim=0)))
