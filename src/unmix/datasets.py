r"""Finite image data sets for an experiment (a setting's ``data`` section).

Paper 000 trains on a *finite* 3DIdent (Sec. 4.2.2): anchors are data points, and a positive is the
data point whose latent is nearest (L2) to :math:`\tilde z' \sim p(\tilde z' | z)`. unmix does the
same with its own renders (``data.kind: rendered``, pre-rendered once into an image store with
:func:`ensure_rendered`), existing stores (``store``) or the original 3DIdent (``3dident``).
:class:`FiniteData` holds the two splits and draws training pairs; the stores, readers and the
nearest-neighbour index live in :mod:`unmix.data`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from unmix.data.sets import CACHE_ENV, UnitLatents, data_key, data_root, default_root
from unmix.errors import ConfigError
from unmix.latents import LatentProcess
from unmix.registry import DATASETS
from unmix.seeds import torch_generator
from unmix.settings import Setting

__all__ = [
    "CACHE_ENV",
    "FiniteData",
    "UnitLatents",
    "data_key",
    "data_root",
    "default_root",
    "ensure_rendered",
    "open_splits",
    "prepare_rendered",
]


def ensure_rendered(
    setting: Setting, process: LatentProcess, renderer, progress: bool = False
) -> Path:
    """Render (or finish rendering) the train and test splits of a ``data.kind: rendered``
    setting into image stores ``root/train`` and ``root/test``; returns ``root``. Latents are
    z ~ p(z) from two streams of the data seed, so the same setting always gives the same images.
    Interrupted renders resume; a store with other latents at ``root`` is refused."""
    from unmix.data.store import write_image_store

    data = setting.data
    assert data is not None and data.kind == "rendered"
    root = data_root(setting)
    info = {
        "latent": setting.latent.identity(),
        "mixing": setting.mixing.model_dump(mode="json"),
        "data_seed": setting.seeds.data,
    }
    names = list(getattr(renderer.renderer, "factor_names", []) or []) or None
    for split, n in (("train", data.n_train), ("test", data.n_test)):
        gen = torch_generator(setting.seeds.data, f"data/render/{split}")
        z = process.sample(n, gen).to(torch.float32).cpu()
        write_image_store(
            root / split,
            z,
            renderer,
            factor_names=names,
            info={**info, "split": split},
            progress=progress,
        )
    return root


def prepare_rendered(settings: list[Setting], progress: bool = True) -> None:
    """Render every ``data.kind: rendered`` data set these settings need, each once (called by
    :func:`unmix.sweep.run_jobs` before its runs start, so that parallel workers never render the
    same data set at the same time)."""
    from unmix.generative import latent_process_of, mixing_of

    done: set[Path] = set()
    for s in settings:
        if s.data is None or s.data.kind != "rendered" or data_root(s) in done:
            continue
        ensure_rendered(s, latent_process_of(s), mixing_of(s), progress)
        done.add(data_root(s))


def open_splits(setting: Setting):
    """``(train, test)`` split objects of the setting's data (its registered kind's factory)."""
    return DATASETS.build(setting.data, setting=setting)


@dataclass
class FiniteData:
    """Train/test splits of a finite image data set and the rule that makes positive pairs."""

    train: object
    test: object
    positives: str
    process: LatentProcess
    index: object | None = None  # NearestLatent over the training latents
    augment: object | None = None  # SimCLRAugment

    @classmethod
    def open(cls, setting: Setting, process: LatentProcess) -> FiniteData:
        train, test = open_splits(setting)
        dim = setting.latent.dim
        for name, split in (("train", train), ("test", test)):
            if split.latents.shape[-1] != dim:
                raise ConfigError(
                    f"the {name} split's latents have {split.latents.shape[-1]} dimensions but "
                    f"latent.dim is {dim}: set latent.dim: {split.latents.shape[-1]}"
                )
        positives = setting.data.positives
        index = augment = None
        if positives == "nearest_latent":
            from unmix.data.pairs import NearestLatent

            index = NearestLatent(train.latents)
        elif positives == "next_frame":  # frame sequences draw their own pairs
            if not callable(getattr(train, "pairs", None)):
                raise ConfigError(
                    f"data.positives: next_frame needs a sequence data set; {setting.data.kind} "
                    "has no pairs()"
                )
        else:
            from unmix.augment import SimCLRAugment

            augment = SimCLRAugment()
        return cls(train, test, positives, process, index, augment)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.train.image_shape)

    def pairs(self, batch_size: int, generator: torch.Generator, device: torch.device):
        """One training batch: ``(z, x, x_pos)`` — anchor latents, anchor images and their
        positives (nearest-latent images, a later frame of the same sequence, or two
        augmentations of the anchor)."""
        if self.positives == "next_frame":
            idx, pos = self.train.pairs(batch_size, generator)
            z, x, x_pos = self.train.latents[idx], self.train.images(idx), self.train.images(pos)
            return z.to(device), x.to(device), x_pos.to(device)
        n = len(self.train)
        idx = torch.randint(n, (batch_size,), generator=generator, device=generator.device).cpu()
        z = self.train.latents[idx]
        x = self.train.images(idx)
        if self.positives == "nearest_latent":
            z_target = self.process.sample_positive(z.to(device), generator).cpu()
            x_pos = self.train.images(self.index.query(z_target, exclude=idx))
        else:
            x_pos = self.augment(x.to(device), generator=generator)
            x = self.augment(x.to(device), generator=generator)
        return z.to(device), x.to(device), x_pos.to(device)

    def negatives(self, m: int, generator: torch.Generator, device: torch.device):
        """``m`` training images drawn uniformly (with replacement) as negatives shared by every
        anchor of a batch (``objective.negatives: shared``); augmented once each where the
        positives are augmentations, so that a negative looks like an anchor."""
        idx = torch.randint(len(self.train), (m,), generator=generator, device=generator.device)
        x = self.train.images(idx.cpu()).to(device)
        return self.augment(x, generator=generator) if self.augment is not None else x

    def test_images(self, chunk: int):
        """The test split's images in order, in chunks of ``chunk``."""
        n = len(self.test)
        for start in range(0, n, chunk):
            yield self.test.images(torch.arange(start, min(start + chunk, n)))
