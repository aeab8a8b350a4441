"""Tests of the Sprites renderer (paper 004, Sec. 4.3) and its Beta latents.

References: :mod:`colorsys` for HSV → RGB; a slow point-in-polygon / point-in-ellipse loop built
from the spec (vertices from the area convention) for the geometry; ``scipy.stats.beta`` for the
Beta latents (KS test, log-density); a stored golden file for pixel-exact regression.

Regenerate the golden file (only after an intended change of the picture) with::

    python tests/render/test_sprites.py --regen-golden
"""

from __future__ import annotations

import colorsys
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.errors import ConfigError
from unmix.render import SpritesLatents, SpritesRenderer, hsv_to_rgb

GOLDEN = Path(__file__).parent / "golden" / "sprites_16.npy"
GOLDEN_B = torch.tensor(
    [[0.5, 0.5, 0.5, 0.0], [0.1, 0.8, 1.0, 0.35], [0.9, 0.2, 0.0, 0.8]], dtype=torch.float32
)


def golden_images() -> np.ndarray:
    """Three 16×16 triangles (default renderer) — the content of the golden file."""
    return SpritesRenderer(size=16).render(GOLDEN_B).numpy()


# --------------------------------------------------------------------------- colour
def test_hsv_to_rgb_matches_colorsys():
    h = torch.linspace(0, 1, 997, dtype=torch.float64)[:-1]
    for s, v in [(1.0, 1.0), (0.8, 1.0), (0.6, 0.7)]:
        ref = torch.tensor([colorsys.hsv_to_rgb(float(x), s, v) for x in h], dtype=torch.float64)
        assert torch.allclose(hsv_to_rgb(h, s, v), ref, atol=1e-12)
    # hue is taken modulo 1
    assert torch.allclose(hsv_to_rgb(h + 1.0), hsv_to_rgb(h), atol=1e-12)
    assert torch.allclose(hsv_to_rgb(h - 1.0), hsv_to_rgb(h), atol=1e-12)


def test_pixel_colour_is_hsv_of_the_hue_factor():
    r = SpritesRenderer(size=32)
    b = torch.tensor([[0.5, 0.5, 1.0, 0.3]])
    img = r.render(b)[0]
    centre = img[:, 16, 16]  # fully covered pixel near the shape's centre
    assert torch.allclose(centre, torch.tensor(colorsys.hsv_to_rgb(0.3, 1, 1)).float(), atol=1e-6)
    # background is black
    assert float(img[:, 0, 0].abs().max()) == 0.0


# --------------------------------------------------------------------------- shapes & ranges
def test_output_shape_dtype_range():
    r = SpritesRenderer()
    b = torch.rand(7, 4, generator=torch.Generator().manual_seed(0))
    x = r.render(b)
    assert x.shape == (7, 3, 64, 64) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert float(x.max()) == pytest.approx(1.0)  # saturated colour inside the shape
    # leading dimensions are kept, numpy input accepted, one vector → one image
    assert r.render(b.reshape(7, 1, 4)).shape == (7, 1, 3, 64, 64)
    assert r.render(b[0].numpy()).shape == (3, 64, 64)
    assert SpritesRenderer(size=20).render(b).shape == (7, 3, 20, 20)
    assert SpritesRenderer(rotation=True).render(torch.rand(2, 5)).shape == (2, 3, 64, 64)


def test_factor_ranges_are_the_papers():
    r = SpritesRenderer()
    expected = torch.tensor([[0.2, 0.75], [0.2, 0.75], [0.11, 0.20], [0.0, 1.0]])
    assert torch.allclose(r.factor_ranges(), expected, atol=1e-7)
    b = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.5, 0.25, 0.5, 0.3]])
    phys = r.to_physical(b)
    assert torch.allclose(phys[0], expected[:, 0])
    assert torch.allclose(phys[1], expected[:, 1])
    # x = 0.55 B + 0.2, scale = 0.09 B + 0.11, hue = B (paper 004, Sec. 4.3)
    assert torch.allclose(phys[2], torch.tensor([0.475, 0.3375, 0.155, 0.3]), atol=1e-6)
    rr = SpritesRenderer(shape="square", rotation=True).factor_ranges()
    assert rr[4].tolist() == pytest.approx([0.0, math.pi / 2])
    assert SpritesRenderer(hue_span=0.9).to_physical(b)[1, 3] == pytest.approx(0.9)


def test_determinism():
    b = torch.rand(20, 4, generator=torch.Generator().manual_seed(3))
    x1 = SpritesRenderer().render(b)
    x2 = SpritesRenderer().render(b.clone())
    assert torch.equal(x1, x2)
    # an image does not depend on the other latents in its batch
    r = SpritesRenderer(rotation=True, shape="ellipse")
    b5 = torch.rand(20, 5, generator=torch.Generator().manual_seed(4))
    assert torch.equal(r.render(b5), torch.stack([r.render(v) for v in b5]))
    r = SpritesRenderer(rotation=True)
    assert torch.equal(r.render(b5), torch.stack([r.render(v) for v in b5]))


def test_golden_images():
    assert GOLDEN.exists(), (
        "golden file missing: run python tests/render/test_sprites.py --regen-golden"
    )
    ref = np.load(GOLDEN)
    got = golden_images()
    assert got.shape == ref.shape == (3, 3, 16, 16)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


# --------------------------------------------------------------------------- geometry
def _reference_coverage(shape: str, phys: np.ndarray, size: int, k: int) -> np.ndarray:
    """Slow point-sampled coverage (k×k points per pixel) from the written-down geometry:
    regular polygons of area scale² with the first vertex at 90° (triangle) or 45° (square),
    rotated by ``phys[4]``; ellipse with semi-axes (2b, b), π·2b² = scale²; y axis up."""
    x, y, s = phys[0], phys[1], phys[2]
    rot = phys[4] if len(phys) > 4 else 0.0
    out = np.zeros((size, size))
    offs = (np.arange(k) + 0.5) / k
    for i in range(size):  # rows, top to bottom
        for j in range(size):
            px = (j + offs[None, :]) / size + 0 * offs[:, None]
            py = 1.0 - (i + offs[:, None]) / size + 0 * offs[None, :]
            qx, qy = px - x, py - y
            if shape in ("triangle", "square"):
                m = 3 if shape == "triangle" else 4
                theta0 = math.pi / 2 if m == 3 else math.pi / 4
                circum = s / math.sqrt(0.5 * m * math.sin(2 * math.pi / m))
                ang = theta0 + rot + 2 * math.pi * np.arange(m) / m
                vx, vy = circum * np.cos(ang), circum * np.sin(ang)
                inside = np.ones_like(qx, dtype=bool)
                for e in range(m):  # counter-clockwise: inside = left of every edge
                    ax, ay = vx[e], vy[e]
                    bx, by = vx[(e + 1) % m], vy[(e + 1) % m]
                    inside &= (bx - ax) * (qy - ay) - (by - ay) * (qx - ax) >= 0
            else:
                bs = s / math.sqrt(2 * math.pi)
                c, sn = math.cos(rot), math.sin(rot)
                ux, uy = qx * c + qy * sn, qy * c - qx * sn
                inside = (ux / (2 * bs)) ** 2 + (uy / bs) ** 2 <= 1
            out[i, j] = inside.mean()
    return out


@pytest.mark.parametrize("shape", ["triangle", "square", "ellipse"])
def test_geometry_matches_slow_reference(shape):
    size, k = 24, 6
    b = torch.tensor([[0.4, 0.6, 0.9, 0.2, 0.3], [0.8, 0.1, 0.5, 0.7, 0.9]])
    rs = SpritesRenderer(size, shape, antialias="supersample", supersample=k, rotation=True)
    rc = SpritesRenderer(size, shape, rotation=True)
    phys = rs.to_physical(b)
    cov_ss = rs.coverage_physical(phys).numpy()
    cov_c = rc.coverage_physical(phys).numpy()
    for n in range(len(b)):
        ref = _reference_coverage(shape, phys[n].double().numpy(), size, k)
        # identical sample points: only points on an edge (float rounding) may differ
        assert np.abs(cov_ss[n] - ref).max() <= 2.0 / k**2 + 1e-6
        # analytic coverage: close to the point-sampled one, same area within 3 %
        edge = (ref > 0) & (ref < 1)
        assert np.abs(cov_c[n] - ref)[edge].mean() < 0.06
        assert abs(cov_c[n].sum() / ref.sum() - 1) < 0.03


def test_area_and_centroid():
    """Coverage integrates to scale²·H·W (unit-area shapes) and is centred at (x, 1 - y)."""
    H = 64
    b = torch.rand(50, 4, generator=torch.Generator().manual_seed(1))
    for shape in ["triangle", "square", "circle", "ellipse"]:
        r = SpritesRenderer(H, shape)
        phys = r.to_physical(b)
        cov = r.coverage_physical(phys).double()
        area = cov.sum((1, 2))
        expect = (phys[:, 2].double() * H) ** 2
        assert torch.allclose(area / expect, torch.ones_like(area), atol=0.02), shape
        cols = torch.arange(H, dtype=torch.float64) + 0.5
        cx = (cov.sum(1) * cols).sum(-1) / area
        cy = (cov.sum(2) * cols).sum(-1) / area
        # regular polygons and ellipses: centroid = centre
        assert torch.allclose(cx, phys[:, 0].double() * H, atol=0.05), shape
        assert torch.allclose(cy, (1 - phys[:, 1].double()) * H, atol=0.05), shape


def test_antialias_modes():
    b = torch.rand(5, 4, generator=torch.Generator().manual_seed(2))
    hard = SpritesRenderer(32, antialias="none").render(b)
    cov = SpritesRenderer(32).render(b)
    ss = SpritesRenderer(32, antialias="supersample", supersample=8).render(b)
    assert set(torch.unique(hard.amax(1)).tolist()) <= {0.0, 1.0}  # binary coverage
    frac = ((cov.amax(1) > 0) & (cov.amax(1) < 1)).float().mean()
    assert frac > 0.005  # there are partially covered pixels
    assert float((cov - ss).abs().mean()) < 0.003


def test_gradients_flow():
    b = torch.full((1, 4), 0.5, requires_grad=True)
    SpritesRenderer(32).render(b).sum().backward()
    assert torch.isfinite(b.grad).all() and float(b.grad[0, 2]) > 0  # bigger → more pixels lit


# --------------------------------------------------------------------------- identifiability
def test_each_factor_changes_the_image():
    r = SpritesRenderer(32, rotation=True)
    base = torch.full((5,), 0.5)
    for i in range(5):
        lo, hi = base.clone(), base.clone()
        lo[i], hi[i] = 0.3, 0.7
        diff = float((r.render(lo) - r.render(hi)).abs().mean())
        assert diff > 2e-3, f"factor {r.factor_names[i]} barely changes the image ({diff:.2e})"


def test_distinct_factors_give_distinct_images():
    r = SpritesRenderer(32, rotation=True)
    g = torch.Generator().manual_seed(4)
    b = torch.rand(150, 5, generator=g)
    x = r.render(b).reshape(150, -1)
    d = torch.cdist(x, x)
    d.fill_diagonal_(float("inf"))
    assert float(d.min()) > 1e-2
    # rotations in [0, 1) are distinct images (rotation period 2π/3 maps to [0, 1))
    rot = torch.tensor([[0.5, 0.5, 1.0, 0.2, t] for t in (0.0, 0.25, 0.5, 0.75)])
    xr = r.render(rot).reshape(4, -1)
    dr = torch.cdist(xr, xr) + torch.eye(4) * 1e9
    assert float(dr.min()) > 1e-1
    # ... and the ends of the rotation range coincide (the symmetry the period removes)
    ends = r.render(torch.tensor([[0.5, 0.5, 1.0, 0.2, 0.0], [0.5, 0.5, 1.0, 0.2, 1.0]]))
    assert float((ends[0] - ends[1]).abs().max()) < 1e-4
    # so do the ends of the paper's hue range (hue = B wraps around), unless hue_span < 1
    hues = torch.tensor([[0.5, 0.5, 0.5, 0.0], [0.5, 0.5, 0.5, 1.0]])
    same = SpritesRenderer(32).render(hues)
    assert float((same[0] - same[1]).abs().max()) < 1e-6
    apart = SpritesRenderer(32, hue_span=0.9).render(hues)
    assert float((apart[0] - apart[1]).abs().max()) > 0.5


# --------------------------------------------------------------------------- errors
def test_config_errors():
    r = SpritesRenderer()
    with pytest.raises(ConfigError, match=r"last dimension must be 4 \(the factors x, y"):
        r.render(torch.rand(3, 5))
    with pytest.raises(ConfigError, match="factor 2 \\('scale'\\).*outside the unit interval"):
        r.render(torch.tensor([[0.5, 0.5, 1.5, 0.5]]))
    with pytest.raises(ConfigError, match="NaN or inf"):
        r.render(torch.tensor([[0.5, float("nan"), 0.5, 0.5]]))
    with pytest.raises(ConfigError, match="at least 8 pixels"):
        SpritesRenderer(size=4)
    with pytest.raises(ConfigError, match="integer number of pixels"):
        SpritesRenderer(size=32.0)
    with pytest.raises(ConfigError, match="shape 'hexagon' is unknown"):
        SpritesRenderer(shape="hexagon")
    with pytest.raises(ConfigError, match="antialias 'fxaa' is unknown"):
        SpritesRenderer(antialias="fxaa")
    with pytest.raises(ConfigError, match="rotation-invariant"):
        SpritesRenderer(shape="circle", rotation=True)
    with pytest.raises(ConfigError, match="hue_span must be in"):
        SpritesRenderer(hue_span=1.5)
    with pytest.raises(ConfigError, match="seed must be a non-negative integer"):
        SpritesLatents(-1)
    # values within 1e-5 of the bounds are accepted (clipped)
    assert r.render(torch.tensor([[1.000001, -0.000001, 0.5, 0.5]])).shape == (1, 3, 64, 64)


# --------------------------------------------------------------------------- latents
def test_latent_parameters_per_seed():
    a, b = SpritesLatents(0), SpritesLatents(0)
    assert torch.equal(a.alpha, b.alpha) and torch.equal(a.beta, b.beta)
    c = SpritesLatents(1)
    assert not torch.equal(a.alpha, c.alpha)
    params = torch.cat([SpritesLatents(s).alpha for s in range(50)] + [a.beta])
    assert float(params.min()) >= 2.0 and float(params.max()) <= 15.0
    assert a.alpha.shape == (4,) and SpritesLatents(0, n_factors=5).alpha.shape == (5,)


def test_latent_samples_follow_beta():
    """KS test of each factor against scipy's Beta(α, β) CDF; n = 4000, fixed seed."""
    lat = SpritesLatents(7)
    b = lat.sample(4000, generator=torch.Generator().manual_seed(0)).double().numpy()
    assert b.dtype == np.float64 and b.shape == (4000, 4)
    for i in range(4):
        p = stats.kstest(b[:, i], stats.beta(float(lat.alpha[i]), float(lat.beta[i])).cdf).pvalue
        assert p > 1e-3, f"factor {i}: KS p = {p:.2e}"
    # reproducible with a generator
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(lat.sample(10, g1), lat.sample(10, g2))


def test_latent_log_prob_matches_scipy():
    lat = SpritesLatents(3)
    b = lat.sample(20, generator=torch.Generator().manual_seed(1)).double()
    ref = sum(
        stats.beta(float(lat.alpha[i]), float(lat.beta[i])).logpdf(b[:, i].numpy())
        for i in range(4)
    )
    np.testing.assert_allclose(lat.log_prob(b).numpy(), ref, rtol=1e-10)


if __name__ == "__main__":
    if "--regen-golden" in sys.argv:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        np.save(GOLDEN, golden_images())
        print(f"wrote {GOLDEN}")
    else:
        print("usage: python tests/render/test_sprites.py --regen-golden")
