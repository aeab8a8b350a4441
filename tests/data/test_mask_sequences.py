"""unmix.data.masks / sequence_sets: generated mask sequences, KITTI splits, next-frame pairs."""

import math
import pickle

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.data.masks import (
    SHAPE_PARTS,
    FrameSequences,
    gen_laplace_steps,
    mask_sequences,
    measure_masks,
    random_walk,
    render_silhouettes,
)
from unmix.data.sequence_sets import frames_of, split_sequences
from unmix.datasets import FiniteData
from unmix.errors import ConfigError
from unmix.generative import latent_process_of
from unmix.settings import Setting

LENGTHS = [1, 2, 3, 7, 12]


def make_pickle(path, lengths=LENGTHS):
    """A KITTI-Masks-layout fixture: moving boxes, latents = centre of mass and area."""
    from scipy.ndimage import center_of_mass

    rng = np.random.default_rng(0)
    seqs = []
    for n in lengths:
        out = np.zeros((n, 64, 64), dtype=bool)
        y, x = rng.integers(5, 30, 2)
        for t in range(n):
            out[t, y + t : y + t + 6 + t, x + 2 * t : x + 2 * t + 3 + t // 2] = True
        seqs.append(out)
    lats = [np.array([[*center_of_mass(f), f.sum()] for f in q], dtype=np.float32) for q in seqs]
    with open(path, "wb") as fh:
        pickle.dump({"pedestrians": seqs, "pedestrians_latents": lats}, fh)
    return seqs, lats


def test_gen_laplace_steps_match_gennorm():
    rng = np.random.default_rng(0)
    x = gen_laplace_steps(rng, (40_000, 1), 0.6, np.array([0.01]))[:, 0]
    assert stats.kstest(x, stats.gennorm(0.6, scale=0.01).cdf).pvalue > 1e-3


def test_gen_laplace_steps_take_one_shape_per_latent():
    shapes, scales = np.array([0.455, 0.694, 1.5]), np.array([0.002, 0.01, 0.03])
    x = gen_laplace_steps(np.random.default_rng(3), (30_000, 3), shapes, scales)
    for i in range(3):
        ref = stats.gennorm(shapes[i], scale=scales[i]).cdf
        assert stats.kstest(x[:, i], ref).pvalue > 1e-3
    # a wrong shape for a column is rejected: the draws are per column, not pooled
    assert stats.kstest(x[:, 0], stats.gennorm(1.5, scale=0.002).cdf).pvalue < 1e-6


def test_default_transitions_are_klindt_et_al_kitti_fits_in_pixels():
    """The default shapes are the authors' gennorm fits; the scales, mapped back to pixels at
    64 px through the renderer's geometry, are their fitted pixel scales (0.169, 0.232 px;
    1.01 px² of area at the middle of the box)."""
    from unmix.data.masks import TRANSITION_ALPHA, TRANSITION_SCALES

    assert TRANSITION_ALPHA[:3] == (0.587, 0.694, 0.455)
    lat = np.array([[0.4, 0.5, 0.5], [0.6, 0.5, 0.5], [0.5, 0.4, 0.5], [0.5, 0.6, 0.5]])
    lat = np.concatenate([lat, [[0.5, 0.5, 0.45], [0.5, 0.5, 0.55]]])
    m = measure_masks(render_silhouettes(lat, np.zeros(6), 64))
    px_per_x = (m[1, 0] - m[0, 0]) * 64 / 0.2
    px_per_y = (m[3, 1] - m[2, 1]) * 64 / 0.2
    area_per_scale = (m[5, 2] - m[4, 2]) * 64**2 / 0.1
    assert TRANSITION_SCALES[0] * px_per_x == pytest.approx(0.169, rel=0.02)
    assert TRANSITION_SCALES[1] * px_per_y == pytest.approx(0.232, rel=0.02)
    assert TRANSITION_SCALES[2] * area_per_scale == pytest.approx(1.01, rel=0.05)


def test_random_walk_rejects_wrong_number_of_shapes():
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="one per latent"):
        random_walk(rng, 2, 5, dim=3, alpha=(0.5, 0.6))
    with pytest.raises(ConfigError, match=r"\(0, 2\]"):
        random_walk(rng, 2, 5, dim=3, alpha=(0.5, 0.6, 2.5))


def test_random_walk_stays_in_box_and_is_sparse():
    w = random_walk(np.random.default_rng(1), 20, 100, dim=4)
    assert w.shape == (20, 100, 4) and w.min() >= 0 and w.max() <= 1
    steps = np.diff(w, axis=1).reshape(-1)
    assert stats.kurtosis(steps) > 3  # heavy-tailed: sparse steps, occasional jumps


def test_render_geometry_follows_latents():
    lat = np.array([[0.2, 0.5, 0.3], [0.8, 0.5, 0.3], [0.5, 0.5, 0.9]])
    m = render_silhouettes(lat, np.zeros(3), 64).astype(float) / 255
    assert m.shape == (3, 64, 64) and 0 < m.min() + 1 and m.max() == 1.0
    cols = np.arange(64) + 0.5
    com_x = (m.sum(1) * cols).sum(1) / m.sum((1, 2))
    assert com_x[0] < 32 < com_x[1]  # x moves the figure right
    assert m[2].sum() > 2 * m[0].sum()  # scale grows the area
    b = render_silhouettes(lat, np.zeros(3), 32, binary=True)
    assert set(np.unique(b)) <= {0, 255}


def test_shape_factors_scale_the_parts_they_name():
    lat = np.array([[0.5, 0.5, 0.6]] * 5)
    ones = np.ones((5, len(SHAPE_PARTS)))
    f = ones.copy()
    f[1, 0] = 1.5  # wider body
    f[2, 1] = 1.5  # taller body
    f[3, 2] = 1.5  # bigger head
    f[4, 3] = 1.3  # longer, thicker legs
    template = render_silhouettes(lat, np.zeros(5), 64)
    assert np.array_equal(template, render_silhouettes(lat, np.zeros(5), 64, shape=ones))
    m = render_silhouettes(lat, np.zeros(5), 64, shape=f).astype(float) / 255
    assert np.array_equal(m[0] * 255, template[0])
    area = m.sum((1, 2))
    assert np.all(area[1:] > area[0])
    top = (m.sum(2) > 0.5).argmax(1)
    bottom = 63 - (m.sum(2) > 0.5)[:, ::-1].argmax(1)
    assert top[3] < top[0] and bottom[3] == bottom[0]  # the head grows upwards only
    assert bottom[4] > bottom[0] and top[4] == top[0]  # the legs reach lower
    width = (m.sum(1) > 0.5).sum(1)
    assert width[1] > width[0]
    with pytest.raises(ConfigError, match="shape"):
        render_silhouettes(lat, np.zeros(5), 64, shape=-ones)


def test_edge_noise_frays_only_the_outline():
    from scipy.ndimage import distance_transform_edt

    rng = np.random.default_rng(0)
    lat = rng.random((6, 3))
    clean = render_silhouettes(lat, np.zeros(6), 64, binary=True) > 0
    sigma = 0.5
    noisy = render_silhouettes(
        lat, np.zeros(6), 64, edge_noise=sigma * rng.standard_normal((6, 64, 64))
    )
    changed = (noisy > 127) != clean
    assert changed.any()  # the outline moves
    depth = np.stack([distance_transform_edt(c) + distance_transform_edt(~c) for c in clean])
    assert not changed[depth > 12 * sigma].any()  # far inside and outside: untouched
    # a constant shift is a dilation: every pixel of the figure stays, the area grows
    grown = render_silhouettes(lat, np.zeros(6), 64, edge_noise=-np.ones((6, 64, 64)))
    assert np.all(grown.astype(int) >= render_silhouettes(lat, np.zeros(6), 64))
    with pytest.raises(ConfigError, match="edge_noise"):
        render_silhouettes(lat, np.zeros(6), 64, edge_noise=np.zeros((6, 32, 32)))


def test_nuisances_keep_the_latents_and_vary_per_sequence_or_frame():
    plain = mask_sequences(np.random.default_rng(5), 300, 50, image_size=32)
    shaped = mask_sequences(np.random.default_rng(5), 300, 50, image_size=32, shape_jitter=0.4)
    frayed = mask_sequences(np.random.default_rng(5), 300, 50, image_size=32, edge_noise=1.0)
    for other in (shaped, frayed):  # the nuisances are drawn after the walk: same latents
        assert torch.equal(other.latents, plain.latents)
        assert not torch.equal(other.images(np.arange(300)), plain.images(np.arange(300)))
    # a sequence keeps its figure: the area ratio to the template is steadier within sequences
    # than across them
    ratio = (
        (shaped.images(np.arange(300)).sum((1, 2, 3)) / plain.images(np.arange(300)).sum((1, 2, 3)))
        .log()
        .reshape(6, 50)
    )
    assert ratio.std(1).mean() < 0.3 * ratio.mean(1).std()
    with pytest.raises(ConfigError, match="shape_jitter"):
        mask_sequences(np.random.default_rng(5), 100, 50, shape_jitter=-0.1)


def _lowest_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.max(1) > 127).max())


def _columns_cosine(anchor: str, rng: np.random.Generator, n: int = 100) -> float:
    """Mean cosine of the images' derivatives in y and in scale (central differences, 32 px)."""
    out = []
    for _ in range(n):
        z = rng.uniform(0.2, 0.8, (1, 3))
        cols = []
        for i in (1, 2):
            e = np.zeros((1, 3))
            e[0, i] = 0.01
            up, down = (
                render_silhouettes(z + sgn * e, np.zeros(1), 32, anchor=anchor).astype(float)
                for sgn in (1, -1)
            )
            cols.append((up - down).ravel())
        out.append(cols[0] @ cols[1] / (np.linalg.norm(cols[0]) * np.linalg.norm(cols[1])))
    return float(np.mean(out))


def test_feet_anchor_keeps_the_foot_line_where_y_puts_it():
    lat = np.array([[0.5, 0.6, sc] for sc in (0.1, 0.5, 0.9)])
    feet = render_silhouettes(lat, np.zeros(3), 64, binary=True, anchor="feet")
    centre = render_silhouettes(lat, np.zeros(3), 64, binary=True)
    # growing upwards from the feet (within a pixel: the legs' round ends grow with the figure)
    rows = [_lowest_row(m) for m in feet]
    assert max(rows) - min(rows) <= 1
    assert _lowest_row(centre[0]) < _lowest_row(centre[2]) - 10  # growing about the centre
    assert np.array_equal(feet[1], centre[1])  # at scale 1/2 the two anchors agree
    # the point of the option: y and scale then move the image along similar directions, where
    # the centre anchor keeps them nearly orthogonal (what a VAE's inductive bias likes, paper 004)
    rng = np.random.default_rng(0)
    assert abs(_columns_cosine("centre", rng)) < 0.3
    assert _columns_cosine("feet", rng) < -0.6
    plain = mask_sequences(np.random.default_rng(5), 100, 50, image_size=32)
    feet_data = mask_sequences(np.random.default_rng(5), 100, 50, image_size=32, anchor="feet")
    assert torch.equal(feet_data.latents, plain.latents)
    with pytest.raises(ConfigError, match="anchor"):
        render_silhouettes(lat, np.zeros(3), 64, anchor="head")


def test_measured_latents_match_scipy_centre_of_mass_and_area():
    from scipy.ndimage import center_of_mass

    data = mask_sequences(
        np.random.default_rng(2), 120, 40, image_size=32, binary=True, latents="measured"
    )
    masks = (data.images(np.arange(120))[:, 0].numpy() > 0.5).astype(float)
    ref = np.array([[*center_of_mass(m)[::-1], m.sum()] for m in masks])  # (col, row), area
    ref[:, :2] = (ref[:, :2] + 0.5) / 32
    ref[:, 2] /= 32**2
    np.testing.assert_allclose(data.latents.numpy(), ref, rtol=1e-5, atol=1e-6)
    assert data.factor_names == ["com_x", "com_y", "area"]
    empty = measure_masks(np.zeros((1, 8, 8), dtype=np.uint8))
    assert empty.tolist() == [[0.5, 0.5, 0.0]]
    with pytest.raises(ConfigError, match="dim=3"):
        mask_sequences(np.random.default_rng(2), 100, 50, dim=4, latents="measured")
    s = Setting.from_dict(
        {
            "latent": {"space": "box", "dim": 4},
            "model": {"backbone": "conv", "hidden": [], "space": "box"},
            "objective": {"kind": "lp_infonce", "p": 1.0},
            "data": {"kind": "mask_sequences", "dim": 4, "image_size": 16},
        }
    )
    with pytest.raises(ConfigError, match="measured"):
        s.replace(**{"data.latents": "measured"})


def test_mask_sequences_pairs_are_later_frames_of_the_same_sequence():
    d = mask_sequences(np.random.default_rng(2), 203, 20, image_size=32, max_delta_t=3)
    assert len(d) == 203 and d.image_shape == (1, 32, 32) and d.n_sequences == 11
    assert min(d.seq_len.tolist()) >= 2
    g = torch.Generator().manual_seed(0)
    a, p = d.pairs(5000, g)
    assert torch.equal(d.sequence[a], d.sequence[p])
    gap = p - a
    assert gap.min() >= 1 and gap.max() <= 3
    assert abs(gap.double().mean().item() - d.mean_gap()) < 0.05
    a2, p2 = d.pairs(5000, torch.Generator().manual_seed(0))
    assert torch.equal(a, a2) and torch.equal(p, p2)
    x = d.images(a[:4])
    assert x.shape == (4, 1, 32, 32) and x.dtype == torch.float32 and x.max() <= 1


def test_subset_and_split_keep_whole_sequences():
    d = mask_sequences(np.random.default_rng(3), 100, 10, image_size=16)
    train, test = split_sequences(d, 0.3, np.random.default_rng(0))
    assert train.n_sequences == 7 and test.n_sequences == 3 and len(train) + len(test) == 100
    rows = {tuple(r) for r in d.latents.tolist()}
    assert {tuple(r) for r in test.latents.tolist()} <= rows
    assert not {tuple(r) for r in test.latents.tolist()} & {
        tuple(r) for r in train.latents.tolist()
    }


def test_setting_builds_finite_data_with_next_frame_pairs():
    s = Setting.from_dict(
        {
            "latent": {"space": "box", "dim": 3},
            "model": {"backbone": "conv", "hidden": [], "space": "box"},
            "objective": {"kind": "lp_infonce", "p": 1.0},
            "data": {"kind": "mask_sequences", "n_train": 120, "n_test": 40, "image_size": 16},
        }
    )
    data = FiniteData.open(s, latent_process_of(s))
    z, x, x_pos = data.pairs(8, torch.Generator().manual_seed(0), torch.device("cpu"))
    assert z.shape == (8, 3) and x.shape == x_pos.shape == (8, 1, 16, 16)
    again = FiniteData.open(s, latent_process_of(s))
    assert torch.equal(again.train.latents, data.train.latents)  # the data seed fixes the data
    with pytest.raises(ConfigError, match="kitti_masks"):
        s.replace(**{"data.root": "/somewhere"})


def test_kitti_masks_kind_reads_the_reader(tmp_path):
    make_pickle(tmp_path / "kitti_peds_v2.pickle")
    s = Setting.from_dict(
        {
            "latent": {"space": "box", "dim": 3},
            "model": {"backbone": "conv", "hidden": [], "space": "box"},
            "objective": {"kind": "lp_infonce", "p": 1.0},
            "data": {"kind": "kitti_masks", "root": str(tmp_path), "max_delta_t": 2},
        }
    )
    data = FiniteData.open(s, latent_process_of(s))
    assert len(data.train) + len(data.test) == sum(LENGTHS) - 1  # 1-frame sequences dropped
    assert data.test.n_sequences == 1  # 20 % of the 4 multi-frame sequences, at least one
    a, p = data.train.pairs(500, torch.Generator().manual_seed(1))
    assert torch.equal(data.train.sequence[a], data.train.sequence[p])
    assert 1 <= (p - a).min() and (p - a).max() <= 2
    with pytest.raises(ConfigError, match="root"):
        Setting.from_dict({**s.to_dict(), "data": {"kind": "kitti_masks"}})


def test_frames_of_keeps_masks(tmp_path):
    from unmix.data import KittiMasks

    seqs, _ = make_pickle(tmp_path / "kitti_peds_v2.pickle")
    f = frames_of(KittiMasks(tmp_path), 1)
    assert isinstance(f, FrameSequences) and f.n_sequences == len(seqs)
    assert torch.equal(f.images([0])[0, 0], torch.from_numpy(seqs[0][0].astype(np.float32)))
    assert math.isclose(f.mean_gap(), 1.0)
