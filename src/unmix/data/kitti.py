r"""Reader for KITTI Masks (Klindt et al. 2021), used by paper 000, Sec. 4.2.1 / Table 3.

Layout on disk
--------------
The authors distribute one file, ``kitti_peds_v2.pickle`` (Zenodo record 3931823), a Python
pickle of a dict with two keys:

``"pedestrians"``
    a list of S sequences; sequence ``s`` is a numpy array ``(T_s, 64, 64)`` of binary
    pedestrian masks (``bool``; ``True`` = pedestrian), consecutive video frames of one
    pedestrian instance in one horizontal 64×64 window of a KITTI-MOTS video;
``"pedestrians_latents"``
    a list of S float32 arrays ``(T_s, 3)``: per frame the mask's centre of mass, vertical
    then horizontal (pixels, ``scipy.ndimage.center_of_mass``), and its area (pixel count).

Sources (facts only): ``bethgelab/slow_disentanglement`` — ``data_generation/gen_kitti_masks.py``
builds and pickles exactly this dict (sequences are split at frames whose mask has fewer than 30
pixels and, as written, always have at least 2 frames), and ``scripts/dataset.py`` (class
``KittiMasks``, copied into ``brendel-group/cl-ica/kitti_masks/dataset.py`` for paper 000)
loads it.

Frames are flattened in file order: sequence 0's frames first, then sequence 1's, …; frame
``i`` has ``sequence[i]`` and position ``frame[i]`` within it.

Positive pairs
--------------
:meth:`KittiMasks.pairs` draws (anchor, positive) frame indices in the same sequence with
:math:`1 \le |\Delta t| \le` ``max_delta_t`` frames. Two rules:

``rule="uniform"`` (default)
    the anchor is uniform over all frames whose sequence has at least 2 frames (frames of
    1-frame sequences are never anchors, nor positives); given an anchor at position ``t`` of a
    sequence of length ``T``, the offset is uniform over the valid offsets
    :math:`\{\delta : 1 \le |\delta| \le m,\ 0 \le t + \delta < T\}`, both directions.
``rule="forward"`` (the rule of the slowVAE / cl-ica loaders)
    the anchor is uniform over frames that are not the last of their sequence
    (``t \le T - 2``); :math:`k \sim U\{1, \dots, m\}` and the positive is frame
    :math:`\min(t + k, T - 1)` — forward only, clipped at the sequence end (so offsets near the
    end pile up on the last frame).

Both take a ``torch.Generator`` and are deterministic given its state. ``max_delta_t``
defaults to 5 (the loader class's default); cl-ica's ``main_kitti.py`` passes
``--kitti-max-delta-t`` with default 1. Paper 000, Table 3 quotes the *mean* separation in
seconds (0.05 s and 0.15 s); the sources found do not state how that maps to ``max_delta_t``.

The file is a pickle, and unpickling can run code: it is read with a restricted unpickler
(:class:`unmix.safeio.RestrictedUnpickler`) that builds only numpy arrays and scalars besides
plain dicts, lists, numbers and strings, and refuses a file that refers to anything else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from unmix.data.store import ImageDataset, as_index_array
from unmix.errors import ConfigError
from unmix.safeio import UnsafePickleError, load_restricted_pickle

__all__ = ["KITTI_FACTOR_NAMES", "KITTI_FILE", "KittiMasks"]

KITTI_FILE = "kitti_peds_v2.pickle"
KITTI_FACTOR_NAMES: tuple[str, ...] = ("com_vertical", "com_horizontal", "area")
_RULES = ("uniform", "forward")


def _as_uint8_masks(seq: np.ndarray, where: str) -> np.ndarray:
    """Masks ``(T, H, W)`` of any numeric/bool dtype → uint8 with 255 = pedestrian."""
    if seq.dtype == bool:
        return seq.astype(np.uint8) * 255
    if np.issubdtype(seq.dtype, np.integer):
        hi = int(seq.max()) if seq.size else 0
        if hi <= 1:
            return seq.astype(np.uint8) * 255
        if hi <= 255 and int(seq.min()) >= 0:
            return seq.astype(np.uint8)
    if np.issubdtype(seq.dtype, np.floating):
        if not np.isfinite(seq).all():
            raise ConfigError(f"{where} holds NaN or inf mask values.")
        return np.round(np.clip(seq, 0.0, 1.0) * 255.0).astype(np.uint8)
    raise ConfigError(
        f"{where} has mask values of dtype {seq.dtype} outside [0, 255]; masks must be bool, "
        "0/1, uint8 or floats in [0, 1]."
    )


class KittiMasks(ImageDataset):
    """KITTI Masks frames with their ground-truth latents and temporal positive pairs.

    Parameters
    ----------
    path:
        ``kitti_peds_v2.pickle`` itself or a directory holding it.
    max_delta_t:
        Largest frame offset :math:`m \\ge 1` of a positive pair (cl-ica's
        ``--kitti-max-delta-t``, default 5 there too).
    rule:
        ``"uniform"`` or ``"forward"``; see the module docstring.

    Attributes
    ----------
    latents: float32 ``(N, 3)`` — centre of mass (vertical, horizontal; pixels) and area
        (pixels) of each frame's mask, as stored in the file.
    factor_names: :data:`KITTI_FACTOR_NAMES`.
    sequence, frame: int64 tensors ``(N,)`` — sequence id and position within it of each frame.
    seq_start, seq_len: int64 tensors ``(S,)``.

    ``images(idx)`` returns float32 ``(B, 1, 64, 64)`` masks in [0, 1] (1 = pedestrian).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_delta_t: int = 5,
        *,
        rule: str = "uniform",
    ) -> None:
        if isinstance(max_delta_t, bool) or not isinstance(max_delta_t, int) or max_delta_t < 1:
            raise ConfigError(f"max_delta_t must be an integer ≥ 1, got {max_delta_t!r}.")
        if rule not in _RULES:
            raise ConfigError(f"rule must be one of {_RULES}, got {rule!r}.")
        self.max_delta_t = max_delta_t
        self.rule = rule
        p = Path(path)
        if p.is_dir():
            p = p / KITTI_FILE
        if not p.is_file():
            raise ConfigError(
                f"KITTI Masks file {p} not found. Download {KITTI_FILE} from "
                "zenodo.org/record/3931823 and pass its path (or its directory)."
            )
        self.path = p
        try:
            with open(p, "rb") as fh:
                data = load_restricted_pickle(fh)
        except UnsafePickleError as err:
            raise ConfigError(
                f"{p}: unmix {err} (a KITTI Masks file holds only numpy arrays in lists and a "
                "dict, and nothing in it was run); it is not the official kitti_peds_v2.pickle."
            ) from None
        except Exception as err:  # unpickling can fail in many ways
            raise ConfigError(
                f"{p} is not a readable pickle ({type(err).__name__}: {err})."
            ) from None
        if not isinstance(data, dict) or not {"pedestrians", "pedestrians_latents"} <= set(data):
            keys = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ConfigError(
                f"{p} must hold a dict with keys 'pedestrians' and 'pedestrians_latents' "
                f"(the KITTI Masks layout of Klindt et al.), got {keys}."
            )
        seqs, lats = data["pedestrians"], data["pedestrians_latents"]
        if len(seqs) != len(lats) or len(seqs) == 0:
            raise ConfigError(
                f"{p}: 'pedestrians' has {len(seqs)} sequences but 'pedestrians_latents' has "
                f"{len(lats)}; they must match one to one (and be non-empty)."
            )
        masks, latents, lengths = [], [], []
        hw: tuple[int, int] | None = None
        for s, (seq, lat) in enumerate(zip(seqs, lats, strict=True)):
            seq, lat = np.asarray(seq), np.asarray(lat)
            where = f"{p}: sequence {s}"
            if seq.ndim != 3 or seq.shape[0] < 1:
                raise ConfigError(f"{where} has shape {seq.shape}; expected (T, H, W) masks.")
            if hw is None:
                hw = (int(seq.shape[1]), int(seq.shape[2]))
            elif tuple(seq.shape[1:]) != hw:
                raise ConfigError(f"{where} has {seq.shape[1:]} masks, others {hw}.")
            if (
                lat.ndim != 2
                or lat.shape[0] != seq.shape[0]
                or not np.issubdtype(lat.dtype, np.number)
            ):
                raise ConfigError(
                    f"{where}: latents have shape {lat.shape} for {seq.shape[0]} frames; "
                    "expected (T, k) numbers."
                )
            if latents and lat.shape[1] != latents[0].shape[1]:
                raise ConfigError(
                    f"{where}: latents have {lat.shape[1]} columns, others more/less."
                )
            masks.append(_as_uint8_masks(seq, where))
            latents.append(lat.astype(np.float32))
            lengths.append(int(seq.shape[0]))
        assert hw is not None
        self._masks = np.concatenate(masks)  # (N, H, W) uint8, 255 = pedestrian
        self.latents = torch.from_numpy(np.ascontiguousarray(np.concatenate(latents)))
        k = int(self.latents.shape[1])
        self.factor_names = list(KITTI_FACTOR_NAMES) if k == 3 else None
        self.seq_len = torch.tensor(lengths, dtype=torch.int64)
        self.seq_start = torch.cumsum(self.seq_len, 0) - self.seq_len
        self.sequence = torch.repeat_interleave(torch.arange(len(lengths)), self.seq_len)
        self.frame = torch.arange(len(self.sequence)) - self.seq_start[self.sequence]
        self._hw = hw
        t, length = self.frame, self.seq_len[self.sequence]
        m = self.max_delta_t
        # valid offsets on each side of every frame (uniform rule)
        self._n_back = torch.clamp(t, max=m)
        self._n_fwd = torch.clamp(length - 1 - t, max=m)
        if rule == "uniform":
            eligible = (self._n_back + self._n_fwd) > 0
        else:
            eligible = t <= length - 2
        self._anchors = torch.nonzero(eligible).reshape(-1)
        if self._anchors.numel() == 0:
            raise ConfigError(f"{p}: no sequence has 2 or more frames, so no positive pairs exist.")

    def __len__(self) -> int:
        return int(self._masks.shape[0])

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return (1, self._hw[0], self._hw[1])

    @property
    def n_sequences(self) -> int:
        return int(self.seq_len.numel())

    @property
    def anchor_pool(self) -> torch.Tensor:
        """Indices of the frames :meth:`pairs` may draw as anchors (uniformly)."""
        return self._anchors.clone()

    def images(self, idx: torch.Tensor | np.ndarray | Sequence[int]) -> torch.Tensor:
        index = as_index_array(idx, len(self))
        pix = torch.from_numpy(self._masks[index])
        return pix.unsqueeze(1).to(torch.float32).div_(255.0)

    def pairs(
        self, batch_size: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``batch_size`` (anchor, positive) frame-index pairs from the same sequence.

        Returns two int64 tensors ``(batch_size,)``. See the module docstring for the rules;
        for ``rule="uniform"`` every pair has :math:`1 \\le |\\Delta t| \\le` ``max_delta_t``.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}.")
        pool = self._anchors
        pick = torch.randint(len(pool), (batch_size,), generator=generator)
        anchor = pool[pick]
        if self.rule == "uniform":
            back, fwd = self._n_back[anchor], self._n_fwd[anchor]
            total = back + fwd
            r = torch.rand(batch_size, generator=generator, dtype=torch.float64)
            u = torch.minimum((r * total).floor().to(torch.int64), total - 1)
            # u in [0, back) -> offsets -back … -1 ;  u in [back, total) -> offsets 1 … fwd
            delta = torch.where(u < back, u - back, u - back + 1)
            positive = anchor + delta
        else:
            k = torch.randint(1, self.max_delta_t + 1, (batch_size,), generator=generator)
            t = self.frame[anchor]
            last = self.seq_len[self.sequence[anchor]] - 1
            positive = anchor + (torch.minimum(t + k, last) - t)
        return anchor, positive

    def __repr__(self) -> str:
        return (
            f"KittiMasks({str(self.path)!r}, n={len(self)}, sequences={self.n_sequences}, "
            f"max_delta_t={self.max_delta_t}, rule={self.rule!r})"
        )
