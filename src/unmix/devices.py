"""``--device``: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``, checked before anything runs."""

from __future__ import annotations

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
