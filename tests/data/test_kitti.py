"""unmix.data.kitti: KITTI Masks in the authors' pickle layout, and temporal positive pairs."""

import math
import pickle
from collections import Counter

import numpy as np
import pytest
import torch
from scipy.ndimage import center_of_mass

from unmix.data import ImageDataset, KittiMasks
from unmix.data.kitti import KITTI_FILE
from unmix.errors import ConfigError

LENGTHS = [1, 2, 3, 7, 12]  # a 1-frame sequence has no partner and must never be drawn


def _sequence(length: int, seed: int) -> np.ndarray:
    """A moving, growing box mask: (T, 64, 64) bool."""
    rng = np.random.default_rng(seed)
    out = np.zeros((length, 64, 64), dtype=bool)
    y, x = rng.integers(5, 30, 2)
    for t in range(length):
        s = 6 + t
        out[t, y + t : y + t + s, x + 2 * t : x + 2 * t + s // 2] = True
    return out


def make_pickle(path, lengths=LENGTHS):
    seqs = [_sequence(n, s) for s, n in enumerate(lengths)]
    lats = [
        np.array([[*center_of_mass(f), f.sum()] for f in seq], dtype=np.float32) for seq in seqs
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        pickle.dump({"pedestrians": seqs, "pedestrians_latents": lats}, fh)
    return seqs, lats


def test_layout_latents_and_images(tmp_path):
    seqs, lats = make_pickle(tmp_path / "kitti" / KITTI_FILE)
    ds = KittiMasks(tmp_path / "kitti")  # the directory works, so does the file itself
    assert isinstance(ds, ImageDataset)
    assert len(ds) == sum(LENGTHS) and ds.n_sequences == len(LENGTHS)
    assert ds.image_shape == (1, 64, 64)
    assert ds.factor_names == ["com_vertical", "com_horizontal", "area"]
    assert ds.latents.dtype == torch.float32
    assert torch.equal(ds.latents, torch.from_numpy(np.concatenate(lats)))
    # frame i of sequence 3 is flat index sum(LENGTHS[:3]) + i
    i = sum(LENGTHS[:3]) + 4
    assert (ds.sequence[i].item(), ds.frame[i].item()) == (3, 4)
    x = ds.images(torch.tensor([i, 0]))
    assert x.shape == (2, 1, 64, 64) and x.dtype == torch.float32
    assert torch.equal(x[0, 0], torch.from_numpy(seqs[3][4].astype(np.float32)))
    assert torch.equal(x[1, 0], torch.from_numpy(seqs[0][0].astype(np.float32)))
    assert torch.equal(KittiMasks(tmp_path / "kitti" / KITTI_FILE).images([i]), x[:1])


def _check_pair_basics(ds, a, p, m):
    assert a.dtype == torch.int64 and p.dtype == torch.int64
    assert torch.equal(ds.sequence[a], ds.sequence[p])
    dt = ds.frame[p] - ds.frame[a]
    assert int(dt.abs().min()) >= 1 and int(dt.abs().max()) <= m
    assert not bool((ds.seq_len[ds.sequence[a]] < 2).any())


def _binomial_check(counts: Counter, probs: dict, n: int) -> None:
    """Every cell within 5 binomial standard deviations (+1) of its expectation, none unexpected."""
    assert set(counts) <= set(probs), set(counts) - set(probs)
    assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-12)
    for cell, p in probs.items():
        c = counts.get(cell, 0)
        tol = 5.0 * math.sqrt(n * p * (1 - p)) + 1.0
        assert abs(c - n * p) <= tol, (cell, c, n * p, tol)
        assert c > 0  # every allowed (anchor, positive) pair is drawn


def test_uniform_rule_distribution(tmp_path):
    make_pickle(tmp_path / KITTI_FILE)
    m = 3
    ds = KittiMasks(tmp_path / KITTI_FILE, max_delta_t=m)
    n = 20_000
    a, p = ds.pairs(n, torch.Generator().manual_seed(0))
    assert a.shape == p.shape == (n,)
    _check_pair_basics(ds, a, p, m)
    # exact law: anchor uniform over frames of sequences with >= 2 frames, offset uniform
    # over {d : 1 <= |d| <= m, 0 <= t + d < T}
    probs = {}
    eligible = [i for i in range(len(ds)) if ds.seq_len[ds.sequence[i]] >= 2]
    for i in eligible:
        t, length = int(ds.frame[i]), int(ds.seq_len[ds.sequence[i]])
        offs = [d for d in range(-m, m + 1) if d != 0 and 0 <= t + d < length]
        for d in offs:
            probs[(i, i + d)] = 1.0 / len(eligible) / len(offs)
    counts = Counter(zip(a.tolist(), p.tolist(), strict=True))
    _binomial_check(counts, probs, n)
    # both directions and every offset size occur
    assert set((ds.frame[p] - ds.frame[a]).tolist()) == {-3, -2, -1, 1, 2, 3}


def test_pairs_are_deterministic_given_the_generator(tmp_path):
    make_pickle(tmp_path / KITTI_FILE)
    ds = KittiMasks(tmp_path / KITTI_FILE, max_delta_t=2)
    a1, p1 = ds.pairs(500, torch.Generator().manual_seed(7))
    a2, p2 = ds.pairs(500, torch.Generator().manual_seed(7))
    a3, p3 = ds.pairs(500, torch.Generator().manual_seed(8))
    assert torch.equal(a1, a2) and torch.equal(p1, p2)
    assert not (torch.equal(a1, a3) and torch.equal(p1, p3))


def test_forward_rule_matches_slowvae_loader(tmp_path):
    make_pickle(tmp_path / KITTI_FILE)
    m = 4
    ds = KittiMasks(tmp_path / KITTI_FILE, max_delta_t=m, rule="forward")
    n = 20_000
    a, p = ds.pairs(n, torch.Generator().manual_seed(1))
    _check_pair_basics(ds, a, p, m)
    assert bool((p > a).all())
    # law: anchor uniform over non-last frames; positive min(t + k, T - 1), k ~ U{1..m}
    anchors = [i for i in range(len(ds)) if ds.frame[i] <= ds.seq_len[ds.sequence[i]] - 2]
    probs: dict = {}
    for i in anchors:
        t, length = int(ds.frame[i]), int(ds.seq_len[ds.sequence[i]])
        for k in range(1, m + 1):
            j = i + min(t + k, length - 1) - t
            probs[(i, j)] = probs.get((i, j), 0.0) + 1.0 / len(anchors) / m
    _binomial_check(Counter(zip(a.tolist(), p.tolist(), strict=True)), probs, n)


def test_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        KittiMasks(tmp_path)
    bad = tmp_path / "bad.pickle"
    with open(bad, "wb") as fh:
        pickle.dump({"masks": []}, fh)
    with pytest.raises(ConfigError, match="'pedestrians' and 'pedestrians_latents'"):
        KittiMasks(bad)
    with open(bad, "wb") as fh:
        pickle.dump({"pedestrians": [_sequence(3, 0)], "pedestrians_latents": []}, fh)
    with pytest.raises(ConfigError, match="must match one to one"):
        KittiMasks(bad)
    with open(bad, "wb") as fh:
        pickle.dump(
            {"pedestrians": [_sequence(3, 0)], "pedestrians_latents": [np.zeros((2, 3))]}, fh
        )
    with pytest.raises(ConfigError, match="latents have shape"):
        KittiMasks(bad)
    bad.write_bytes(b"not a pickle")
    with pytest.raises(ConfigError, match="not a readable pickle"):
        KittiMasks(bad)
    make_pickle(tmp_path / KITTI_FILE)
    with pytest.raises(ConfigError, match="max_delta_t"):
        KittiMasks(tmp_path, max_delta_t=0)
    with pytest.raises(ConfigError, match="rule"):
        KittiMasks(tmp_path, rule="backward")
    with pytest.raises(ConfigError, match="batch_size"):
        KittiMasks(tmp_path).pairs(0, torch.Generator())
    only_single = tmp_path / "single.pickle"
    make_pickle(only_single, lengths=[1, 1])
    with pytest.raises(ConfigError, match="no positive pairs"):
        KittiMasks(only_single)


class _Payload:
    """Unpickling this would create ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "MARKER"
    seqs = [_sequence(3, 0)]
    with open(tmp_path / KITTI_FILE, "wb") as fh:
        pickle.dump({"pedestrians": seqs, "pedestrians_latents": [_Payload(marker)]}, fh)
    with pytest.raises(ConfigError, match=r"refuses to load objects of type posix\.system"):
        KittiMasks(tmp_path)
    assert not marker.exists()
