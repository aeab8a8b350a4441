"""Finite data sets as registered kinds (``data: {kind: rendered | store | 3dident}``).

A data-set factory ``f(setting, *, fields...)`` returns the ``(train, test)`` splits: objects
with ``latents`` (an ``(N, d)`` tensor), ``images(idx)`` and ``image_shape``
(:class:`~unmix.data.store.ImageDataset` and the readers follow this). Every kind also takes
``positives`` — how training pairs are made from the splits (:class:`unmix.datasets.FiniteData`):
``nearest_latent`` (paper 000's rule) or ``augment`` (SimCLR augmentations).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field, model_validator

from unmix.errors import ConfigError
from unmix.registry import SpecBase, register_dataset

CACHE_ENV = "UNMIX_DATA_DIR"


class DataSpecBase(SpecBase):
    """Fields every finite data set takes (see the module docstring)."""

    kind: str
    root: str | None = None
    n_train: Annotated[int, Field(ge=2, le=100_000_000)] = 20_000
    n_test: Annotated[int, Field(ge=16, le=100_000_000)] = 5_000
    positives: Literal["nearest_latent", "augment"] = "nearest_latent"


class RenderedSpec(DataSpecBase):
    """``rendered``: ``n_train`` + ``n_test`` images rendered once with the setting's renderer
    from z ~ p(z) of the data seed, into ``root`` (default: a cache directory named after the
    data, :func:`default_root`); resumable; reused by later runs."""

    kind: Literal["rendered"] = "rendered"


class StoreSpec(DataSpecBase):
    """``store``: existing image stores ``root/train`` and ``root/test`` (``unmix render``)."""

    kind: Literal["store"] = "store"

    @model_validator(mode="after")
    def _check_root(self):
        if not self.root:
            raise ValueError("data.kind: store needs data.root (the data set's directory)")
        return self


class ThreeDIdentSpec(DataSpecBase):
    """``3dident``: the original 3DIdent at ``root`` (splits ``train`` and ``test`` as
    distributed); its latents are mapped onto the unit box (:class:`UnitLatents`)."""

    kind: Literal["3dident"] = "3dident"

    @model_validator(mode="after")
    def _check_root(self):
        if not self.root:
            raise ValueError("data.kind: 3dident needs data.root (the data set's directory)")
        return self


# Mixing fields added after stores were written; left out of the key at their default so that a
# store rendered before the field existed keeps its name (its pixels are those of the default).
_ADDED_MIXING_FIELDS: dict[str, Any] = {"spot_cone": 35.0}


def data_key(setting: Any) -> str:
    """A short name for a rendered data set: renderer, size, split sizes, data seed and a hash of
    everything that changes its pixels or latents (latent spec, mixing spec, seed, sizes)."""
    data = setting.data
    mixing = setting.mixing.model_dump(mode="json")
    for name, default in _ADDED_MIXING_FIELDS.items():  # at their default: the older stores' key
        if mixing.get(name, default) == default:
            mixing.pop(name, None)
    ident = {
        "latent": setting.latent.identity(),
        "mixing": mixing,
        "seed": setting.seeds.data,
        "n": [data.n_train, data.n_test],
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
    m = setting.mixing
    size = getattr(m, "image_size", "")
    return f"{m.kind}-{size}px-n{data.n_train}+{data.n_test}-data{setting.seeds.data}-{digest}"


def cache_dir() -> Path:
    """unmix's cache: ``$UNMIX_CACHE``, else ``$XDG_CACHE_HOME/unmix``, else ``~/.cache/unmix``."""
    if os.environ.get("UNMIX_CACHE"):
        return Path(os.environ["UNMIX_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "unmix"


def default_root(setting: Any) -> Path:
    """Where ``data.kind: rendered`` keeps its images when ``data.root`` is not given:
    ``$UNMIX_DATA_DIR/<data_key>``, else ``<cache>/datasets/<data_key>`` with the cache of
    :func:`cache_dir` (``$UNMIX_CACHE`` or ``$XDG_CACHE_HOME/unmix`` or ``~/.cache/unmix``)."""
    base = os.environ.get(CACHE_ENV) or cache_dir() / "datasets"
    return Path(base).expanduser() / data_key(setting)


def data_root(setting: Any) -> Path:
    data = setting.data
    return Path(data.root).expanduser() if data.root else default_root(setting)


class UnitLatents:
    """A 3DIdent split whose latents are mapped onto the unit box [0, 1]^10 (the box the paper
    samples them in, Appx A.4), so that Table 4's presets apply to it unchanged."""

    def __init__(self, dataset) -> None:
        self.dataset = dataset
        self.latents = dataset.unit_latents().to(torch.float32)
        self.factor_names = dataset.factor_names
        self.image_shape = dataset.image_shape

    def __len__(self) -> int:
        return len(self.dataset)

    def images(self, idx) -> torch.Tensor:
        return self.dataset.images(idx)


def _stores(root: Path, hint: str):
    from unmix.data.store import ImageStore

    if not (root / "train").exists():
        raise ConfigError(f"no image store at {root / 'train'}: {hint}.")
    return ImageStore(root / "train"), ImageStore(root / "test")


@register_dataset("rendered", spec=RenderedSpec, rendered=True)
def rendered(setting: Any):
    return _stores(
        data_root(setting), "render it first (unmix render, or any run of this setting renders it)"
    )


@register_dataset("store", spec=StoreSpec)
def store(setting: Any, *, root: str | None = None):
    return _stores(Path(root).expanduser(), "check data.root")


@register_dataset("3dident", spec=ThreeDIdentSpec)
def threedident(setting: Any, *, root: str | None = None):
    from unmix.data.threedident import ThreeDIdent

    path = Path(root).expanduser()
    return UnitLatents(ThreeDIdent(path, split="train")), UnitLatents(
        ThreeDIdent(path, split="test")
    )
