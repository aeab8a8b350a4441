r"""Reader for the 3DIdent dataset as distributed by its authors (paper 000, Sec. 4.2.2, Appx A.4).

Layout on disk
--------------
Zenodo record 4502485 holds two tar files, ``3dident_train.tar`` (250,000 images) and
``3dident_test.tar`` (25,000 images). Extracted next to each other they give::

    3dident/
    ├── train/
    │   ├── images/000000.png … 249999.png
    │   ├── latents.npy          float (N, 10), the values given to the renderer
    │   └── raw_latents.npy      float (N, 10), the same latents in the unit box [-1, 1]^10
    └── test/
        ├── images/00000.png … 24999.png
        ├── latents.npy
        └── raw_latents.npy

Sources (facts only): the tar names and the ``3dident/{train,test}/{images,latents.npy,
raw_latents.npy}`` tree are those used by third-party loaders that download the record
(e.g. the AdaSSL README and a ``disent`` dataset class); the image naming and the two latent files
come from the authors' own code, ``brendel-group/cl-ica``:
``datasets/threedident_dataset.py`` reads ``raw_latents.npy`` and the images
``images/{i:0{w}d}.png`` with the zero-padding width :math:`w = \lceil\log_{10} N\rceil`
(6 digits for the 250,000 training images, 5 for the 25,000 test images), and
``tools/3dident/generate_clevr_dataset_latents.py`` writes both files: ``raw_latents.npy`` holds
uniform samples in :math:`[-1, 1]^{10}` (``NBoxSpace`` default) and ``latents.npy`` the same
rows rescaled, positions by 3 (range :math:`[-3, 3]`) and the other seven factors by
:math:`\pi/2` (range :math:`[-\pi/2, \pi/2]`), which matches the ranges stated in paper 000,
Appx A.4. The column order (the same in both files, for one object) is

    0–2 object position x, y, z · 3–5 object rotation (Euler α, β, γ) · 6 spotlight position
    (angle on its half circle) · 7 object hue · 8 spotlight hue · 9 background (ground) hue,

i.e. :data:`unmix.render.SCENE_FACTOR_NAMES`. The images are 224×224 RGB PNGs.

What could not be checked here (no download is possible): the zero-padding width of the files
actually in the archive. The reader therefore does not assume a width — it lists ``images/``
once and maps every PNG whose stem is a decimal integer ``i`` to row ``i`` (so ``7.png``,
``07.png`` and ``000007.png`` all work), and demands that the PNGs are exactly ``0 … N-1``.
Likewise the split directory is looked up as ``root/split`` or ``root/3dident/split``, and the
latent file is a parameter.

Positive pairs for contrastive learning (paper 000, Sec. 4.2.2) are formed from
``latents`` with :class:`unmix.data.pairs.NearestLatent`: draw
:math:`\tilde z' \sim p(\cdot \mid z)` and take the stored latent nearest to it in L2.
In cl-ica the nearest-neighbour search runs on ``raw_latents.npy``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from unmix.data.store import ImageDataset, as_index_array
from unmix.errors import ConfigError
from unmix.render.scenes3d import SCENE_FACTOR_NAMES

__all__ = ["THREEDIDENT_FACTOR_NAMES", "THREEDIDENT_RANGES", "ThreeDIdent"]

THREEDIDENT_FACTOR_NAMES: tuple[str, ...] = SCENE_FACTOR_NAMES
"""3DIdent's column order, which unmix's scene renderer follows."""

#: Documented value range ``(low, high)`` per column for each latent file of 3DIdent.
THREEDIDENT_RANGES: dict[str, tuple[tuple[float, float], ...]] = {
    "latents.npy": ((-3.0, 3.0),) * 3 + ((-math.pi / 2, math.pi / 2),) * 7,
    "raw_latents.npy": ((-1.0, 1.0),) * 10,
}

_RANGE_TOL = 1e-4  # float32 rounding slack when checking the documented ranges


def _find_split_dir(root: Path, split: str | None) -> Path:
    if not root.is_dir():
        raise ConfigError(
            f"3DIdent root {root} does not exist or is not a directory. Download "
            "3dident_train.tar / 3dident_test.tar from zenodo.org/record/4502485, extract them, "
            "and pass the folder that holds 3dident/ (or 3dident/ itself)."
        )
    if split is None:
        return root
    if not isinstance(split, str) or not split or os.sep in split:
        raise ConfigError(
            f"split must be a directory name such as 'train' or 'test', got {split!r}."
        )
    for cand in (root / split, root / "3dident" / split):
        if (cand / "images").is_dir():
            return cand
    present = sorted(p.name for p in root.iterdir() if p.is_dir())[:10]
    raise ConfigError(
        f"3DIdent split '{split}' not found: neither {root / split}/images nor "
        f"{root / '3dident' / split}/images exists (subdirectories of {root}: {present}). "
        "Use split='train' or 'test', or split=None if root is the split directory itself."
    )


def _index_pngs(images_dir: Path, n: int, latents_path: Path) -> list[str]:
    """File names of images 0 … n-1 (PNGs named by their decimal index, any zero padding)."""
    by_index: dict[int, str] = {}
    n_png = 0
    for name in os.listdir(images_dir):
        stem, ext = os.path.splitext(name)
        if ext.lower() != ".png":
            continue
        n_png += 1
        if not stem.isdigit():
            raise ConfigError(
                f"{images_dir / name}: 3DIdent images must be named by their row index "
                "(e.g. 000123.png)."
            )
        i = int(stem)
        if i in by_index:
            raise ConfigError(f"{images_dir}: both {by_index[i]} and {name} claim image index {i}.")
        by_index[i] = name
    if n_png != n:
        raise ConfigError(
            f"{images_dir} holds {n_png} PNG files but {latents_path.name} has {n} rows; the "
            "split is incomplete or the latents belong to another split (re-extract the tar)."
        )
    missing = [i for i in range(n) if i not in by_index]
    if missing:
        raise ConfigError(
            f"{images_dir}: no PNG for image indices {missing[:5]}"
            f"{' …' if len(missing) > 5 else ''} (files must be numbered 0 … {n - 1})."
        )
    return [by_index[i] for i in range(n)]


class ThreeDIdent(ImageDataset):
    """One split of 3DIdent, read from the authors' layout (see the module docstring).

    Parameters
    ----------
    root:
        Folder holding ``3dident/`` or the ``3dident/`` folder itself (the split directory is
        ``root/split`` or ``root/3dident/split``).
    split:
        ``"train"`` or ``"test"`` (any sub-directory name works); ``None``: ``root`` *is* the split
        directory (holds ``images/`` and the latent files).
    latents_file:
        ``"latents.npy"`` (renderer values, positions in [-3, 3], other factors in
        [-π/2, π/2]) or ``"raw_latents.npy"`` (the same in [-1, 1]; cl-ica trains on these) or
        another ``(N, d)`` array file in the split directory.
    cache_images:
        Keep every decoded (and resized) image in memory after its first read (uint8; about
        ``3·H·W`` bytes per image — 37 GB for the full 224×224 training split, 3 GB at 64×64).
    size:
        Resize images to ``size × size`` on load (Pillow bilinear with antialiasing, the filter
        widened by the downscale factor); ``None`` keeps 224×224.

    ``latents`` is a float32 tensor ``(N, d)`` of the chosen file; ``factor_names`` is
    :data:`THREEDIDENT_FACTOR_NAMES` when ``d == 10`` (else ``None``); ``images(idx)`` loads the
    PNGs with Pillow as RGB and returns float32 ``(B, 3, H, W)`` in [0, 1].
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str | None = "train",
        latents_file: str = "latents.npy",
        cache_images: bool = False,
        size: int | None = None,
    ) -> None:
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ConfigError(f"size must be a positive integer or None, got {size!r}.")
        self.root = Path(root)
        self.split = split
        self.split_dir = _find_split_dir(self.root, split)
        self.latents_file = str(latents_file)
        lat_path = self.split_dir / self.latents_file
        if not lat_path.is_file():
            have = sorted(p.name for p in self.split_dir.glob("*.npy"))
            raise ConfigError(
                f"latents file {lat_path} not found (the split holds {have}); use "
                "latents_file='latents.npy' or 'raw_latents.npy'."
            )
        try:
            lat = np.load(lat_path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise ConfigError(f"{lat_path} is truncated or corrupt ({err}).") from None
        if lat.ndim != 2 or lat.shape[0] < 1 or not np.issubdtype(lat.dtype, np.number):
            raise ConfigError(
                f"{lat_path} must hold a numeric (N, d) array, got {lat.dtype} {tuple(lat.shape)}."
            )
        self.latents = torch.from_numpy(np.ascontiguousarray(lat, dtype=np.float32))
        d = int(lat.shape[1])
        self.factor_names = list(THREEDIDENT_FACTOR_NAMES) if d == 10 else None
        self.images_dir = self.split_dir / "images"
        self._files = _index_pngs(self.images_dir, int(lat.shape[0]), lat_path)
        self.size = size
        self.cache_images = bool(cache_images)
        self._cache: dict[int, np.ndarray] = {}
        self._image_shape: tuple[int, int, int] | None = None

    def __len__(self) -> int:
        return len(self._files)

    def image_path(self, i: int) -> Path:
        """Path of the PNG of image ``i``."""
        return self.images_dir / self._files[i]

    @property
    def image_shape(self) -> tuple[int, int, int]:
        if self._image_shape is None:
            if self.size is not None:
                self._image_shape = (3, self.size, self.size)
            else:
                from PIL import Image

                with Image.open(self.image_path(0)) as im:
                    w, h = im.size
                self._image_shape = (3, int(h), int(w))
        return self._image_shape

    def _load(self, i: int) -> np.ndarray:
        """uint8 ``(H, W, 3)`` of image ``i`` (resized if ``size`` is set)."""
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        from PIL import Image

        path = self.image_path(i)
        try:
            with Image.open(path) as im:
                im = im.convert("RGB")
                if self.size is not None and im.size != (self.size, self.size):
                    im = im.resize(
                        (self.size, self.size), Image.Resampling.BILINEAR, reducing_gap=None
                    )
                arr = np.asarray(im, dtype=np.uint8)
        except OSError as err:
            raise ConfigError(f"cannot read image {path} ({err}).") from None
        _, h, w = self.image_shape
        if arr.shape != (h, w, 3):
            raise ConfigError(
                f"{path} is {arr.shape[1]}×{arr.shape[0]} but the split's images are {w}×{h}; "
                "pass size=... to resize all images to one size."
            )
        if self.cache_images:
            self._cache[i] = arr
        return arr

    def images(self, idx: torch.Tensor | np.ndarray | Sequence[int]) -> torch.Tensor:
        index = as_index_array(idx, len(self))
        if index.size == 0:
            return torch.zeros((0, *self.image_shape), dtype=torch.float32)
        pix = np.stack([self._load(int(i)) for i in index])
        t = torch.from_numpy(pix).permute(0, 3, 1, 2).contiguous()
        return t.to(torch.float32).div_(255.0)

    def unit_latents(self) -> torch.Tensor:
        r"""The latents mapped affinely onto :math:`[0, 1]^{10}`, :math:`u = (z - lo)/(hi - lo)`.

        Uses the documented range of the file (:data:`THREEDIDENT_RANGES`): positions
        :math:`[-3, 3]` and the rest :math:`[-\pi/2, \pi/2]` for ``latents.npy``,
        :math:`[-1, 1]` for ``raw_latents.npy``. Both files give the same unit latents. Raises
        :class:`ConfigError` for any other file, or if values fall outside the documented range.
        """
        ranges = THREEDIDENT_RANGES.get(Path(self.latents_file).name)
        if ranges is None or self.latents.shape[1] != len(ranges):
            raise ConfigError(
                f"unit_latents() knows the ranges of 3DIdent's latents.npy and raw_latents.npy "
                f"(10 columns); {self.latents_file} with {self.latents.shape[1]} columns has no "
                "documented range — rescale it yourself."
            )
        lo = torch.tensor([r[0] for r in ranges], dtype=torch.float64)
        hi = torch.tensor([r[1] for r in ranges], dtype=torch.float64)
        u = (self.latents.to(torch.float64) - lo) / (hi - lo)
        if bool((u < -_RANGE_TOL).any()) or bool((u > 1 + _RANGE_TOL).any()):
            col = int(((u < -_RANGE_TOL) | (u > 1 + _RANGE_TOL)).any(0).nonzero()[0, 0])
            raise ConfigError(
                f"{self.latents_file}: column {col} ({THREEDIDENT_FACTOR_NAMES[col]}) has values "
                f"in [{self.latents[:, col].min():.4g}, {self.latents[:, col].max():.4g}], "
                f"outside the documented range [{ranges[col][0]:.4g}, {ranges[col][1]:.4g}]; "
                "these are not the published 3DIdent latents."
            )
        return u.clamp_(0.0, 1.0).to(torch.float32)

    def __repr__(self) -> str:
        return (
            f"ThreeDIdent({str(self.split_dir)!r}, n={len(self)}, latents={self.latents_file!r}, "
            f"size={self.size})"
        )
