"""A setting's memory, estimated before anything is allocated.

:func:`check_memory` refuses a setting whose training step or evaluation would need more memory
than the machine has, with one line naming the field that drives it — instead of an allocation
traceback minutes later (or a machine that swaps). The estimate counts the large tensors only
(parameters with their gradients and Adam moments, activations kept for the backward pass,
evaluation arrays, the draws that centre a mixing), in float32 unless stated; it is an order of
magnitude, not a promise.
"""

from __future__ import annotations

import os

from unmix.errors import ConfigError
from unmix.settings import Setting

FLOAT = 4
SAFETY = 0.8
"""Refuse above this fraction of the machine's memory."""


def machine_memory() -> int:
    """Physical memory in bytes (Linux/macOS ``sysconf``; 0 if unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def _mlp_widths(setting: Setting) -> list[int]:
    dim = setting.latent.dim
    hidden = getattr(setting.model, "hidden", ()) or ()
    return [dim, *(h * dim for h in hidden), dim]


def estimate_memory(setting: Setting) -> dict[str, int]:
    """Bytes per part of a training run, keyed by the setting field that drives each part."""
    dim, t = setting.latent.dim, setting.train
    out: dict[str, int] = {}
    kind = setting.model.kind
    images = setting.observes_images
    if kind in ("mlp", "vae") and not images:
        widths = _mlp_widths(setting)
        if kind == "vae":
            widths = widths + widths[::-1]  # encoder and decoder
        params = sum(a * b for a, b in zip(widths, widths[1:], strict=False))
        out["model.hidden"] = 4 * FLOAT * params  # weights, gradients, two Adam moments
        negatives = getattr(setting.objective, "negatives", "")
        m = getattr(setting.objective, "n_negatives", 0) if negatives != "queue" else 0
        shared = negatives == "shared"
        rows = 2 * t.batch_size + (m if shared else t.batch_size * m)
        out["train.batch_size"] = 3 * FLOAT * rows * sum(widths)
        chunk = min(t.eval_samples, 8192)
        out["train.eval_samples"] = FLOAT * chunk * max(widths) * 2 + 8 * 4 * t.eval_samples * dim
    elif images:
        size = getattr(setting.mixing, "image_size", 64)
        pixels = 3 * size * size
        out["train.batch_size"] = 40 * FLOAT * 2 * t.batch_size * pixels  # conv activations
        out["train.eval_samples"] = 8 * 4 * t.eval_samples * dim
    if getattr(setting.mixing, "center", False):
        out["mixing.center_samples"] = 3 * 8 * setting.mixing.center_samples * dim
    cond_pool = getattr(setting.mixing, "cond_pool_size", 0)
    if cond_pool:
        out["mixing.cond_pool_size"] = 8 * min(cond_pool, 4096) * dim * dim
    return out


def check_memory(setting: Setting, available: int | None = None) -> None:
    """Raise a one-line :class:`ConfigError` if ``setting`` needs more than ``SAFETY`` of the
    machine's memory (or of ``available`` bytes), naming the field that needs the most."""
    total = machine_memory() if available is None else available
    if total <= 0:
        return
    parts = estimate_memory(setting)
    need = sum(parts.values())
    if need <= SAFETY * total:
        return
    field, most = max(parts.items(), key=lambda kv: kv[1])
    raise ConfigError(
        f"{field}: this setting needs ≈ {_gb(need)} of memory ({field}: {_gb(most)}), but the "
        f"machine has {_gb(total)}: reduce {field}"
        + (" or latent.dim" if field != "latent.dim" else "")
    )


def _gb(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"
