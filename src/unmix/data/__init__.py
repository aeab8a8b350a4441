"""Finite image datasets on disk with known latents (see ``docs/data.md``).

* :mod:`unmix.data.store` — unmix's own pre-rendered store (``meta.json`` + ``latents.npy`` +
  memory-mapped ``images.npy``), written resumably by :func:`write_image_store` and read by
  :class:`ImageStore`; :class:`ImageDataset` is the common read interface.
* :mod:`unmix.data.threedident` — :class:`ThreeDIdent`, the 3DIdent dataset of paper 000 in its
  authors' layout.
* :mod:`unmix.data.kitti` — :class:`KittiMasks`, KITTI Masks (Klindt et al. 2021) with temporal
  positive pairs.
* :mod:`unmix.data.pairs` — :class:`NearestLatent`, exact L2 nearest-neighbour lookup used to
  turn a conditional sample into a dataset positive.
"""

from unmix.data.kitti import KITTI_FACTOR_NAMES, KittiMasks
from unmix.data.pairs import NearestLatent
from unmix.data.sets import UnitLatents, data_key, data_root, default_root
from unmix.data.store import ImageDataset, ImageStore, write_image_store
from unmix.data.threedident import THREEDIDENT_FACTOR_NAMES, THREEDIDENT_RANGES, ThreeDIdent

__all__ = [
    "KITTI_FACTOR_NAMES",
    "THREEDIDENT_FACTOR_NAMES",
    "THREEDIDENT_RANGES",
    "ImageDataset",
    "ImageStore",
    "KittiMasks",
    "NearestLatent",
    "ThreeDIdent",
    "write_image_store",
    "UnitLatents",
    "data_key",
    "data_root",
    "default_root",
]
