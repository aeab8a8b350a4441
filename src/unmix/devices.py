"""``--device``: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``, checked before anything runs; what the
machine's processor can do (:func:`cpu_flags`, :func:`native_bf16`); the C heap's top pad
(:func:`set_heap_pad`)."""

from __future__ import annotations

import ctypes
import functools
import platform
import re

import torch

from unmix.errors import ConfigError


def resolve_device(device: str) -> str:
    """The device string to use, or one readable :class:`ConfigError` (no CUDA, no such GPU,
    an unknown name). ``auto`` picks ``cuda`` when a GPU is visible, else ``cpu``."""
    device = str(device).strip().lower()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if m is None:
        raise ConfigError(f"--device must be cpu, cuda, cuda:N or auto; got '{device}'.")
    if not torch.cuda.is_available():
        raise ConfigError(
            f"--device {device}: CUDA is not available on this machine (torch "
            f"{torch.__version__}, no visible GPU): use --device cpu or auto."
        )
    if m.group(1) is not None and int(m.group(1)) >= torch.cuda.device_count():
        raise ConfigError(
            f"--device {device}: only {torch.cuda.device_count()} GPU(s) visible "
            f"(cuda:0 … cuda:{torch.cuda.device_count() - 1})."
        )
    return device


@functools.cache
def _cpuinfo_line(*keys: str) -> str | None:
    """The value of the first ``/proc/cpuinfo`` line starting with one of ``keys`` (read once per
    key set); ``None`` where there is none or no such file (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(keys):
                    return line.split(":", 1)[1]
    except OSError:
        pass
    return None


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``avx2``, ``avx512f``, ``avx512_bf16``, … on x86; ``bf16``, …
    on Arm), from ``/proc/cpuinfo`` (its ``flags`` or ``Features`` line); empty where unknown."""
    return frozenset((_cpuinfo_line("flags", "Features") or "").split())


@functools.cache
def cpu_vendor() -> str:
    """The CPU's vendor string (``GenuineIntel``, ``AuthenticAMD``, …; ``""`` where unknown), from
    ``/proc/cpuinfo`` on Linux, else from :func:`platform.processor`."""
    line = _cpuinfo_line("vendor_id")
    return line.strip() if line is not None else (platform.processor() or "")


#: CPU flags of native bfloat16 arithmetic: AVX-512 BF16 and AMX on x86, the BF16 extension on Arm.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def native_bf16(device: str | torch.device, flags: frozenset[str] | None = None) -> bool:
    """Whether ``device`` has bfloat16 arithmetic in hardware: on CUDA
    :func:`torch.cuda.is_bf16_supported`, on CPU one of :data:`BF16_FLAGS` among ``flags``
    (default :func:`cpu_flags`). Without it bf16 autocast still computes correctly, but PyTorch's
    bf16 matrix products fall back to slow generic code: on an AMD EPYC without AVX-512 (Zen 3) a
    Table 1 step at batch 6144 took 9.5 s in bf16 against 0.59 s in float32 (docs/performance.md).

    >>> native_bf16("cpu", frozenset({"avx2"})), native_bf16("cpu", frozenset({"avx512_bf16"}))
    (False, True)
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return bool((cpu_flags() if flags is None else flags) & BF16_FLAGS)


def bf16_warning(precision: str, device: str | torch.device) -> str | None:
    """The one-line warning for ``precision: bf16`` on a device without native bf16 (``None``
    for fp32, or where the device has it)."""
    if precision != "bf16" or native_bf16(device):
        return None
    return (
        f"precision bf16 on {torch.device(device).type}: this processor has no native bfloat16 "
        "arithmetic (none of avx512_bf16, amx_bf16, bf16), so bf16 matrix products run far slower "
        "than float32 here (16x on an AVX2-only AMD EPYC); use precision fp32 on this machine"
    )


#: glibc's ``mallopt`` parameter number of ``M_TOP_PAD`` (``<malloc.h>``).
_M_TOP_PAD = -2


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc (``gnu_get_libc_version`` exists), else None."""
    if platform.system() != "Linux":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 — only glibc has it (and mallopt's M_TOP_PAD)
        return libc
    except (OSError, AttributeError):
        return None


def set_heap_pad(megabytes: int) -> bool:
    """glibc only: ``mallopt(M_TOP_PAD, megabytes MiB)`` — the heap keeps that much freed memory
    at its top instead of returning it to the kernel, and grows by at least that much.

    A training step frees and reallocates the same activations every step; with glibc's default
    a small-batch step hands the top of the heap back and faults its pages in again (64 MiB made
    a quick-budget step ≈ 7 % faster on a 2-core VM). But setting it also stops glibc from
    raising its mmap threshold to the sizes it sees freed, so activations above 128 KiB are
    mapped afresh every step: at the paper's batch the step ran 25–35 % slower
    (docs/performance.md). Hence opt-in (``train.heap_pad_mb``, default 0). The setting is
    process-wide and stays after the call; it changes no result (PyTorch aligns its own blocks).
    Returns whether it was applied (``megabytes`` 0, not glibc: nothing done).

    >>> set_heap_pad(0)
    False
    """
    if isinstance(megabytes, bool) or not isinstance(megabytes, int) or not 0 <= megabytes <= 1024:
        raise ConfigError(f"train.heap_pad_mb must be a whole number 0–1024, got {megabytes!r}.")
    libc = _glibc()
    if megabytes == 0 or libc is None:
        return False
    return bool(libc.mallopt(ctypes.c_int(_M_TOP_PAD), ctypes.c_int(megabytes << 20)))
