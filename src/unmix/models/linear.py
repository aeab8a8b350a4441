r"""A drop-in :class:`torch.nn.Linear` whose CPU float32 products run on oneDNN.

PyTorch's CPU wheels send a float32 ``nn.Linear`` to the BLAS it was built with (MKL). On CPUs
where that BLAS takes a slow code path — measured on this project's AMD EPYC machine with AVX-512 (Zen 4),
where MKL reaches ≈ 50–100 GFLOP/s on one core and oneDNN, also bundled with PyTorch, ≈ 180 — the
encoder's products are most of a training step. :class:`Linear` keeps ``nn.Linear``'s parameters,
initialisation and ``state_dict`` keys; on a CPU float32 input it computes

.. math:: y = x W^\top + b, \qquad
          \frac{\partial L}{\partial x} = g W, \quad
          \frac{\partial L}{\partial W} = g^\top x, \quad
          \frac{\partial L}{\partial b} = \textstyle\sum_i g_i

with oneDNN's matmul primitive (``torch.ops.mkldnn._linear_pointwise``) in forward and backward.
The results equal ``nn.Linear``'s to float32 rounding, not bit for bit: a different library sums in
a different order (``tests/models/test_linear.py`` checks values and gradients against float64).

Which library runs is chosen by :func:`cpu_gemm` (a context manager; ``train.cpu_gemm`` of a
setting): ``"auto"`` (default) keeps PyTorch's BLAS where that BLAS is MKL on an Intel CPU (MKL's
own vendor, where it takes its fast paths: on this project's Intel Xeon machine it beat oneDNN by
1.2–1.3× on the training step) or on a CPU without AVX-512 (both libraries then run AVX2 kernels;
MKL's were 1.1–1.2× faster on an AMD EPYC Zen 3), and uses oneDNN on other AVX-512 CPUs where
PyTorch was built with it (see :func:`auto_cpu_gemm`); ``"onednn"`` requires oneDNN, ``"blas"`` keeps PyTorch's own path. Every
other case takes PyTorch's path too: CUDA, dtypes other than float32, bf16 autocast (which
already runs on oneDNN), and inside ``torch.func`` transforms (``vmap``/``jacrev``, as
:mod:`unmix.metrics.c_ima` uses). The backward is once differentiable (no double backward through
the oneDNN path).

Example::

    >>> import torch
    >>> from unmix.models.linear import Linear, cpu_gemm
    >>> layer = Linear(4, 3)
    >>> x = torch.randn(5, 4)
    >>> with cpu_gemm("blas"):
    ...     y_blas = layer(x)
    >>> torch.allclose(layer(x), y_blas, atol=1e-6)
    True
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Literal

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from unmix.devices import cpu_flags, cpu_vendor
from unmix.errors import ConfigError

CpuGemm = Literal["auto", "onednn", "blas"]
CPU_GEMMS: tuple[str, ...] = ("auto", "onednn", "blas")

_BACKEND: contextvars.ContextVar[str] = contextvars.ContextVar("unmix_cpu_gemm", default="auto")


@functools.cache
def onednn_available() -> bool:
    """Whether this PyTorch build has oneDNN's linear primitive (checked once: every layer's
    forward asks)."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(
        torch.ops.mkldnn, "_linear_pointwise"
    )


def auto_cpu_gemm(vendor: str, blas_is_mkl: bool, has_onednn: bool, avx512: bool = True) -> str:
    """What ``train.cpu_gemm: auto`` picks: ``blas`` when PyTorch's BLAS is MKL and the CPU is
    Intel's (``vendor`` ``GenuineIntel``) or has no AVX-512 (``avx512``: the ``avx512f`` flag),
    or when there is no oneDNN; ``onednn`` otherwise — an AVX-512 CPU of another vendor, or a
    BLAS that is not MKL.

    MKL dispatches its AVX-512 kernels by vendor: on the AMD EPYC machine with AVX-512 this
    project measured (Zen 4), a 2048² float32 GEMM ran at ≈ 175 GFLOP/s on MKL and ≈ 390 on
    oneDNN (two threads); on an AMD EPYC without AVX-512 (Zen 3, AVX2), where both libraries run
    AVX2 kernels, MKL reached ≈ 180 against oneDNN's 140–155 and the training step ran 1.1–1.2×
    faster on it; on the Intel Xeon machine (AVX-512, AMX) MKL reached 313–364 against oneDNN's
    293–345, and the step ran 1.2–1.3× faster (docs/performance.md). The choice depends on the
    machine only — never on a timing — so a run's library, and with it its float32 rounding, is
    the same every time on one machine.

    >>> auto_cpu_gemm("GenuineIntel", True, True), auto_cpu_gemm("AuthenticAMD", True, True)
    ('blas', 'onednn')
    >>> auto_cpu_gemm("AuthenticAMD", True, True, avx512=False)
    'blas'
    """
    if not has_onednn or (blas_is_mkl and (vendor == "GenuineIntel" or not avx512)):
        return "blas"
    return "onednn"


@functools.cache
def _auto() -> str:
    """:func:`auto_cpu_gemm` on this machine and build, once (every layer's forward asks)."""
    return auto_cpu_gemm(
        cpu_vendor(),
        bool(torch.backends.mkl.is_available()),
        onednn_available(),
        avx512="avx512f" in cpu_flags(),
    )


def float32_tail(y: torch.Tensor, *layers: nn.Module) -> torch.Tensor:
    """``layers`` applied to ``y`` in float32 with autocast off: how an encoder under bf16
    autocast keeps its output layer and head (and an MLP its input layer) out of bf16."""
    with torch.autocast(y.device.type, enabled=False):
        y = y.float()
        for layer in layers:
            y = layer(y)
    return y


def resolve_cpu_gemm(backend: str) -> str:
    """``auto`` → ``onednn`` or ``blas`` on this machine and build (:func:`auto_cpu_gemm`);
    ``onednn`` without it → one-line error."""
    if backend not in CPU_GEMMS:
        raise ConfigError(f"train.cpu_gemm must be one of {', '.join(CPU_GEMMS)}, got {backend!r}.")
    if backend == "auto":
        return _auto()
    if backend == "onednn" and not onednn_available():
        raise ConfigError(
            "train.cpu_gemm: onednn, but this PyTorch build has no oneDNN. "
            "Set train.cpu_gemm=auto or blas."
        )
    return backend


@contextlib.contextmanager
def cpu_gemm(backend: str) -> Iterator[str]:
    """Run the block's :class:`Linear` layers on ``backend`` (``auto``, ``onednn``, ``blas``);
    yields the library chosen."""
    chosen = resolve_cpu_gemm(backend)
    token = _BACKEND.set(chosen)
    try:
        yield chosen
    finally:
        _BACKEND.reset(token)


def current_cpu_gemm() -> str:
    """The library :class:`Linear` uses for CPU float32 inputs in this context."""
    return resolve_cpu_gemm(_BACKEND.get())


def _mm(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """a @ wᵀ (+ bias) on oneDNN; ``a`` of shape (m, k), ``w`` of shape (n, k), strided views
    allowed."""
    return torch.ops.mkldnn._linear_pointwise(a, w, bias, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
        ctx.save_for_backward(x, weight)  # x of shape (m, k)
        ctx.has_bias = bias is not None
        return _mm(x, weight, bias)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        g = grad
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = _mm(g, weight.t())  # g W
        if ctx.needs_input_grad[1]:  # gᵀ x, the smaller of its two sides first (measured faster)
            gw = _mm(x.t(), g.t()).t() if x.shape[1] <= g.shape[1] else _mm(g.t(), x.t())
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = g.sum(0)
        return gx, gw, gb


def _use_onednn(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (
        x.device.type == "cpu"
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
        and x.dim() >= 1
        and x.numel() > 0
        and not torch.is_autocast_enabled("cpu")
        and not torch._C._are_functorch_transforms_active()
        and current_cpu_gemm() == "onednn"
    )


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear`` with the CPU float32 products on the library of
    :func:`cpu_gemm`."""
    if _use_onednn(x, weight):
        if x.dim() == 2:
            return _OneDNNLinear.apply(x, weight, bias)
        y = _OneDNNLinear.apply(x.reshape(-1, x.shape[-1]), weight, bias)
        return y.reshape(*x.shape[:-1], weight.shape[0])
    return nn.functional.linear(x, weight, bias)


class Linear(nn.Linear):
    """:class:`torch.nn.Linear` (same parameters, init and ``state_dict``) computed by
    :func:`linear`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
