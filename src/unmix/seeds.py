"""Named seed streams: every random stream of a run comes from ``(seed, stream name)``.

A run has two user-facing seeds (``seeds.data`` and ``seeds.train``). Each random stream it needs —
the mixing's weights, the evaluation set, the encoder's initialisation, the training batches … —
is derived from one of them and the stream's *name* with :class:`numpy.random.SeedSequence`
(the name's UTF-8 bytes are part of the entropy), never by adding offsets. So streams of
different names or different seeds do not coincide (up to a 2⁻⁶³ collision chance), and adding a
stream changes no other.

>>> from unmix.seeds import stream_seed
>>> stream_seed(0, "train/batches") != stream_seed(0, "train/init")
True
"""

from __future__ import annotations

import numpy as np
import torch

from unmix.errors import ConfigError

MAX_SEED = 2**63 - 1

DATA_STREAMS = (
    "mixing",
    "eval",
    "center",
    "input_standardization",
    "marginal_params",
    "render",
    "elbo_eval",
    "reference",
    "sample",
)
"""Streams of the data seed: mixing weights (a composed mixing's parts take ``mixing/0``,
``mixing/1`` …), evaluation latents, the draws that estimate the mean observation, the draws that
fix the input standardisation, a marginal's random parameters (a Beta's shapes), the rendered data
set, the evaluation ELBO's noise, a reference sample for reports, and ``unmix sample``'s draws."""
TRAIN_STREAMS = ("init", "batches")
"""Streams of the training seed: the model's initialisation and the training batches."""


def check_seed(seed: object, field: str = "seed") -> int:
    """``seed`` as an int in [0, 2⁶³), or a :class:`ConfigError` naming ``field``."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(f"{field} must be a whole number in [0, 2^63), got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ConfigError(f"{field} must be in [0, 2^63), got {seed}")
    return int(seed)


def _entropy(name: str) -> list[int]:
    data = name.encode()
    return [len(data), *(int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4))]


def seed_sequence(seed: int, name: str) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of stream ``name`` of ``seed``."""
    seed = check_seed(seed)
    return np.random.SeedSequence([seed & 0xFFFFFFFF, seed >> 32, *_entropy(name)])


def stream_seed(seed: int, name: str) -> int:
    """A 63-bit integer seed for stream ``name`` of ``seed`` (for ``torch.manual_seed`` and for
    components that take an int seed)."""
    lo, hi = seed_sequence(seed, name).generate_state(2, np.uint32)
    return (int(hi) << 32 | int(lo)) & MAX_SEED


def torch_generator(seed: int, name: str, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with :func:`stream_seed`."""
    return torch.Generator(device=device).manual_seed(stream_seed(seed, name))


def numpy_rng(seed: int, name: str) -> np.random.Generator:
    """A NumPy ``Generator`` (PCG64) of stream ``name`` of ``seed``."""
    return np.random.default_rng(seed_sequence(seed, name))


def data_stream(seeds, name: str) -> int:
    """Stream ``name`` of a setting's data seed (``seeds`` is the setting's ``seeds`` section)."""
    return stream_seed(seeds.data, f"data/{name}")


def train_stream(seeds, name: str) -> int:
    """Stream ``name`` of a setting's training seed."""
    return stream_seed(seeds.train, f"train/{name}")


def manifest_streams(seeds) -> dict[str, int]:
    """Every named stream of a run with its derived seed (recorded in ``manifest.json``)."""
    out = {f"data/{n}": data_stream(seeds, n) for n in DATA_STREAMS}
    out.update({f"train/{n}": train_stream(seeds, n) for n in TRAIN_STREAMS})
    return out
