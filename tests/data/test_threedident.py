"""unmix.data.threedident: reading a tiny fake 3DIdent tree in the authors' layout."""

import math

import numpy as np
import pytest
import torch
from PIL import Image

from unmix.data import ImageDataset, ThreeDIdent
from unmix.data.threedident import THREEDIDENT_FACTOR_NAMES
from unmix.errors import ConfigError
from unmix.render import SCENE_FACTOR_NAMES

SIDE = 16


def _pixels(i: int, split_seed: int) -> np.ndarray:
    """A distinct 16×16 RGB image per index (random, reproducible)."""
    return np.random.default_rng(1000 * split_seed + i).integers(0, 256, (SIDE, SIDE, 3), np.uint8)


def make_tree(base, n_train: int = 12, n_test: int = 12, digits: int | None = None):
    """``base/3dident/{train,test}/{images/*.png, latents.npy, raw_latents.npy}``.

    Image ``i`` is zero padded to ceil(log10(n)) digits (the cl-ica rule) unless ``digits``.
    """
    scale = np.array([3.0] * 3 + [math.pi / 2] * 7)
    for seed, (split, n) in enumerate((("train", n_train), ("test", n_test))):
        d = base / "3dident" / split
        (d / "images").mkdir(parents=True)
        raw = np.random.default_rng(seed).uniform(-1, 1, (n, 10))
        np.save(d / "raw_latents.npy", raw)
        np.save(d / "latents.npy", raw * scale)
        w = digits if digits is not None else int(math.ceil(math.log10(n)))
        for i in range(n):
            Image.fromarray(_pixels(i, seed)).save(d / "images" / f"{str(i).zfill(w)}.png")
    return base


def test_latents_and_images_round_trip(tmp_path):
    make_tree(tmp_path)
    ds = ThreeDIdent(tmp_path, split="train")
    assert isinstance(ds, ImageDataset)
    assert len(ds) == 12 and ds.image_shape == (3, SIDE, SIDE)
    assert ds.factor_names == list(THREEDIDENT_FACTOR_NAMES) == list(SCENE_FACTOR_NAMES)
    lat = np.load(tmp_path / "3dident" / "train" / "latents.npy")
    assert ds.latents.dtype == torch.float32 and ds.latents.shape == (12, 10)
    assert torch.equal(ds.latents, torch.from_numpy(lat.astype(np.float32)))
    idx = torch.tensor([11, 0, 3, 3])
    x = ds.images(idx)
    assert x.shape == (4, 3, SIDE, SIDE) and x.dtype == torch.float32
    for row, i in enumerate(idx.tolist()):  # PNG is lossless: exact, in the requested order
        ref = torch.from_numpy(_pixels(i, 0)).permute(2, 0, 1).float() / 255
        assert torch.equal(x[row], ref)
    # the test split is read from its own directory (different images)
    test = ThreeDIdent(tmp_path / "3dident", split="test")  # root may also be 3dident/ itself
    ref = torch.from_numpy(_pixels(2, 1)).permute(2, 0, 1).float() / 255
    assert torch.equal(test.images([2])[0], ref)
    # split=None: root is the split directory
    assert torch.equal(ThreeDIdent(tmp_path / "3dident" / "test", split=None).images([2])[0], ref)


def test_unit_latents_agree_for_both_files(tmp_path):
    make_tree(tmp_path)
    a = ThreeDIdent(tmp_path, "train", latents_file="latents.npy").unit_latents()
    b = ThreeDIdent(tmp_path, "train", latents_file="raw_latents.npy").unit_latents()
    raw = np.load(tmp_path / "3dident" / "train" / "raw_latents.npy")
    want = torch.from_numpy((raw + 1) / 2).float()
    assert a.shape == (12, 10) and a.min() >= 0 and a.max() <= 1
    assert torch.allclose(a, want, atol=1e-6) and torch.allclose(b, want, atol=1e-6)


def test_unit_latents_refuses_unknown_range(tmp_path):
    make_tree(tmp_path)
    d = tmp_path / "3dident" / "train"
    np.save(d / "other.npy", np.zeros((12, 10)))
    with pytest.raises(ConfigError, match="no documented range"):
        ThreeDIdent(tmp_path, latents_file="other.npy").unit_latents()
    np.save(d / "raw_latents.npy", np.full((12, 10), 2.0))  # outside [-1, 1]
    with pytest.raises(ConfigError, match="outside the documented range"):
        ThreeDIdent(tmp_path, latents_file="raw_latents.npy").unit_latents()


def test_resize_and_cache(tmp_path):
    make_tree(tmp_path)
    d = tmp_path / "3dident" / "train" / "images"
    Image.fromarray(np.full((SIDE, SIDE, 3), (200, 10, 90), np.uint8)).save(d / "05.png")
    ds = ThreeDIdent(tmp_path, size=4, cache_images=True)
    assert ds.image_shape == (3, 4, 4)
    x = ds.images([5, 1])
    assert x.shape == (2, 3, 4, 4)
    # a constant image stays constant under an antialiased resize
    assert torch.allclose(x[0], torch.tensor([200, 10, 90]).view(3, 1, 1) / 255.0, atol=1e-6)
    # antialiasing: each output pixel is about the mean of its 4x4 input block
    block = torch.from_numpy(_pixels(1, 0)).float().permute(2, 0, 1).view(3, 4, 4, 4, 4)
    mean = block.mean(dim=(2, 4)) / 255
    assert (x[1] - mean).abs().mean() < 0.06
    # cached: deleting the file does not matter any more
    (d / "05.png").unlink()
    assert torch.equal(ds.images([5]), x[:1])


def test_any_zero_padding_is_accepted(tmp_path):
    make_tree(tmp_path, digits=6)
    ds = ThreeDIdent(tmp_path, "train")
    assert ds.image_path(7).name == "000007.png"
    ref = torch.from_numpy(_pixels(7, 0)).permute(2, 0, 1).float() / 255
    assert torch.equal(ds.images([7])[0], ref)


def test_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        ThreeDIdent(tmp_path / "nowhere")
    make_tree(tmp_path)
    with pytest.raises(ConfigError, match="split 'val' not found"):
        ThreeDIdent(tmp_path, split="val")
    with pytest.raises(ConfigError, match="latents file .* not found"):
        ThreeDIdent(tmp_path, latents_file="nope.npy")
    imgs = tmp_path / "3dident" / "train" / "images"
    (imgs / "11.png").unlink()
    with pytest.raises(ConfigError, match="holds 11 PNG files but latents.npy has 12 rows"):
        ThreeDIdent(tmp_path)
    Image.fromarray(_pixels(0, 0)).save(imgs / "12.png")  # right count, index 11 missing
    with pytest.raises(ConfigError, match=r"no PNG for image indices \[11\]"):
        ThreeDIdent(tmp_path)
    np.save(tmp_path / "3dident" / "test" / "latents.npy", np.zeros(12))
    with pytest.raises(ConfigError, match=r"numeric \(N, d\) array"):
        ThreeDIdent(tmp_path, split="test")
    ds = ThreeDIdent(tmp_path, split="test", latents_file="raw_latents.npy")
    with pytest.raises(ConfigError, match="outside the valid range"):
        ds.images([12])
