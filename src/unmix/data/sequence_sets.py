"""Frame-sequence data sets as registered kinds: ``mask_sequences`` and ``kitti_masks``.

Both give train/test splits of :class:`~unmix.data.masks.FrameSequences` whose positives are a
later frame of the same sequence (``positives: next_frame``, gap ``k ~ U{1, …, max_delta_t}``;
:mod:`unmix.data.masks` for the rule and the Δt̄ mapping). Splits are by whole sequences, so no
test frame's sequence was seen in training.

* ``mask_sequences`` — generated pedestrian-like silhouettes (:func:`~unmix.data.masks.
  mask_sequences`) from the data seed: ``n_train`` and ``n_test`` frames in sequences of
  ``frames_per_sequence``;
* ``kitti_masks`` — KITTI Masks (Klindt et al. 2021) read from the user's
  ``kitti_peds_v2.pickle`` at ``root`` (:class:`~unmix.data.kitti.KittiMasks`); a fraction
  ``test_fraction`` of the sequences (drawn from the data seed) is held out.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from unmix.data.masks import TRANSITION_ALPHA, TRANSITION_SCALES, FrameSequences, mask_sequences
from unmix.data.sets import DataSpecBase
from unmix.errors import ConfigError
from unmix.registry import SpecBase, register_dataset
from unmix.seeds import numpy_rng

MaxDeltaT = Annotated[int, Field(ge=1, le=1000)]
Shape = Annotated[float, Field(gt=0, le=2)]


class MaskSequencesSpec(DataSpecBase):
    """``mask_sequences``: generated silhouettes with sparse (generalised-Laplace) transitions;
    ``n_train``/``n_test`` count frames. ``dim`` 3 (x, y, scale) or 4 (+ aspect) must equal
    ``latent.dim``. ``alpha`` (one shape, or one per latent) and ``scales`` are the
    transitions' shapes and per-frame scales (default: Klindt et al.'s fits to KITTI Masks,
    :mod:`unmix.data.masks`). ``shape_jitter`` (per-sequence figure
    proportions) and ``edge_noise`` (per-frame ragged outline, pixels) are nuisances, off by
    default; ``latents: measured`` scores against each mask's centre of mass and area, as
    KITTI Masks does; ``anchor: feet`` makes ``y`` the figure's foot line instead of its centre
    (:func:`~unmix.data.masks.mask_sequences`)."""

    kind: Literal["mask_sequences"] = "mask_sequences"
    positives: Literal["next_frame"] = "next_frame"
    max_delta_t: MaxDeltaT = 1
    frames_per_sequence: Annotated[int, Field(ge=2, le=100_000)] = 50
    image_size: Literal[16, 32, 64, 128] = 64
    dim: Literal[3, 4] = 3
    alpha: Shape | tuple[Shape, ...] = TRANSITION_ALPHA
    scales: tuple[Annotated[float, Field(gt=0, le=1)], ...] = TRANSITION_SCALES
    binary: bool = False
    shape_jitter: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    edge_noise: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 0.0
    latents: Literal["generative", "measured"] = "generative"
    anchor: Literal["centre", "feet"] = "centre"

    @model_validator(mode="after")
    def _check(self):
        if self.root is not None:
            raise ValueError(
                "mask_sequences is generated, it reads no files: for KITTI Masks set "
                "data.kind=kitti_masks with data.root=DIR (or UNMIX_KITTI_ROOT for "
                "zimmermann-table3)"
            )
        if self.latents == "measured" and self.dim != 3:
            raise ValueError("latents 'measured' gives 3 latents (com_x, com_y, area): set dim 3")
        if len(self.scales) < self.dim:
            raise ValueError(f"scales needs {self.dim} values (one per latent), got {self.scales}")
        if isinstance(self.alpha, tuple) and len(self.alpha) < self.dim:
            raise ValueError(
                f"alpha needs one shape or {self.dim} (one per latent), got {list(self.alpha)}"
            )
        return self


class KittiMasksSpec(SpecBase):
    """``kitti_masks``: the authors' ``kitti_peds_v2.pickle`` at ``root`` (a file or its
    directory); positives a later frame (``max_delta_t``); ``test_fraction`` of the sequences
    held out (≥ 1 sequence each side)."""

    kind: Literal["kitti_masks"] = "kitti_masks"
    root: str
    positives: Literal["next_frame"] = "next_frame"
    max_delta_t: MaxDeltaT = 1
    test_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.2


@register_dataset("mask_sequences", spec=MaskSequencesSpec)
def mask_sequence_splits(
    setting: Any,
    *,
    n_train: int = 20_000,
    n_test: int = 5_000,
    max_delta_t: int = 1,
    frames_per_sequence: int = 50,
    image_size: int = 64,
    dim: int = 3,
    alpha: float | tuple[float, ...] = TRANSITION_ALPHA,
    scales: tuple[float, ...] = TRANSITION_SCALES,
    binary: bool = False,
    shape_jitter: float = 0.0,
    edge_noise: float = 0.0,
    latents: str = "generative",
    anchor: str = "centre",
):
    seed = setting.seeds.data
    out = []
    for split, n in (("train", n_train), ("test", n_test)):
        rng = numpy_rng(seed, f"data/mask_sequences/{split}")
        out.append(
            mask_sequences(
                rng,
                n,
                frames_per_sequence,
                dim,
                image_size,
                max_delta_t,
                alpha,
                scales,
                binary,
                shape_jitter=shape_jitter,
                edge_noise=edge_noise,
                latents=latents,
                anchor=anchor,
            )
        )
    return tuple(out)


def split_sequences(
    data: FrameSequences, test_fraction: float, rng: np.random.Generator
) -> tuple[FrameSequences, FrameSequences]:
    """Whole sequences to train and test: a random ``test_fraction`` of the multi-frame
    sequences (at least one, and at least one left for training) to test."""
    multi = np.flatnonzero(data.seq_len.numpy() >= 2)
    if len(multi) < 2:
        raise ConfigError(
            "a train/test split by sequences needs at least 2 sequences of 2 or more frames"
        )
    order = rng.permutation(multi)
    n_test = min(max(1, round(test_fraction * len(multi))), len(multi) - 1)
    return data.subset(np.sort(order[n_test:])), data.subset(np.sort(order[:n_test]))


def frames_of(reader: Any, max_delta_t: int) -> FrameSequences:
    """A :class:`~unmix.data.kitti.KittiMasks` reader's frames as :class:`FrameSequences`."""
    n = len(reader)
    masks = np.empty((n, *reader.image_shape[1:]), dtype=np.uint8)
    for start in range(0, n, 1024):
        idx = np.arange(start, min(start + 1024, n))
        masks[idx] = (reader.images(idx)[:, 0].numpy() * 255.0).round().astype(np.uint8)
    return FrameSequences(
        masks,
        reader.latents.numpy(),
        reader.seq_len.tolist(),
        max_delta_t,
        reader.factor_names,
    )


@register_dataset("kitti_masks", spec=KittiMasksSpec)
def kitti_mask_splits(setting: Any, *, root: str, max_delta_t: int = 1, test_fraction: float = 0.2):
    from pathlib import Path

    from unmix.data.kitti import KittiMasks

    reader = KittiMasks(Path(root).expanduser(), max_delta_t, rule="forward")
    rng = numpy_rng(setting.seeds.data, "data/kitti_masks/split")
    return split_sequences(frames_of(reader, max_delta_t), test_fraction, rng)
