"""SimCLR augmentations against independent references.

References: :mod:`colorsys` for RGB↔HSV, a NumPy bilinear resampler for the resized crop, NumPy
closed forms of torchvision's brightness / contrast / saturation / greyscale, KS tests (scipy) for
the sampled crop areas, positions and jitter factors.
"""

import colorsys
import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.augment import (
    SimCLRAugment,
    _adjust_brightness,
    _adjust_hue,
    _resized_crop,
    hsv_to_rgb,
    rgb_to_hsv,
)
from unmix.errors import ConfigError

LUMA = np.array([0.299, 0.587, 0.114])
OFF = dict(crop_scale=(1, 1), crop_ratio=(1, 1), p_jitter=0.0, p_gray=0.0)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- numpy references
def _np_crop(img: np.ndarray, box) -> np.ndarray:
    """Bilinear resample of box (x0, y0, w, h in fractions) to the full size; border clamp."""
    _, hgt, wid = img.shape
    x0, y0, w, h = box
    sx = np.clip((x0 + w * (np.arange(wid) + 0.5) / wid) * wid - 0.5, 0, wid - 1)
    sy = np.clip((y0 + h * (np.arange(hgt) + 0.5) / hgt) * hgt - 0.5, 0, hgt - 1)
    ix0, iy0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    ix1, iy1 = np.minimum(ix0 + 1, wid - 1), np.minimum(iy0 + 1, hgt - 1)
    fx, fy = sx - ix0, sy - iy0
    top = img[:, iy0][:, :, ix0] * (1 - fx) + img[:, iy0][:, :, ix1] * fx
    bot = img[:, iy1][:, :, ix0] * (1 - fx) + img[:, iy1][:, :, ix1] * fx
    return top * (1 - fy[:, None]) + bot * fy[:, None]


def _np_gray(img):
    return np.tensordot(LUMA, img, axes=1)[None]


def _np_hue(img, shift):
    out = np.empty_like(img)
    for i, j in itertools.product(range(img.shape[1]), range(img.shape[2])):
        h, s, v = colorsys.rgb_to_hsv(*img[:, i, j])
        out[:, i, j] = colorsys.hsv_to_rgb((h + shift) % 1.0, s, v)
    return out


def _np_op(img, op, f):
    if op == 0:
        out = f * img
    elif op == 1:
        out = f * img + (1 - f) * _np_gray(img).mean()
    elif op == 2:
        out = f * img + (1 - f) * _np_gray(img)
    else:
        out = _np_hue(img, f)
    return np.clip(out, 0, 1)


# ---------------------------------------------------------------- colour space
def test_rgb_hsv_round_trip_against_colorsys():
    rng = np.random.default_rng(0)
    px = rng.random((500, 3))
    px[:20] = px[:20, :1]  # grey pixels
    px[20:40, 1] = px[20:40, 0]  # ties between the maximum channels
    px[40] = 0.0
    x = torch.from_numpy(px.T.reshape(1, 3, 20, 25).copy())
    hsv = rgb_to_hsv(x)
    ref = np.array([colorsys.rgb_to_hsv(*p) for p in px])
    np.testing.assert_allclose(hsv[0].reshape(3, -1).numpy().T, ref, atol=1e-12)
    back = np.array([colorsys.hsv_to_rgb(*p) for p in ref])
    np.testing.assert_allclose(hsv_to_rgb(hsv)[0].reshape(3, -1).numpy().T, back, atol=1e-12)
    np.testing.assert_allclose(hsv_to_rgb(hsv).numpy(), x.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "shift, target", [(1 / 3, (0, 1, 0)), (2 / 3, (0, 0, 1)), (-1 / 3, (0, 0, 1)), (1.0, (1, 0, 0))]
)
def test_hue_rotation_of_pure_red(shift, target):
    red = torch.zeros(1, 3, 2, 2)
    red[:, 0] = 1.0
    out = _adjust_hue(red, torch.tensor([shift]))
    want = torch.tensor(target, dtype=torch.float32).view(1, 3, 1, 1).expand(1, 3, 2, 2)
    torch.testing.assert_close(out, want, atol=1e-6, rtol=0)


# ---------------------------------------------------------------- single operations
def test_identity_when_everything_is_off():
    x = torch.rand(6, 3, 19, 19, generator=_gen(0))
    out = SimCLRAugment(**OFF)(x, _gen(1))
    torch.testing.assert_close(out, x, atol=1e-5, rtol=0)
    # non-square: the full image has pixel aspect ratio W/H, so that is the ratio that fits
    y = torch.rand(6, 3, 17, 23, generator=_gen(0))
    out = SimCLRAugment(**{**OFF, "crop_ratio": (23 / 17, 23 / 17)})(y, _gen(1))
    torch.testing.assert_close(out, y, atol=1e-5, rtol=0)


def test_greyscale_is_the_601_luma_on_three_channels():
    x = torch.rand(4, 3, 9, 9, generator=_gen(0))
    out = SimCLRAugment(**{**OFF, "p_gray": 1.0})(x, _gen(1))
    ref = _np_gray(x.double().numpy().transpose(1, 0, 2, 3))[0]
    for c in range(3):
        np.testing.assert_allclose(out[:, c].numpy(), ref, atol=1e-5)


def test_brightness_closed_form():
    x = torch.rand(3, 3, 5, 5, generator=_gen(0))
    f = torch.tensor([0.2, 1.0, 1.8])
    out = _adjust_brightness(x, f)
    ref = np.clip(x.numpy() * f.numpy()[:, None, None, None], 0, 1)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-6)
    assert (out[2] == 1.0).any()  # the clamp was exercised


def test_brightness_factors_are_uniform_on_the_torchvision_range():
    n = 2000
    x = 0.1 + 0.4 * torch.rand(n, 3, 4, 4, generator=_gen(0))  # ≤ 0.5: 1.8·x never clamps
    aug = SimCLRAugment(**{**OFF, "p_jitter": 1.0}, contrast=0, saturation=0, hue=0)
    out = aug(x, _gen(1))
    factor = (out.sum(dim=(1, 2, 3)) / x.sum(dim=(1, 2, 3))).double().numpy()
    np.testing.assert_allclose(out.numpy(), factor[:, None, None, None] * x.numpy(), atol=1e-5)
    assert stats.kstest(factor, stats.uniform(0.2, 1.6).cdf).pvalue > 1e-3


# ---------------------------------------------------------------- the resized crop
def test_resized_crop_against_numpy_bilinear():
    x = torch.rand(3, 3, 8, 12, generator=_gen(0), dtype=torch.float64)
    boxes = torch.tensor(
        [[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0], [0.55, 0.3, 0.45, 0.7]], dtype=torch.float64
    )
    out = _resized_crop(x, boxes).numpy()
    for i in range(3):
        np.testing.assert_allclose(out[i], _np_crop(x[i].numpy(), boxes[i].tolist()), atol=1e-12)


def test_crop_areas_and_positions_are_uniform_when_the_crop_always_fits():
    p = SimCLRAugment(crop_ratio=(1, 1)).sample_params(4096, 64, 64, _gen(0))
    x0, y0, w, h = p.box.T.numpy()
    np.testing.assert_allclose(w, h)
    assert stats.kstest(w * h, stats.uniform(0.08, 0.92).cdf).pvalue > 1e-3
    assert stats.kstest(x0 / (1 - w), stats.uniform().cdf).pvalue > 1e-3
    assert stats.kstest(y0 / (1 - h), stats.uniform().cdf).pvalue > 1e-3


def test_default_crops_fit_and_respect_the_ratio_range():
    p = SimCLRAugment().sample_params(4096, 32, 48, _gen(0))
    x0, y0, w, h = p.box.T.numpy()
    assert (x0 >= 0).all() and (y0 >= 0).all()
    assert (x0 + w <= 1 + 1e-12).all() and (y0 + h <= 1 + 1e-12).all()
    ratio = (w * 48) / (h * 32)  # in pixels
    assert (ratio >= 0.75 - 1e-9).all() and (ratio <= 4 / 3 + 1e-9).all()
    # the image's own ratio 1.5 exceeds 4/3, so at most (4/3)/1.5 of the area fits
    assert (w * h >= 0.08 - 1e-12).all()
    assert 0.85 < (w * h).max() <= (4 / 3) / 1.5 + 1e-12


def test_crop_fallback_is_torchvisions_centre_crop():
    # ratio 2 on a square image: w = √2 > 1 never fits → centred crop of full width, ratio 2
    p = SimCLRAugment(crop_scale=(1, 1), crop_ratio=(2, 2)).sample_params(5, 16, 16, _gen(0))
    want = torch.tensor([0.0, 0.25, 1.0, 0.5], dtype=torch.float64).expand(5, 4)
    torch.testing.assert_close(p.box, want)


# ---------------------------------------------------------------- the whole pipeline
def test_pipeline_equals_the_composition_of_numpy_references():
    aug = SimCLRAugment(p_jitter=0.75, p_gray=0.5)
    x = torch.rand(24, 3, 6, 7, generator=_gen(0), dtype=torch.float64)
    p = aug.sample_params(24, 6, 7, _gen(1))
    out = aug.apply(x, p).numpy()
    assert p.jitter.any() and (~p.jitter).any() and p.gray.any() and (~p.gray).any()
    for i in range(24):
        ref = _np_crop(x[i].numpy(), p.box[i].tolist())
        if p.jitter[i]:
            for op in p.order[i].tolist():
                ref = _np_op(ref, op, p.factors[i, op].item())
        if p.gray[i]:
            ref = np.repeat(_np_gray(ref), 3, axis=0)
        np.testing.assert_allclose(out[i], ref, atol=1e-10, err_msg=f"sample {i}")


def test_random_draws_have_the_configured_probabilities_and_ranges():
    n = 4096
    p = SimCLRAugment().sample_params(n, 64, 64, _gen(3))
    for flag, prob in ((p.jitter, 0.8), (p.gray, 0.2)):
        assert abs(flag.double().mean().item() - prob) < 4 * math.sqrt(prob * (1 - prob) / n)
    assert torch.equal(p.order.sort(dim=1).values, torch.arange(4).expand(n, 4))
    first = torch.bincount(p.order[:, 0], minlength=4).double() / n
    assert (first - 0.25).abs().max() < 4 * math.sqrt(0.25 * 0.75 / n)
    f = p.factors.numpy()
    for i in range(3):
        assert stats.kstest(f[:, i], stats.uniform(0.2, 1.6).cdf).pvalue > 1e-3
    assert stats.kstest(f[:, 3], stats.uniform(-0.2, 0.4).cdf).pvalue > 1e-3


def test_determinism_and_seed_dependence():
    aug = SimCLRAugment()
    x = torch.rand(8, 3, 16, 16, generator=_gen(0))
    a, b, c = aug(x, _gen(5)), aug(x, _gen(5)), aug(x, _gen(6))
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)
    assert a.shape == x.shape and a.dtype == x.dtype
    assert a.min() >= 0 and a.max() <= 1
    torch.manual_seed(9)
    d = aug(x)
    torch.manual_seed(9)
    assert torch.equal(d, aug(x))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "x, match",
    [
        (torch.rand(3, 8, 8), r"\(B, 3, H, W\)"),
        (torch.rand(2, 1, 8, 8), r"\(B, 3, H, W\)"),
        (torch.randint(0, 255, (2, 3, 8, 8), dtype=torch.uint8), "float"),
        (2.0 * torch.ones(2, 3, 8, 8), r"\[0, 1\]"),
        (torch.full((2, 3, 8, 8), float("nan")), r"\[0, 1\]"),
        (np.zeros((2, 3, 8, 8)), "torch.Tensor"),
    ],
)
def test_bad_input_is_a_config_error(x, match):
    with pytest.raises(ConfigError, match=match):
        SimCLRAugment()(x)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"crop_scale": (0.0, 1.0)}, "crop_scale"),
        ({"crop_scale": (0.5, 0.2)}, "crop_scale"),
        ({"crop_scale": 0.5}, "crop_scale"),
        ({"crop_ratio": (0.0, 1.0)}, "crop_ratio"),
        ({"brightness": -0.1}, "brightness"),
        ({"hue": 0.6}, "hue"),
        ({"p_jitter": 1.5}, "p_jitter"),
        ({"p_gray": -0.1}, "p_gray"),
    ],
)
def test_bad_parameters_are_config_errors(kwargs, name):
    with pytest.raises(ConfigError, match=name):
        SimCLRAugment(**kwargs)
