"""Tests of the 3DIdent-like scene renderer (paper 000, Appx A.4).

References: ``scipy.spatial.transform.Rotation`` for the Euler convention; a slow ray *marcher*
(small steps + point-membership tests of the primitives, then bisection) for the visible surface
and for the shadows; :mod:`colorsys` and the written-down Lambert formula for the colours of lit
ground pixels; a stored golden file for pixel regression.

Regenerate the golden file (only after an intended change of the picture) with::

    python tests/render/test_scenes3d.py --regen-golden
"""

from __future__ import annotations

import colorsys
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from unmix.errors import ConfigError
from unmix.render import SCENE_FACTOR_NAMES, SceneRenderer
from unmix.render.scenes3d import bounding_radius, euler_xyz_matrix

GOLDEN = Path(__file__).parent / "golden" / "scenes3d_16.npy"
GOLDEN_U = torch.tensor(
    [
        [0.5] * 10,
        [0.2, 0.7, 0.9, 0.1, 0.8, 0.3, 0.25, 0.6, 0.9, 0.1],
        [0.8, 0.3, 0.2, 0.9, 0.2, 0.7, 0.75, 0.05, 0.4, 0.95],
    ],
    dtype=torch.float32,
)


def golden_images() -> np.ndarray:
    """Three 16×16 scenes (antialias=2) — the content of the golden file."""
    return SceneRenderer(size=16, antialias=2).render(GOLDEN_U).numpy()


@pytest.fixture(scope="module")
def r32() -> SceneRenderer:
    return SceneRenderer(size=32)


def _u(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 10, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- basics
def test_output_shape_dtype_range(r32):
    u = _u(5, 0)
    x = r32.render(u)
    assert x.shape == (5, 3, 32, 32) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert r32.render(u.reshape(5, 1, 10)).shape == (5, 1, 3, 32, 32)
    assert r32.render(u[0].numpy()).shape == (3, 32, 32)
    assert SceneRenderer(size=8).render(u).shape == (5, 3, 8, 8)


def test_factor_ranges_and_order(r32):
    assert SCENE_FACTOR_NAMES[:3] == ("object_x", "object_y", "object_z")
    assert SCENE_FACTOR_NAMES[6:] == (
        "spotlight_angle",
        "object_hue",
        "spotlight_hue",
        "ground_hue",
    )
    ranges = r32.factor_ranges()
    assert ranges.shape == (10, 2)
    assert torch.allclose(ranges[:3], torch.tensor([[-3.0, 3.0]] * 3))
    h = math.pi / 2
    assert torch.allclose(ranges[3:], torch.tensor([[-h, h]] * 7))
    u = _u(4, 1)
    v = r32.to_physical(u)
    assert torch.allclose(v, ranges[:, 0] + u * (ranges[:, 1] - ranges[:, 0]))
    assert torch.allclose(r32.to_unit(v), u, atol=1e-6)


def test_euler_convention_matches_scipy():
    ang = torch.tensor([[0.3, -1.2, 0.7], [-1.5, 0.4, 1.5], [0.0, 0.0, 0.0]], dtype=torch.float64)
    ref = Rotation.from_euler("xyz", ang.numpy()).as_matrix()  # extrinsic x, then y, then z
    np.testing.assert_allclose(euler_xyz_matrix(ang).numpy(), ref, atol=1e-12)


def test_determinism_and_chunking():
    u = _u(6, 2)
    a = SceneRenderer(size=24).render(u)
    b = SceneRenderer(size=24, max_rays_per_chunk=600).render(u.clone())  # one image per chunk
    assert torch.equal(a, b)
    assert torch.equal(a, SceneRenderer(size=24).render(u))
    # an image does not depend on the other latents in its batch
    one_by_one = torch.stack([SceneRenderer(size=24).render(v) for v in u])
    assert torch.equal(a, one_by_one)


def test_antialias_averages_subpixel_rays():
    """antialias=k rays sit at the pixel centres of a k-times larger image: box filter."""
    u = _u(3, 3)
    small = SceneRenderer(size=16, antialias=2).render(u)
    big = SceneRenderer(size=32).render(u)
    pooled = torch.nn.functional.avg_pool2d(big, 2)
    assert torch.allclose(small, pooled, atol=1e-5)


def test_golden_images():
    assert GOLDEN.exists(), (
        "missing golden: run python tests/render/test_scenes3d.py --regen-golden"
    )
    ref = np.load(GOLDEN)
    got = golden_images()
    assert got.shape == ref.shape == (3, 3, 16, 16)
    # float32 round-off could flip a ray exactly on a silhouette: allow a few such pixels
    bad = np.abs(got - ref).max(axis=1) > 1e-4
    assert bad.sum() <= 2 and np.abs(got - ref).mean() < 1e-3


def test_bounding_radius_and_ground_clearance(r32):
    """The bound contains every surface point (sampled) and the object never cuts the ground."""
    rng = np.random.default_rng(0)
    far = 0.0
    for p in r32.primitives:
        v = rng.normal(size=(4000, 3))
        if p.kind == "ellipsoid":
            v /= np.linalg.norm(v, axis=1, keepdims=True)
        else:
            v = np.clip(v / np.abs(v).max(1, keepdims=True), -1, 1)
        pts = (v * np.array(p.half)) @ p.rot.T + np.array(p.centre)
        far = max(far, np.linalg.norm(pts, axis=1).max())
    assert far <= bounding_radius(r32.primitives) + 1e-9
    assert far > 0.9 * bounding_radius(r32.primitives)  # and is not loose
    assert r32.ground_z < -3.0 - far


# --------------------------------------------------------------------------- slow references
def _inside(r: SceneRenderer, R: np.ndarray, pos: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Point membership in the object (union of primitives), straight from the definitions."""
    q = (pts - pos) @ R  # world → object frame: R^T (p − pos)
    inside = np.zeros(pts.shape[:-1], dtype=bool)
    for p in r.primitives:
        loc = ((q - np.array(p.centre)) @ p.rot) / np.array(p.half)  # Q^T (q − c) / half
        if p.kind == "ellipsoid":
            inside |= (loc**2).sum(-1) <= 1.0
        else:
            inside |= np.abs(loc).max(-1) <= 1.0
    return inside


def _march(r, R, pos, origin, direction, t_max, step=4e-3):
    """First t ∈ (0, t_max] with origin + t·direction inside the object (np.inf if none).

    Marches only over the part of each ray that crosses the bounding ball, then bisects.
    """
    rad = bounding_radius(r.primitives)
    length = np.linalg.norm(direction, axis=-1)
    t_close = -((origin - pos) * direction).sum(-1) / length**2  # closest approach to pos
    t_lo = np.clip(t_close - rad / length, 0, t_max)
    n_steps = int(2.05 * rad / step) + 2  # spatial step `step` along every ray
    ts = t_lo[:, None] + (step / length)[:, None] * np.arange(n_steps)[None, :]
    ts = np.minimum(ts, np.broadcast_to(t_max, t_lo.shape)[:, None])
    pts = origin[:, None, :] + ts[..., None] * direction[:, None, :]
    ins = _inside(r, R, pos, pts)
    first = np.where(ins.any(1), ins.argmax(1), -1)
    out = np.full(len(origin), np.inf)
    for i in np.nonzero(first >= 0)[0]:
        hi = ts[i, first[i]]
        lo = ts[i, first[i] - 1] if first[i] > 0 else 0.0
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if _inside(r, R, pos, (origin[i] + mid * direction[i])[None])[0]:
                hi = mid
            else:
                lo = mid
        out[i] = hi
    return out


def test_visible_surface_matches_ray_marcher():
    r = SceneRenderer(size=24)
    u = _u(3, 4)
    buf = r.render_buffers(u)
    K = len(r.primitives)
    cam = buf["camera"].double().numpy()
    dirs = buf["dirs"].double().numpy()
    n_checked = n_obj = 0
    for i in range(len(u)):
        R = buf["R"][i].double().numpy()
        pos = r.to_physical(u[i]).double().numpy()[:3]
        t_ground = (r.ground_z - cam[2]) / dirs[:, 2]
        t_ref = _march(r, R, pos, np.broadcast_to(cam, dirs.shape), dirs, t_ground)
        hit_ref = t_ref < t_ground
        hit = buf["hit"][i].numpy() < K
        mismatch = hit != hit_ref
        assert mismatch.sum() <= 1, f"image {i}: {mismatch.sum()} rays disagree on hitting"
        both = hit & hit_ref
        t = buf["t"][i].double().numpy()
        np.testing.assert_allclose(t[both], t_ref[both], atol=2e-3)
        np.testing.assert_allclose(t[~hit], t_ground[~hit], rtol=1e-5)
        # normals: unit, facing the camera
        nrm = buf["normal"][i].double().numpy()
        assert np.allclose(np.linalg.norm(nrm, axis=-1), 1.0, atol=1e-5)
        assert ((nrm[hit] * dirs[hit]).sum(-1) < 1e-4).all()
        n_checked += len(dirs)
        n_obj += both.sum()
    assert n_obj > 40 and n_checked == 3 * 24 * 24


def test_normals_match_finite_differences():
    """Normal of the hit primitive = normalised gradient of its implicit function."""
    r = SceneRenderer(size=32)
    u = _u(2, 5)
    buf = r.render_buffers(u)
    K = len(r.primitives)
    for i in range(2):
        R = buf["R"][i].double().numpy()
        pos = r.to_physical(u[i]).double().numpy()[:3]
        hit = buf["hit"][i].numpy()
        rows = np.nonzero(hit < K)[0]
        for j, k in zip(rows, hit[rows], strict=True):
            p = r.primitives[k]
            if p.kind == "box":
                continue

            def f(x, p=p, R=R, pos=pos):
                loc = (((x - pos) @ R - np.array(p.centre)) @ p.rot) / np.array(p.half)
                return (loc**2).sum(-1)

            x0 = buf["point"][i, j].double().numpy()
            h = 1e-5
            g = np.array([(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(3)])
            g /= np.linalg.norm(g)
            np.testing.assert_allclose(buf["normal"][i, j].double().numpy(), g, atol=2e-3)


def test_shadows_match_ray_marcher():
    r = SceneRenderer(size=32)
    u = _u(4, 6)
    buf = r.render_buffers(u)
    K = len(r.primitives)
    n_shadow = 0
    for i in range(len(u)):
        R = buf["R"][i].double().numpy()
        pos = r.to_physical(u[i]).double().numpy()[:3]
        ground = (buf["hit"][i].numpy() == K) & (buf["cone"][i].numpy() > 0)
        pts = buf["point"][i].double().numpy()[ground]
        light = buf["light"][i].double().numpy()
        seg = light - pts
        t_ref = _march(r, R, pos, pts, seg, np.ones(len(pts)))
        shadow_ref = np.isfinite(t_ref)
        shadow = buf["visible"][i].numpy()[ground] == 0
        assert (shadow != shadow_ref).sum() <= max(1, 0.01 * len(pts)), f"image {i}"
        n_shadow += shadow_ref.sum()
    assert n_shadow > 20  # the check saw shadows


def test_lit_ground_colour_is_lambert():
    """Unshadowed ground pixel = ground_rgb · (k_a + k_s · cone · cos θ · light_rgb), clipped."""
    r = SceneRenderer(size=32)
    u = _u(3, 7)
    buf = r.render_buffers(u)
    K = len(r.primitives)
    img = buf["image"].double().numpy().reshape(3, 3, -1)
    for i in range(3):
        v = r.to_physical(u[i]).double().numpy()
        hue = lambda a: (a / (2 * math.pi)) % 1.0  # noqa: E731
        ground_rgb = np.array(colorsys.hsv_to_rgb(hue(v[9]), 0.6, 1.0))
        light_rgb = np.array(colorsys.hsv_to_rgb(hue(v[8]), 0.8, 1.0))
        lp = np.array([4 * math.sin(v[6]), -4 * math.cos(v[6]), r.light_height])
        aim = (v[:3] - lp) / np.linalg.norm(v[:3] - lp)
        sel = (buf["hit"][i].numpy() == K) & (buf["visible"][i].numpy() == 1)
        pts = buf["point"][i].double().numpy()[sel]
        ell = (lp - pts) / np.linalg.norm(lp - pts, axis=1, keepdims=True)
        ang = np.arccos(np.clip(-(ell @ aim), -1, 1))
        half = math.radians(35) / 2
        x = np.clip((np.cos(ang) - math.cos(half)) / (math.cos(0.9 * half) - math.cos(half)), 0, 1)
        cone = x * x * (3 - 2 * x)
        expect = ground_rgb * (0.3 + 1.1 * (cone * ell[:, 2])[:, None] * light_rgb)
        # float32 round-off (≈ 6e-8 in cos) is amplified by the rim's slope 1.5/(cos_in − cos_out)
        np.testing.assert_allclose(img[i][:, sel].T, np.clip(expect, 0, 1), atol=1e-4)
        assert (cone > 0.5).sum() > 10  # the spot is in view


def test_colour_factors_act_where_they_should(r32):
    base = torch.full((10,), 0.5)
    buf = r32.render_buffers(base[None])
    K = len(r32.primitives)
    obj = (buf["hit"][0] < K).reshape(32, 32)
    dark = (buf["cone"][0] == 0).reshape(32, 32)

    def changed(i):
        a, b = base.clone(), base.clone()
        a[i], b[i] = 0.2, 0.8
        return (r32.render(a) - r32.render(b)).abs().amax(0) > 1e-6

    assert not changed(7)[~obj].any() and changed(7)[obj].any()  # object hue: object only
    assert not changed(9)[obj].any() and changed(9)[~obj].all()  # ground hue: ground only
    assert not changed(8)[dark].any()  # light hue: lit pixels only


# --------------------------------------------------------------------------- identifiability
def test_each_factor_changes_the_image(r32):
    base = torch.full((10,), 0.5)
    for i in range(10):
        lo, hi = base.clone(), base.clone()
        lo[i], hi[i] = 0.3, 0.7
        diff = float((r32.render(lo) - r32.render(hi)).abs().mean())
        assert diff > 2e-3, f"factor {SCENE_FACTOR_NAMES[i]} barely changes the image ({diff:.2e})"


def test_different_rotations_give_different_images():
    r = SceneRenderer(size=32)
    g = torch.Generator().manual_seed(8)
    u = torch.full((60, 10), 0.5)
    u[:, 3:6] = torch.rand(60, 3, generator=g)
    x = r.render(u).reshape(60, -1)
    d = torch.cdist(x, x) + torch.eye(60) * 1e9
    assert float(d.min()) > 0.05
    # rotating the object by 180° about the vertical axis changes the picture: no symmetry
    w = torch.full((2, 10), 0.5)
    w[0, 5], w[1, 5] = 0.0, 1.0  # γ = −π/2 vs +π/2
    y = r.render(w)
    assert float((y[0] - y[1]).abs().mean()) > 2e-3


def test_object_has_no_symmetry(r32):
    """No rotation (and no reflection) maps the object onto itself: the symmetric difference
    of the object and its image, estimated with 100k uniform points, is a sizeable part of the
    object's volume (≈ 5,900 points inside; measured minimum 15 % over random rotations)."""
    rng = np.random.default_rng(1)
    pts = rng.uniform(-2.3, 2.3, size=(100000, 3))
    zero = np.zeros(3)
    inside = _inside(r32, np.eye(3), zero, pts)
    vol = inside.sum()
    assert vol > 4000

    def moved_fraction(R):
        return (inside != _inside(r32, R, zero, pts)).sum() / vol

    half_turns = [Rotation.from_rotvec(math.pi * a).as_matrix() for a in np.eye(3)]
    for R in half_turns + list(Rotation.random(40, random_state=0).as_matrix()):
        assert moved_fraction(R) > 0.1
    # the nearest mirror plane is y = 0 (spout-handle plane): still ≈ 6 % of the volume moves
    mirror_y = np.diag([1.0, -1.0, 1.0])
    assert (inside != _inside(r32, np.eye(3), zero, pts @ mirror_y)).sum() / vol > 0.03


# --------------------------------------------------------------------------- errors
def test_config_errors(r32):
    with pytest.raises(ConfigError, match=r"last dimension must be 10 \(the factors object_x"):
        r32.render(torch.rand(2, 9))
    with pytest.raises(ConfigError, match=r"factor 2 \('object_z'\).*outside the unit interval"):
        r32.render(torch.tensor([[0.5, 0.5, 1.2] + [0.5] * 7]))
    with pytest.raises(ConfigError, match="NaN or inf"):
        r32.render(torch.full((1, 10), float("inf")))
    with pytest.raises(ConfigError, match="at least 8 pixels"):
        SceneRenderer(size=7)
    with pytest.raises(ConfigError, match="antialias must be an integer >= 1"):
        SceneRenderer(antialias=0)

    with pytest.raises(ConfigError, match=r"object_scale must be a number in \[0.1, 4\]"):
        SceneRenderer(object_scale=0.0)
    with pytest.raises(ConfigError, match="two_tone must be true or false"):
        SceneRenderer(two_tone=1)
    with pytest.raises(ConfigError, match="texture must be one of 'none', 'ramp', 'ramps'"):
        SceneRenderer(texture="stripes")


# --------------------------------------------------------------------------- options
def test_two_tone_recolours_only_the_small_parts():
    """``two_tone`` changes the albedo of spout, knob (lighter) and handle (darker): pixels on
    the body and the ground stay identical, the geometry (which ray hits what) is unchanged."""
    u = _u(6, 3)
    plain, tone = SceneRenderer(size=32), SceneRenderer(size=32, two_tone=True)
    a, b = plain.render_buffers(u), tone.render_buffers(u)
    assert torch.equal(a["hit"], b["hit"])
    changed = (a["image"] != b["image"]).any(1).flatten(1)  # (n, P)
    on_parts = (a["hit"] >= 1) & (a["hit"] <= 3)  # spout, knob, handle
    assert bool(changed.any()) and not bool((changed & ~on_parts).any())
    # light parts are brighter, the handle darker, than the same pixels drawn in one colour
    lum_a, lum_b = a["image"].sum(1).flatten(1), b["image"].sum(1).flatten(1)
    light = (a["hit"] == 1) | (a["hit"] == 2)
    assert bool((lum_b[light] >= lum_a[light] - 1e-6).all())
    assert bool((lum_b[a["hit"] == 3] <= lum_a[a["hit"] == 3] + 1e-6).all())


def test_ramp_texture_paints_the_object_only():
    """``texture="ramp"`` multiplies the object's albedo by 0.55 + 0.45 t, t ∈ [-1, 1] along an
    object-frame direction: same geometry, ground untouched, object pixels between 0.1 and 1 of
    the plain ones."""
    u = _u(6, 5)
    plain, ramp = SceneRenderer(size=32), SceneRenderer(size=32, texture="ramp")
    a, b = plain.render_buffers(u), ramp.render_buffers(u)
    assert torch.equal(a["hit"], b["hit"])
    obj = (a["hit"] < len(plain.primitives)).unsqueeze(1).expand_as(a["image"].flatten(2))
    ia, ib = a["image"].flatten(2), b["image"].flatten(2)
    assert torch.equal(ia[~obj], ib[~obj])
    ratio = ib[obj & (ia > 0.05)] / ia[obj & (ia > 0.05)]
    assert float(ratio.min()) >= 0.1 - 1e-5 and float(ratio.max()) <= 1.0 + 1e-5
    assert float(ratio.max() - ratio.min()) > 0.3  # the ramp is visible
    # "ramps" adds whiteness on top: object pixels no darker than with one ramp, ground as before
    ic = SceneRenderer(size=32, texture="ramps").render_buffers(u)["image"].flatten(2)
    assert torch.equal(ic[~obj], ia[~obj]) and bool((ic[obj] >= ib[obj] - 1e-6).all())
    assert float((ic[obj] - ib[obj]).max()) > 0.1


def test_ramp_cap_whitens_exactly_the_cap_of_the_ramp():
    """``texture="ramp_cap"`` = the ramp, with the albedo ρ mixed to ρ + 0.75 (1 − ρ) where the
    object-frame surface point q has q · w_cap > 0.2 r. Checked pixel by pixel against a
    reconstruction from the buffers: the cap's set from the hit points, and its values from the
    plain render (colour · E, E the irradiance) and the object colour (stdlib colorsys)."""

    from unmix.render.scenes3d import _CAP_DIRECTION, _RAMP_DIRECTION

    u = _u(12, 8)
    plain = SceneRenderer(size=32, object_scale=3.0)
    ramp = SceneRenderer(size=32, object_scale=3.0, texture="ramp")
    cap = SceneRenderer(size=32, object_scale=3.0, texture="ramp_cap")
    assert abs(float(np.dot(_CAP_DIRECTION, _RAMP_DIRECTION))) < 1e-12
    a, b, c = plain.render_buffers(u), ramp.render_buffers(u), cap.render_buffers(u)
    assert torch.equal(b["hit"], c["hit"])
    on = b["hit"] < len(ramp.primitives)  # (n, P)
    phys = ramp.to_physical(u)
    q = torch.einsum("nji,npj->npi", b["R"], b["point"] - phys[:, None, :3])  # R^T (p - centre)
    r = ramp._bs_radius
    in_cap = on & (q @ torch.tensor(_CAP_DIRECTION) > 0.2 * r)
    ia, ib, ic = (x["image"].flatten(2) for x in (a, b, c))  # (n, 3, P)
    mask = in_cap.unsqueeze(1).expand_as(ib)
    assert torch.equal(ib[~mask], ic[~mask])  # ground and the rest of the object unchanged
    frac = float(in_cap.sum() / on.sum())
    assert 0.05 < frac < 0.6, frac  # the cap is a visible part of the object, not all of it
    # values: colour from the object hue, E = plain / colour, ρ = gain · colour (the ramp)
    hue = (phys[:, 7] / (2 * math.pi)) % 1.0
    colour = torch.tensor([colorsys.hsv_to_rgb(float(h), 1.0, 1.0) for h in hue])  # (n, 3)
    colour = colour[:, :, None].expand_as(ib)
    gain = (0.55 + 0.45 * (q @ torch.tensor(_RAMP_DIRECTION) / r).clamp(-1, 1))[:, None]
    rho = gain.expand_as(ib) * colour
    irr = ia / colour.clamp_min(1e-6)
    ok = mask & (colour > 0.3) & (ia < 0.99) & (ic < 0.99)  # nothing clipped, E recoverable
    assert int(ok.sum()) > 100
    expected = (rho + 0.75 * (1.0 - rho)) * irr
    assert torch.allclose(ic[ok], expected[ok], atol=1e-4)
    assert bool((ic[mask] >= ib[mask] - 1e-6).all()) and float((ic - ib)[mask].max()) > 0.3


def test_spot_cone_widens_the_lit_ground_and_keeps_the_default_scene():
    """``spot_cone`` is the light's full cone angle: 35° renders exactly the default scene, a
    wider cone lights more ground (the cone term is > 0 on more ground rays), and a setting
    at the default cone has the data-store key of one that does not name the field (so stores
    rendered before the field existed keep their names), a wider one its own."""
    u = _u(8, 9)
    base = SceneRenderer(size=32, object_scale=3.0)
    same = SceneRenderer(size=32, object_scale=3.0, spot_cone=35)
    wide = SceneRenderer(size=32, object_scale=3.0, spot_cone=50.0)
    assert torch.equal(base.render(u), same.render(u))
    a, b = base.render_buffers(u), wide.render_buffers(u)
    k = len(base.primitives)
    lit_a = ((a["cone"] > 0) & (a["hit"] == k)).sum()
    lit_b = ((b["cone"] > 0) & (b["hit"] == k)).sum()
    assert int(lit_b) > 1.5 * int(lit_a) > 0
    with pytest.raises(ConfigError, match=r"spot_cone must be .* in \[10, 120\]"):
        SceneRenderer(spot_cone=5.0)

    from unmix.data.sets import data_key
    from unmix.resolve import resolve

    def key(over):
        return data_key(resolve("zimmermann-table4-row1", "quick", overrides=over).setting)

    assert key({}) == key({"mixing.spot_cone": 35.0})
    assert key({}) != key({"mixing.spot_cone": 50.0})


def test_object_scale_grows_the_object_and_keeps_the_ground_below_it():
    u = _u(16, 4)
    base = SceneRenderer(size=32)
    big = SceneRenderer(size=32, object_scale=2.0)
    assert base.ground_z == -5.3  # the default scene is unchanged
    assert big.ground_z < -3.0 - bounding_radius(big.primitives)
    k = len(base.primitives)
    px_base = (base.render_buffers(u)["hit"] < k).sum(1).double()
    px_big = (big.render_buffers(u)["hit"] < k).sum(1).double()
    # area grows roughly with the square of the scale (perspective and the frame edge aside)
    ratio = float(px_big.sum() / px_base.sum())
    assert 1.6 < ratio < 2.4, ratio


def test_scenes3d_mixing_fields_reach_the_renderer():
    from unmix.registry import MIXINGS

    spec = {"kind": "scenes3d", "image_size": 16, "antialias": 2, "object_scale": 1.8}
    r = MIXINGS.entry("scenes3d").build({**spec, "two_tone": True, "texture": "ramp"}).renderer
    assert (r.size, r.antialias, r.object_scale, r.two_tone, r.texture) == (
        16,
        2,
        1.8,
        True,
        "ramp",
    )


if __name__ == "__main__":
    if "--regen-golden" in sys.argv:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        np.save(GOLDEN, golden_images())
        print(f"wrote {GOLDEN}")
    else:
        print("usage: python tests/render/test_scenes3d.py --regen-golden")
