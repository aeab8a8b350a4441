r"""unmix's own pre-rendered image store: images rendered once from known latents, read many times.

A store is a directory with exactly three files:

``meta.json``
    ``{"format": "unmix-image-store", "version": 1, "n": N, "height": H, "width": W,
    "channels": 3, "latent_dim": d, "factor_names": [...] | null, "complete": k,
    "info": {...}}``. ``complete`` is the number of images written so far (images
    ``0 … k-1`` are valid); ``info`` is a free-form JSON dict from the caller (renderer name,
    image size, seed, …).
``latents.npy``
    float32 ``(N, d)``: row ``i`` is the latent of image ``i``. Written in full before any image.
``images.npy``
    uint8 ``(N, H, W, 3)`` (channels last), created with :func:`numpy.lib.format.open_memmap`
    and therefore memory-mapped when read. A pixel value is
    :math:`\mathrm{round}(255\,\mathrm{clip}(x, 0, 1))` for the renderer's float output
    :math:`x`, so reading back gives :math:`x` to within :math:`0.5/255`.

:func:`write_image_store` renders in chunks and is resumable: after every chunk the pixels are
flushed to disk *before* ``meta.json`` is replaced atomically (temporary file + :func:`os.replace`)
with the new ``complete`` count, so a store never claims more images than were written. Rerun
the same call after an interruption and it continues at ``complete``. Writers of one store take
an OS file lock (``<store>.lock`` beside it) for the whole call: a second process asking for
the same store — two ``unmix train`` runs started at once on one data set — waits for the
first, then finds the store complete (or resumes it, should the first have been killed; the
lock is released however its holder exits). Without it both would write the same memory-mapped
file and the one whose file was replaced under it would crash.

:class:`ImageStore` opens a complete store; :class:`ImageDataset` is the read interface it
shares with :class:`unmix.data.threedident.ThreeDIdent` and
:class:`unmix.data.kitti.KittiMasks`.
"""

from __future__ import annotations

import abc
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from unmix.errors import ConfigError

__all__ = [
    "STORE_FORMAT",
    "STORE_VERSION",
    "ImageDataset",
    "ImageStore",
    "as_index_array",
    "write_image_store",
]

STORE_FORMAT = "unmix-image-store"
STORE_VERSION = 1

_META = "meta.json"
_LATENTS = "latents.npy"
_IMAGES = "images.npy"
# Files a half-created store may hold before its first meta.json (safe to overwrite).
_OWN_FILES = {_LATENTS, _IMAGES, _META + ".tmp", _LATENTS + ".tmp"}


# --------------------------------------------------------------------------------------------
# common read interface
# --------------------------------------------------------------------------------------------


class ImageDataset(torch.utils.data.Dataset, abc.ABC):
    """A finite set of images with known latents, read by index — a
    :class:`torch.utils.data.Dataset` of ``(image, latent)`` pairs, so a ``DataLoader`` takes it
    as it is (``ds[i]`` → ``(C, H, W)`` float32 image, ``(d,)`` latent).

    Every implementation provides

    * ``latents``: float32 tensor ``(N, d)``; row ``i`` is the ground-truth latent of image ``i``;
    * ``factor_names``: ``list[str]`` of length ``d`` naming the latent columns, or ``None``;
    * ``len(ds) == N``;
    * ``image_shape``: ``(C, H, W)`` of one image as returned by :meth:`images`;
    * ``images(idx)``: float32 tensor ``(B, C, H, W)`` in :math:`[0, 1]` for ``B`` indices
      (a LongTensor, an integer ndarray or a list; order and repeats are kept).
    """

    latents: torch.Tensor
    factor_names: list[str] | None

    @abc.abstractmethod
    def __len__(self) -> int:
        """Number of images N."""

    @property
    @abc.abstractmethod
    def image_shape(self) -> tuple[int, int, int]:
        """Shape ``(C, H, W)`` of one image."""

    @abc.abstractmethod
    def images(self, idx: torch.Tensor | np.ndarray | Sequence[int]) -> torch.Tensor:
        """Float32 images ``(B, C, H, W)`` in [0, 1] for the indices ``idx``."""

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(image, latent)`` of item ``i`` (the ``torch.utils.data.Dataset`` protocol)."""
        idx = int(as_index_array([i], len(self), "i")[0])
        return self.images([idx])[0], self.latents[idx]


def as_index_array(idx: Any, n: int, name: str = "idx") -> np.ndarray:
    """Turn ``idx`` (LongTensor, integer ndarray, list or int) into a 1-D int64 array in [0, n).

    Raises :class:`ConfigError` for non-integer values, more than one dimension, or indices
    outside ``[-n, n)``; negative indices count from the end as in numpy.
    """
    if isinstance(idx, torch.Tensor):
        arr = idx.detach().cpu().numpy()
    else:
        try:
            arr = np.asarray(idx)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{name} must be a list/array/tensor of integers ({err}).") from None
    if arr.dtype == bool:
        raise ConfigError(f"{name} must hold integer indices, not booleans.")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"{name} must hold integer indices, got dtype {arr.dtype}.")
    if arr.ndim > 1:
        raise ConfigError(f"{name} must be one-dimensional, got shape {tuple(arr.shape)}.")
    arr = arr.reshape(-1).astype(np.int64)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < -n or hi >= n:
        raise ConfigError(
            f"{name} has values in [{lo}, {hi}], outside the valid range [0, {n}) of a "
            f"dataset with {n} images."
        )
    return np.where(arr < 0, arr + n, arr)


def _read_rows(arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``arr[idx]`` reading each distinct row once, in increasing order (memmap friendly)."""
    uniq, inverse = np.unique(idx, return_inverse=True)
    return np.asarray(arr[uniq])[inverse.reshape(-1)]


def _to_unit_float(pixels: np.ndarray) -> torch.Tensor:
    """uint8 ``(B, H, W, C)`` → float32 ``(B, C, H, W)`` in [0, 1]."""
    t = torch.from_numpy(np.ascontiguousarray(pixels))
    return t.permute(0, 3, 1, 2).contiguous().to(torch.float32).div_(255.0)


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{path} is missing: {path.parent} is not an unmix image store "
            "(create one with unmix.data.write_image_store)."
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(
            f"{path} is corrupt ({err}); delete {path.parent} and render the store again."
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
        raise ConfigError(
            f"{path} does not describe an unmix image store (format must be "
            f"'{STORE_FORMAT}'); use a new directory or delete {path.parent}."
        )
    if meta.get("version") != STORE_VERSION:
        raise ConfigError(
            f"{path} has store version {meta.get('version')!r}; this unmix reads version "
            f"{STORE_VERSION}. Render the store again into a new directory."
        )
    for key in ("n", "height", "width", "channels", "latent_dim", "complete"):
        val = meta.get(key)
        if isinstance(val, bool) or not isinstance(val, int) or val < 0:
            raise ConfigError(
                f"{path}: field '{key}' must be a non-negative integer, got {val!r}; the file "
                f"is corrupt — delete {path.parent} and render the store again."
            )
    if meta["channels"] != 3:
        raise ConfigError(f"{path}: field 'channels' must be 3, got {meta['channels']}.")
    names = meta.get("factor_names")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != meta["latent_dim"]
        or not all(isinstance(s, str) for s in names)
    ):
        raise ConfigError(
            f"{path}: 'factor_names' must be null or a list of {meta['latent_dim']} strings."
        )
    return meta


def _load_npy(path: Path, mmap: bool) -> np.ndarray:
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing; the store in {path.parent} is damaged — delete it and render "
            "again."
        )
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise ConfigError(
            f"{path} is truncated or corrupt ({err}); delete {path.parent} and render the store "
            "again (or rerun the render command if it was interrupted)."
        ) from None


class ImageStore(ImageDataset):
    """A complete image store on disk (see the module docstring for the format).

    Parameters
    ----------
    root:
        The store directory.

    Attributes
    ----------
    root: :class:`pathlib.Path` of the store.
    latents: float32 tensor ``(N, d)``.
    factor_names: ``list[str]`` or ``None``.
    meta: the parsed ``meta.json``.

    ``images(idx)`` reads the rows of the memory-mapped ``images.npy`` (each distinct index
    once, in increasing order) and returns float32 ``(B, 3, H, W)`` in [0, 1].
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ConfigError(
                f"image store {self.root} does not exist (or is not a directory); render it "
                "first with unmix.data.write_image_store."
            )
        meta = _read_meta(self.root / _META)
        n, d = meta["n"], meta["latent_dim"]
        h, w = meta["height"], meta["width"]
        latents = _load_npy(self.root / _LATENTS, mmap=False)
        if latents.shape != (n, d) or latents.dtype != np.float32:
            raise ConfigError(
                f"{self.root / _LATENTS} holds {latents.dtype} {tuple(latents.shape)}, but "
                f"meta.json says float32 ({n}, {d}); the store is damaged — delete it and render "
                "again."
            )
        images = _load_npy(self.root / _IMAGES, mmap=True)
        if images.shape != (n, h, w, 3) or images.dtype != np.uint8:
            raise ConfigError(
                f"{self.root / _IMAGES} holds {images.dtype} {tuple(images.shape)}, but "
                f"meta.json says uint8 ({n}, {h}, {w}, 3); the store is damaged — delete it and "
                "render again."
            )
        if meta["complete"] < n:
            raise ConfigError(
                f"{self.root}: incomplete store ({meta['complete']} of {n} images): rerun the "
                "render command to resume."
            )
        if meta["complete"] > n:
            raise ConfigError(
                f"{self.root / _META}: 'complete' = {meta['complete']} exceeds n = {n}; the "
                "file is corrupt — delete the store and render again."
            )
        self.meta: dict[str, Any] = meta
        self.latents = torch.from_numpy(np.array(latents, dtype=np.float32))
        self.factor_names = list(meta["factor_names"]) if meta["factor_names"] else None
        self._images = images

    def __len__(self) -> int:
        return int(self.meta["n"])

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return (3, int(self.meta["height"]), int(self.meta["width"]))

    def images(self, idx: torch.Tensor | np.ndarray | Sequence[int]) -> torch.Tensor:
        index = as_index_array(idx, len(self))
        if index.size == 0:
            return torch.zeros((0, *self.image_shape), dtype=torch.float32)
        return _to_unit_float(_read_rows(self._images, index))

    def __repr__(self) -> str:
        c, h, w = self.image_shape
        return (
            f"ImageStore({str(self.root)!r}, n={len(self)}, image=({c}, {h}, {w}), "
            f"latent_dim={self.latents.shape[1]})"
        )


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _write_json_atomic(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _save_npy_atomic(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, arr, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _json_normal(obj: Any, name: str) -> Any:
    try:
        return json.loads(json.dumps(obj))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{name} must be JSON-serialisable ({err}).") from None


def _check_latents(latents: Any) -> np.ndarray:
    if not isinstance(latents, torch.Tensor):
        raise ConfigError(
            f"latents must be a torch.Tensor of shape (N, d), got {type(latents).__name__}."
        )
    if latents.ndim != 2 or latents.shape[0] < 1 or latents.shape[1] < 1:
        raise ConfigError(
            f"latents must have shape (N, d) with N, d ≥ 1, got {tuple(latents.shape)}."
        )
    if not latents.is_floating_point():
        raise ConfigError(f"latents must be a floating-point tensor, got {latents.dtype}.")
    arr = latents.detach().cpu().to(torch.float32).numpy()
    if not np.isfinite(arr).all():
        raise ConfigError("latents contain NaN or inf values.")
    return np.ascontiguousarray(arr)


def _render_chunk(
    render: Callable[[torch.Tensor], torch.Tensor],
    z: np.ndarray,
    start: int,
    hw: tuple[int, int] | None,
) -> np.ndarray:
    """Render ``z`` and quantise to uint8 ``(B, H, W, 3)``; checks the renderer's output."""
    with torch.no_grad():
        x = render(torch.from_numpy(z.copy()))
    b = z.shape[0]
    where = f"render(latents[{start}:{start + b}])"
    if not isinstance(x, torch.Tensor):
        raise ConfigError(f"{where} returned {type(x).__name__}; it must return a torch.Tensor.")
    if x.ndim != 4 or x.shape[0] != b or x.shape[1] != 3:
        raise ConfigError(
            f"{where} returned shape {tuple(x.shape)}; it must return ({b}, 3, H, W) images."
        )
    if hw is not None and tuple(x.shape[2:]) != hw:
        raise ConfigError(
            f"{where} returned {x.shape[2]}×{x.shape[3]} images, but the store holds "
            f"{hw[0]}×{hw[1]} images; the renderer must keep one image size (for a different "
            "size use a new store directory)."
        )
    x = x.detach().to("cpu", torch.float32)
    if not torch.isfinite(x).all():
        raise ConfigError(f"{where} returned NaN or inf pixel values.")
    q = torch.round(x.clamp_(0.0, 1.0).mul_(255.0)).to(torch.uint8)
    return q.permute(0, 2, 3, 1).contiguous().numpy()


def _open_existing_for_resume(
    root: Path, lat: np.ndarray, factor_names: list[str] | None, info: dict[str, Any]
) -> tuple[dict[str, Any], np.ndarray | None]:
    """Check an existing store against the request. Returns (meta, images memmap r+)."""
    meta_path = root / _META
    try:
        meta = _read_meta(meta_path)
    except ConfigError as err:
        raise ConfigError(
            f"{root} already holds files that are not a usable unmix image store ({err}) "
            f"Choose a new directory or delete {root}."
        ) from None
    stored = _load_npy(root / _LATENTS, mmap=False)
    if (
        stored.dtype != np.float32
        or stored.shape != lat.shape
        or (meta["n"], meta["latent_dim"]) != lat.shape
        or not np.array_equal(stored, lat)
    ):
        raise ConfigError(
            f"{root} already holds an image store with different latents "
            f"({stored.dtype} {tuple(stored.shape)} vs. the requested float32 "
            f"{tuple(lat.shape)}, or different values). Choose a new directory or delete {root} "
            "to render these latents."
        )
    if meta.get("factor_names") != factor_names:
        raise ConfigError(
            f"{root} already holds this store with factor_names {meta.get('factor_names')} "
            f"(requested {factor_names}). Choose a new directory or delete {root}."
        )
    if meta.get("info") != info:
        old = meta.get("info") or {}
        keys = sorted(k for k in set(old) | set(info) if old.get(k) != info.get(k))
        raise ConfigError(
            f"{root} already holds this store rendered with different info (keys {keys}: "
            f"stored {[old.get(k) for k in keys]}, requested {[info.get(k) for k in keys]}). "
            f"Choose a new directory or delete {root}."
        )
    if meta["complete"] > meta["n"]:
        raise ConfigError(f"{meta_path}: 'complete' exceeds 'n'; delete {root} and render again.")
    if meta["complete"] == meta["n"]:
        return meta, None
    shape = (meta["n"], meta["height"], meta["width"], 3)
    try:
        images = np.load(root / _IMAGES, mmap_mode="r+", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        images = None
    if images is None or images.shape != shape or images.dtype != np.uint8:
        raise ConfigError(
            f"{root / _IMAGES} is missing or does not match meta.json (expected uint8 {shape}); "
            f"delete {root} and render again."
        )
    return meta, images


def write_image_store(
    root: str | os.PathLike[str],
    latents: torch.Tensor,
    render: Callable[[torch.Tensor], torch.Tensor],
    *,
    chunk: int = 1024,
    factor_names: Sequence[str] | None = None,
    info: dict[str, Any] | None = None,
    progress: bool = True,
) -> ImageStore:
    """Render ``latents`` into the image store ``root`` (resumable) and open it.

    Parameters
    ----------
    root:
        Store directory; created if missing.
    latents:
        float tensor ``(N, d)``; stored as float32, image ``i`` is ``render(latents[i])``.
    render:
        Callable mapping a float32 ``(B, d)`` batch to float images ``(B, 3, H, W)`` in [0, 1]
        (e.g. ``SceneRenderer(size=64).render``). H and W are taken from the first chunk.
    chunk:
        Images rendered, written and committed per step.
    factor_names:
        Optional names of the ``d`` latent columns.
    info:
        Free-form JSON dict saved in ``meta.json`` (renderer name, size, seed, …).
    progress:
        Show a rich progress bar.

    Behaviour when ``root`` exists: a store with the *same* latents (exactly equal float32
    arrays), factor names and info is resumed at its ``complete`` count (returned at once when
    complete); anything else — other latents, another format, a foreign non-empty directory —
    raises :class:`ConfigError`. A directory holding only ``latents.npy`` / ``images.npy``
    without ``meta.json`` (a crash before the first commit) is started afresh.
    """
    root = Path(root)
    lat = _check_latents(latents)
    with _store_lock(root):
        return _write_image_store(root, lat, render, chunk, factor_names, info, progress)


def _store_lock(root: Path):
    """The blocking inter-process lock of store ``root``: the file ``<root>.lock`` beside it
    (not inside it, so the store directory holds only its own files)."""
    from filelock import FileLock

    lock_path = root.parent / (root.name + ".lock")
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create the image store's directory {lock_path.parent} ({err.strerror}); "
            "choose a writable data root ($UNMIX_DATA_DIR or data.root)."
        ) from None
    return FileLock(str(lock_path))


def _write_image_store(
    root: Path,
    lat: np.ndarray,
    render: Callable[[torch.Tensor], torch.Tensor],
    chunk: int,
    factor_names: Sequence[str] | None,
    info: dict[str, Any] | None,
    progress: bool,
) -> ImageStore:
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ConfigError(f"chunk must be a positive integer, got {chunk!r}.")
    if not callable(render):
        raise ConfigError("render must be callable: (B, d) latents -> (B, 3, H, W) images.")
    n, d = lat.shape
    names = None if factor_names is None else [str(s) for s in factor_names]
    if names is not None and len(names) != d:
        raise ConfigError(f"factor_names has {len(names)} entries but latents have {d} columns.")
    info_n = _json_normal(dict(info or {}), "info")

    if root.exists() and not root.is_dir():
        raise ConfigError(f"image store path {root} exists and is not a directory.")

    images: np.ndarray | None = None
    if (root / _META).exists():
        meta, images = _open_existing_for_resume(root, lat, names, info_n)
        if images is None:
            return ImageStore(root)
        start = int(meta["complete"])
    else:
        if root.is_dir():
            foreign = sorted(p.name for p in root.iterdir() if p.name not in _OWN_FILES)
            if foreign:
                raise ConfigError(
                    f"{root} is a non-empty directory that is not an unmix image store (it holds "
                    f"{foreign[:5]}); choose a new directory or delete it."
                )
        meta = {
            "format": STORE_FORMAT,
            "version": STORE_VERSION,
            "n": int(n),
            "height": 0,
            "width": 0,
            "channels": 3,
            "latent_dim": int(d),
            "factor_names": names,
            "complete": 0,
            "info": info_n,
        }
        start = 0

    bar = _Bar(n, start) if progress else None
    try:
        pos = start
        while pos < n:
            stop = min(pos + chunk, n)
            hw = None if images is None else (int(meta["height"]), int(meta["width"]))
            pix = _render_chunk(render, lat[pos:stop], pos, hw)
            if images is None:
                # first chunk of a fresh store: now the image size is known
                root.mkdir(parents=True, exist_ok=True)
                meta["height"], meta["width"] = int(pix.shape[1]), int(pix.shape[2])
                _save_npy_atomic(root / _LATENTS, lat)
                images = np.lib.format.open_memmap(
                    root / _IMAGES,
                    mode="w+",
                    dtype=np.uint8,
                    shape=(n, meta["height"], meta["width"], 3),
                )
            images[pos:stop] = pix
            images.flush()  # pixels reach the file before meta.json claims them
            meta["complete"] = int(stop)
            _write_json_atomic(root / _META, meta)
            if bar is not None:
                bar.advance(stop - pos)
            pos = stop
    finally:
        if bar is not None:
            bar.close()
        del images
    return ImageStore(root)


class _Bar:
    def __init__(self, total: int, start: int) -> None:
        from unmix.progress import progress_bar

        self.progress = progress_bar("[bold]rendering images")
        self.task = self.progress.add_task("render", total=total, completed=start)
        self.progress.start()

    def advance(self, k: int) -> None:
        self.progress.update(self.task, advance=k)

    def close(self) -> None:
        self.progress.stop()
