"""unmix.data.store: the on-disk image store (format, round trip, resume, refusals, errors)."""

import json

import numpy as np
import pytest
import torch

from unmix.data import ImageDataset, ImageStore, write_image_store
from unmix.errors import ConfigError

H, W = 6, 8  # non-square on purpose: H and W must not be swapped


def cheap_render(z: torch.Tensor) -> torch.Tensor:
    """Deterministic, per-image (no batch coupling) float images (B, 3, H, W), a bit outside [0, 1]."""
    b, d = z.shape
    hh = torch.arange(H, dtype=torch.float32).view(1, 1, H, 1)
    ww = torch.arange(W, dtype=torch.float32).view(1, 1, 1, W)
    cc = torch.arange(3, dtype=torch.float32).view(1, 3, 1, 1)
    zc = z[:, torch.arange(3) % d].view(b, 3, 1, 1)
    x = torch.frac(7.0 * zc + 0.031 * hh + 0.017 * ww + 0.1 * cc) * 1.1 - 0.05
    return x


class CountingRender:
    """Counts calls, records the first latent row of each call, optionally fails on call k."""

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.calls = 0
        self.starts: list[torch.Tensor] = []
        self.fail_on_call = fail_on_call

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise KeyboardInterrupt("simulated interruption")
        self.starts.append(z[0].clone())
        return cheap_render(z)


def _latents(n: int = 50, d: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed))


def test_round_trip_format_and_pixels(tmp_path):
    z = _latents()
    names = ["a", "b", "c", "d"]
    store = write_image_store(
        tmp_path / "s",
        z,
        cheap_render,
        chunk=16,
        factor_names=names,
        info={"r": "cheap"},
        progress=False,
    )
    assert isinstance(store, ImageDataset)
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta == {
        "format": "unmix-image-store",
        "version": 1,
        "n": 50,
        "height": H,
        "width": W,
        "channels": 3,
        "latent_dim": 4,
        "factor_names": names,
        "complete": 50,
        "info": {"r": "cheap"},
    }
    raw = np.load(tmp_path / "s" / "images.npy", mmap_mode="r")
    assert isinstance(raw, np.memmap) and raw.dtype == np.uint8 and raw.shape == (50, H, W, 3)
    lat = np.load(tmp_path / "s" / "latents.npy")
    assert lat.dtype == np.float32 and np.array_equal(lat, z.numpy())

    assert len(store) == 50 and store.image_shape == (3, H, W) and store.factor_names == names
    assert store.latents.dtype == torch.float32 and torch.equal(store.latents, z)
    idx = torch.tensor([5, 1, 5, 0, 49])  # unsorted with a repeat
    got = store.images(idx)
    ref = cheap_render(z[idx]).clamp(0, 1)
    assert got.shape == (5, 3, H, W) and got.dtype == torch.float32
    assert (got - ref).abs().max().item() <= 0.5 / 255 + 1e-6
    # numpy and list indices give the same, reopening gives the same
    assert torch.equal(store.images(np.array([5, 1])), store.images([5, 1]))
    assert torch.equal(ImageStore(tmp_path / "s").images(idx), got)
    # pixel rule round(255 * clip(x, 0, 1)), exactly
    want = torch.round(cheap_render(z[:3]).clamp(0, 1) * 255).to(torch.uint8).permute(0, 2, 3, 1)
    assert np.array_equal(raw[:3], want.numpy())


def test_resume_after_interruption_renders_only_missing_chunks(tmp_path):
    z = _latents(n=50)
    one_shot = write_image_store(tmp_path / "ref", z, cheap_render, chunk=8, progress=False)
    del one_shot

    failing = CountingRender(fail_on_call=4)  # chunks 0-2 (24 images) succeed, the 4th dies
    with pytest.raises(KeyboardInterrupt):
        write_image_store(tmp_path / "s", z, failing, chunk=8, progress=False)
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta["complete"] == 24
    # what the store claims is really on disk
    part = np.load(tmp_path / "s" / "images.npy", mmap_mode="r")[:24]
    ref = np.load(tmp_path / "ref" / "images.npy", mmap_mode="r")[:24]
    assert np.array_equal(part, ref)
    with pytest.raises(ConfigError, match=r"incomplete store \(24 of 50 images\).*resume"):
        ImageStore(tmp_path / "s")

    again = CountingRender()
    store = write_image_store(tmp_path / "s", z, again, chunk=8, progress=False)
    assert again.calls == 4  # images 24..49 in chunks of 8: 24, 32, 40, 48
    assert torch.equal(again.starts[0], z[24])
    for name in ("images.npy", "latents.npy", "meta.json"):
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()
    assert len(store) == 50

    done = CountingRender()
    write_image_store(tmp_path / "s", z, done, chunk=8, progress=False)
    assert done.calls == 0  # complete store: returned without rendering


def test_crash_before_first_commit_starts_afresh(tmp_path):
    z = _latents(n=10)
    root = tmp_path / "s"
    root.mkdir()
    np.save(root / "latents.npy", np.zeros((3, 2), np.float32))  # leftover, no meta.json
    store = write_image_store(root, z, cheap_render, chunk=4, progress=False)
    assert torch.equal(store.latents, z)


def test_refuses_store_with_different_latents_or_info(tmp_path):
    z = _latents(n=20)
    root = tmp_path / "s"
    write_image_store(root, z, cheap_render, chunk=8, info={"size": 6}, progress=False)
    z2 = z.clone()
    z2[7, 1] += 1e-6  # a single changed value is enough
    with pytest.raises(ConfigError, match="different latents") as err:
        write_image_store(root, z2, cheap_render, info={"size": 6}, progress=False)
    assert str(root) in str(err.value) and "delete" in str(err.value)
    with pytest.raises(ConfigError, match="different latents"):
        write_image_store(root, z[:10], cheap_render, info={"size": 6}, progress=False)
    with pytest.raises(ConfigError, match="different info"):
        write_image_store(root, z, cheap_render, info={"size": 64}, progress=False)
    # another format in meta.json
    other = tmp_path / "o"
    other.mkdir()
    (other / "meta.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ConfigError, match="not a usable unmix image store"):
        write_image_store(other, z, cheap_render, progress=False)
    # a foreign non-empty directory
    foreign = tmp_path / "f"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("hi")
    with pytest.raises(ConfigError, match="not an unmix image store"):
        write_image_store(foreign, z, cheap_render, progress=False)


def test_clear_errors_for_damaged_stores(tmp_path):
    z = _latents(n=12)
    root = tmp_path / "s"
    write_image_store(root, z, cheap_render, chunk=5, progress=False)
    ImageStore(root)  # fine

    img = root / "images.npy"
    data = img.read_bytes()
    img.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigError, match=r"images\.npy is truncated or corrupt"):
        ImageStore(root)
    img.write_bytes(data)

    (root / "meta.json").rename(root / "meta.bak")
    with pytest.raises(ConfigError, match=r"meta\.json is missing"):
        ImageStore(root)
    (root / "meta.bak").rename(root / "meta.json")

    (root / "latents.npy").unlink()
    with pytest.raises(ConfigError, match=r"latents\.npy is missing"):
        ImageStore(root)

    with pytest.raises(ConfigError, match="does not exist"):
        ImageStore(tmp_path / "nowhere")

    meta = json.loads((root / "meta.json").read_text())
    meta["height"] = H + 1  # shape disagrees with images.npy
    np.save(root / "latents.npy", z.numpy())
    (root / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="meta.json says"):
        ImageStore(root)


def test_bad_arguments(tmp_path):
    z = _latents(n=6)
    with pytest.raises(ConfigError, match="latents must have shape"):
        write_image_store(tmp_path / "a", z[0], cheap_render, progress=False)
    with pytest.raises(ConfigError, match="chunk"):
        write_image_store(tmp_path / "a", z, cheap_render, chunk=0, progress=False)
    with pytest.raises(ConfigError, match="factor_names"):
        write_image_store(tmp_path / "a", z, cheap_render, factor_names=["x"], progress=False)
    with pytest.raises(ConfigError, match=r"must return \(6, 3, H, W\)"):
        write_image_store(tmp_path / "a", z, lambda u: cheap_render(u)[:, :1], progress=False)
    assert not (tmp_path / "a" / "meta.json").exists()
    store = write_image_store(tmp_path / "b", z, cheap_render, progress=False)
    with pytest.raises(ConfigError, match="outside the valid range"):
        store.images([6])
    with pytest.raises(ConfigError, match="integer"):
        store.images(torch.tensor([0.5]))


def test_progress_bar_does_not_change_the_result_and_stays_off_stdout(tmp_path, capfd):
    z = _latents(n=9)
    a = write_image_store(tmp_path / "a", z, cheap_render, chunk=4, progress=True)
    out, err = capfd.readouterr()
    assert out == ""  # stdout is for results (a caller may pipe it)
    assert "rendering images" in err and "9/9" in err
    b = write_image_store(tmp_path / "b", z, cheap_render, chunk=4, progress=False)
    assert capfd.readouterr() == ("", "")
    assert torch.equal(a.images(range(9)), b.images(list(range(9))))


def test_an_image_store_is_a_torch_dataset_of_image_latent_pairs(tmp_path):
    import torch

    from unmix.data.store import ImageStore, write_image_store
    from unmix.render import SpritesRenderer
    from unmix.render.module import RenderMixing

    z = torch.rand(10, 4, generator=torch.Generator().manual_seed(0))
    write_image_store(tmp_path / "s", z, RenderMixing(SpritesRenderer(size=16)), progress=False)
    ds = ImageStore(tmp_path / "s")
    assert isinstance(ds, torch.utils.data.Dataset)
    x, latent = ds[3]
    assert x.shape == (3, 16, 16) and torch.equal(latent, ds.latents[3])
    assert torch.equal(x, ds.images([3])[0])
    xb, lb = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))
    assert xb.shape == (4, 3, 16, 16) and torch.equal(lb, ds.latents[:4])


_CONCURRENT_WRITER = """
import sys, time, torch
from unmix.data import write_image_store

def render(z):  # slow enough that the two writers overlap: 8 chunks of 0.1 s
    time.sleep(0.1)
    return z[:, :1, None, None].expand(-1, 3, 8, 8).clone()

z = torch.linspace(0, 1, 64)[:, None].repeat(1, 2)
store = write_image_store(sys.argv[1], z, render, chunk=8, progress=False)
assert len(store) == 64
"""


def test_two_processes_writing_one_store_wait_for_each_other(tmp_path):
    """Two runs started at once on one data set (two `unmix train` processes) render its store
    once between them: the second waits on the store's lock, then opens the complete store.
    Without the lock both wrote the same memory-mapped file, and the one whose file the other
    re-created was killed by SIGBUS."""
    import subprocess
    import sys

    script = tmp_path / "writer.py"
    script.write_text(_CONCURRENT_WRITER)
    root = tmp_path / "store"
    procs = [
        subprocess.Popen([sys.executable, str(script), str(root)], stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
    store = ImageStore(root)
    expect = torch.linspace(0, 1, 64)
    got = store.images(np.arange(64))[:, 0, 0, 0]
    assert torch.allclose(got, expect, atol=0.5 / 255 + 1e-6)
    assert (tmp_path / "store.lock").exists() and sorted(p.name for p in root.iterdir()) == [
        "images.npy",
        "latents.npy",
        "meta.json",
    ]
