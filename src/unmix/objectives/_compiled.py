r"""Compiled block kernels for the general-``p`` contrastive losses (``torch.compile``, Inductor).

The eager general-``p`` path of :mod:`unmix.objectives._chunked` forms each row block's
differences ``d = a_i − c_j`` as a ``(rows, n, N)`` tensor and makes several passes over it
(``|d|^p``, the sum over features, the slope ``p·sign(d)|d|^{p−1}``, the weighted sums). Here
the two heavy steps are single fused loops that never store ``d``:

.. math::

    S_{ij} = \sum_k |a_{ik} - c_{jk}|^p, \qquad
    G^a_{ik} = \sum_j w_{ij}\,\phi(a_{ik} - c_{jk}), \qquad
    G^c_{kj} = \sum_i w_{ij}\,\phi(a_{ik} - c_{jk}),

with :math:`\phi(d) = p\,\mathrm{sign}(d)|d|^{p-1}` and ``w`` the block's softmax weights times
the logit's derivative in ``S`` (formed eagerly on the ``(rows, N)`` block). The results equal the
eager path's to float32 rounding (the sums run in another order), not bit for bit.

Which path runs is chosen by :func:`loss_kernels` (``train.loss_kernels`` of a setting):
``eager``; ``compiled``; or ``auto`` (the default): compiled where Inductor can build kernels for
the device (a C++ compiler on CPU) and a block has at least :data:`AUTO_MIN_CANDIDATES`
candidates — below that the first call's compile time (seconds) is not repaid. The first compile
in a process takes seconds; Inductor caches kernels on disk for later processes.

Example::

    >>> import torch
    >>> from unmix.objectives import LpInfoNCE
    >>> from unmix.objectives._compiled import loss_kernels
    >>> a, b = torch.randn(64, 3), torch.randn(64, 3)
    >>> with loss_kernels("eager"):
    ...     eager = LpInfoNCE(p=1.0, tau=0.5)(a, b)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Literal

import torch

from unmix.errors import ConfigError

LossKernels = Literal["auto", "compiled", "eager"]
LOSS_KERNELS: tuple[str, ...] = ("auto", "compiled", "eager")

#: ``auto`` compiles when a block scores at least this many candidates (the batch, for in-batch
#: negatives). At ``--budget quick``'s 1,024 the compiled Table 2 row 1 step (p = 1) is 10 ms
#: faster on one thread (27.0 → 16.9 ms, ``benchmarks/loss_kernels.sh``); the compile costs
#: seconds, which short small-batch runs (the smoke budget's batch 128) do not repay.
AUTO_MIN_CANDIDATES = 512


@dataclasses.dataclass
class KernelChoice:
    """The mode in force and the paths the losses actually took (for the run's manifest)."""

    mode: str
    used: set[str] = dataclasses.field(default_factory=set)


_CHOICE: contextvars.ContextVar[KernelChoice | None] = contextvars.ContextVar(
    "unmix_loss_kernels", default=None
)


def _check(mode: str) -> None:
    if mode not in LOSS_KERNELS:
        raise ConfigError(
            f"train.loss_kernels must be one of {', '.join(LOSS_KERNELS)}, got {mode!r}."
        )


@contextlib.contextmanager
def _validation_kept() -> Iterator[None]:
    """TorchDynamo's first use switches ``torch.distributions``' argument validation off for the
    whole process (``Distribution.set_default_validate_args(False)``); unmix's distributions
    validate by that default, so it is put back."""
    from torch.distributions import Distribution

    before = Distribution._validate_args
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)


@functools.cache
def compiler_available(device_type: str = "cpu") -> bool:
    """Whether ``torch.compile`` builds and runs a kernel on this device type (checked once per
    process by compiling a two-element sum)."""
    try:
        with _validation_kept():
            fn = torch.compile(lambda x: (x * x).sum(), dynamic=False, fullgraph=True)
            x = torch.ones(2, device=device_type)
            return bool(fn(x).item() == 2.0)
    except Exception:  # no C++ compiler, no Triton, a broken toolchain: the eager path runs
        return False


@contextlib.contextmanager
def loss_kernels(mode: str, device_type: str | None = None) -> Iterator[KernelChoice]:
    """Run the general-``p`` losses' block kernels in this block ``compiled``, ``eager`` or
    ``auto``; yields a :class:`KernelChoice` whose ``used`` collects the paths taken.

    ``compiled`` with a ``device_type`` whose compiler is missing is one ``ConfigError`` line."""
    _check(mode)
    if mode == "compiled" and device_type is not None and not compiler_available(device_type):
        raise ConfigError(
            f"train.loss_kernels: compiled, but torch.compile cannot build kernels for "
            f"{device_type} here (no C++ compiler / Triton). Set train.loss_kernels=auto or eager."
        )
    choice = KernelChoice(mode)
    token = _CHOICE.set(choice)
    try:
        yield choice
    finally:
        _CHOICE.reset(token)


def current_choice() -> KernelChoice | None:
    """The :class:`KernelChoice` of the innermost :func:`loss_kernels` block (``None``: none)."""
    return _CHOICE.get()


def use_compiled(device: torch.device, n_candidates: int) -> bool:
    """Whether a general-``p`` block on ``device`` against ``n_candidates`` runs compiled here
    (and records the choice in the :class:`KernelChoice` in force)."""
    choice = _CHOICE.get()
    mode = choice.mode if choice is not None else "auto"
    if mode == "eager":
        out = False
    elif mode == "compiled":
        out = True
    else:
        out = (
            device.type == "cpu"
            and n_candidates >= AUTO_MIN_CANDIDATES
            and compiler_available(device.type)
        )
    if choice is not None:
        choice.used.add("compiled" if out else "eager")
    return out


# --- the kernels: one pair per exponent family, so that p = 1, 2, 3 need no pow ---------------


def _diff(x: torch.Tensor, cT: torch.Tensor) -> torch.Tensor:
    return x.unsqueeze(2) - cT.unsqueeze(0)  # (rows, n, N); fused away by Inductor


def _sums_1(x, cT, p):
    return _diff(x, cT).abs().sum(1)


def _slopes_1(x, cT, w, p):
    ws = torch.sign(_diff(x, cT)) * w.unsqueeze(1)
    return ws.sum(2), ws.sum(0)


def _sums_2(x, cT, p):
    d = _diff(x, cT)
    return (d * d).sum(1)


def _slopes_2(x, cT, w, p):
    ws = 2.0 * _diff(x, cT) * w.unsqueeze(1)
    return ws.sum(2), ws.sum(0)


def _sums_3(x, cT, p):
    d = _diff(x, cT)
    return (d.abs() * d * d).sum(1)


def _slopes_3(x, cT, w, p):
    d = _diff(x, cT)
    ws = 3.0 * d * d.abs() * w.unsqueeze(1)
    return ws.sum(2), ws.sum(0)


def _abs_clamped(d, p):
    # |d| ≥ tiny where p < 1 (the slope of |d|^p is infinite at 0), as the eager path does
    tiny = torch.finfo(d.dtype).tiny
    return torch.where(p < 1.0, d.abs().clamp_min(tiny), d.abs())


def _sums_p(x, cT, p):
    return _abs_clamped(_diff(x, cT), p).pow(p).sum(1)


def _slopes_p(x, cT, w, p):
    d = _diff(x, cT)
    ws = p * torch.sign(d) * _abs_clamped(d, p).pow(p - 1.0) * w.unsqueeze(1)
    return ws.sum(2), ws.sum(0)


_FAMILIES = {1.0: (_sums_1, _slopes_1), 2.0: (_sums_2, _slopes_2), 3.0: (_sums_3, _slopes_3)}


@functools.cache
def _compiled(fn: Callable, key: tuple) -> Callable:
    """``fn`` compiled for one ``key`` (the shapes, dtype and device of its arguments).

    Static shapes: with the candidate count N known, the reductions over N vectorise; blocks are
    padded to one row count, so a run compiles each function once per (rows, N, n, dtype). Each
    key compiles a fresh copy of ``fn``'s code, so a process that meets many shapes (a test suite,
    a notebook) never reaches TorchDynamo's per-function recompile limit. A compile that fails on
    the first call falls back to the eager function for this key."""
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1  # compile in this process (sweep workers are daemons)
    copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__)
    with _validation_kept():
        compiled = torch.compile(copy, dynamic=False, fullgraph=True)
    chosen: list[Callable] = []  # set by the first call: compiled, or fn if compiling failed

    def run(*args):
        if chosen:
            return chosen[0](*args)
        with _validation_kept():  # the first call compiles, and TorchDynamo patches torch
            try:
                out = compiled(*args)
                chosen.append(compiled)
            except Exception as err:  # a toolchain that fails on this shape: the eager path
                warnings.warn(
                    f"unmix: compiling {fn.__name__} failed ({err!r:.200}); eager path",
                    stacklevel=2,
                )
                chosen.append(fn)
                out = fn(*args)
        return out

    return run


def _call(fn: Callable, *args: torch.Tensor):
    key = tuple((tuple(a.shape), a.dtype, a.device.type) for a in args)
    return _compiled(fn, key)(*args)


def _pad_rows(t: torch.Tensor, rows: int) -> torch.Tensor:
    if t.shape[0] == rows:
        return t
    return torch.cat([t, t.new_zeros(rows - t.shape[0], *t.shape[1:])])


def block_fns(p: float, compiled: bool = True) -> tuple[Callable, Callable]:
    """``(sums, slopes)`` for exponent ``p``: ``sums(x, cT, rows) → S`` ``(r, N)`` and
    ``slopes(x, cT, w, rows) → (G^a (r, n), G^c (n, N))`` of the module docstring, for a block of
    ``r ≤ rows`` anchors ``x`` (padded with zero rows of zero weight to ``rows``: one shape per
    run); ``compiled=False``: the same functions run eagerly (the tests' reference)."""
    sums, slopes = _FAMILIES.get(float(p), (_sums_p, _slopes_p))

    def call(fn, *args):
        return _call(fn, *args) if compiled else fn(*args)

    def run_sums(x: torch.Tensor, cT: torch.Tensor, rows: int) -> torch.Tensor:
        pt = torch.tensor(float(p), dtype=x.dtype, device=x.device)
        return call(sums, _pad_rows(x, rows), cT, pt)[: x.shape[0]]

    def run_slopes(x: torch.Tensor, cT: torch.Tensor, w: torch.Tensor, rows: int):
        pt = torch.tensor(float(p), dtype=x.dtype, device=x.device)
        g_x, g_cT = call(slopes, _pad_rows(x, rows), cT, _pad_rows(w, rows), pt)
        return g_x[: x.shape[0]], g_cT

    return run_sums, run_slopes
