"""Draw a data set from a setting's generative side and save it for any framework (``.npz``)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch

from unmix.errors import ConfigError
from unmix.generative import latent_process_of, mixing_of
from unmix.runs import atomic_write_bytes
from unmix.seeds import torch_generator
from unmix.settings import Setting


def sample_dataset(setting: Setting, n: int, seed: int | None = None) -> dict[str, np.ndarray]:
    """``n`` positive pairs: arrays ``z``, ``z_pos``, ``x = g(z)``, ``x_pos = g(z_pos)``.

    The mixing g is fixed by the setting's data seed; ``seed`` (default: the data seed) drives the
    latent draws (its ``data/sample`` stream).
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100_000_000:
        raise ConfigError(f"--n must be a whole number in [1, 1e8], got {n}.")
    process = latent_process_of(setting)
    mixing = mixing_of(setting)
    g = torch_generator(setting.seeds.data if seed is None else seed, "data/sample")
    z, z_pos = process.sample_pairs(n, g)
    with torch.no_grad():
        x, x_pos = mixing(z), mixing(z_pos)
    return {k: v.numpy() for k, v in {"z": z, "z_pos": z_pos, "x": x, "x_pos": x_pos}.items()}


def save_dataset(path: str | Path, arrays: dict[str, np.ndarray], setting: Setting) -> Path:
    """Write ``arrays`` plus the setting (YAML text under the key ``setting``) to ``path``."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
    buf = io.BytesIO()
    np.savez(buf, **arrays, setting=np.array(setting.to_yaml()))
    atomic_write_bytes(path, buf.getvalue())
    return path
