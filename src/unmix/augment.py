r"""SimCLR image augmentations (Chen et al. 2020), batched in torch.

Paper 000 (Appx A.3) builds the positive pairs of its "Augm." baseline on 3DIdent with SimCLR's
augmentations: a random resized crop followed by colour distortion (colour jitter with strength
:math:`s = 1`, i.e. brightness, contrast, saturation 0.8 and hue 0.2, applied with probability 0.8,
then random greyscale with probability 0.2). :class:`SimCLRAugment` implements these with
torchvision's semantics on a batch ``(B, 3, H, W)`` of float images in :math:`[0, 1]`, every sample
with its own random parameters, without PIL and without a Python loop over images.

Random resized crop
-------------------
Per sample, an area fraction :math:`a \sim U(\text{crop\_scale})` and a log aspect ratio
:math:`\log r \sim U(\log \text{crop\_ratio})` give the crop's width and height as fractions of
the image's width :math:`W` and height :math:`H` (so that the crop in pixels has area
:math:`aHW` and width/height ratio :math:`r`):

.. math:: w = \sqrt{a\,r\,H/W}, \qquad h = \sqrt{a\,W/(r\,H)}

(:math:`w = \sqrt{ar}`, :math:`h = \sqrt{a/r}` for square images). **When the crop does not
fit** (:math:`w > 1` or :math:`h > 1`) the draw is rejected and redrawn, up to 10 draws in all,
as in torchvision (vectorised: 10 candidates are drawn per sample and the first that fits is
taken, so accepted areas follow :math:`U(\text{crop\_scale})` conditioned on fitting). If none
fits, torchvision's fallback is used: the largest centred crop whose aspect ratio is clamped to
``crop_ratio`` (the whole image when the image's own ratio :math:`W/H` lies in ``crop_ratio``).
Unlike torchvision, sizes are continuous (no rounding to whole pixels). The top-left corner is
uniform over the positions that keep the crop inside the image. The crop is resized back to
:math:`H \times W` with ``affine_grid`` + ``grid_sample`` (bilinear, ``align_corners=False``,
border padding): output pixel :math:`j` samples the crop at fraction :math:`(j + 1/2)/W` of its
width. Crops are never larger than the image, so this always up-samples (no anti-aliasing needed).

Colour jitter (probability ``p_jitter`` per sample)
---------------------------------------------------
Factors per sample, as torchvision's ``ColorJitter``: brightness
:math:`b \sim U[\max(0, 1 - B), 1 + B]`, contrast :math:`c` and saturation :math:`s` likewise,
hue shift :math:`\delta \sim U[-H_{\max}, H_{\max}]`. The four operations are applied in a random
order drawn per sample (a uniform random permutation, as torchvision draws one per image); an
operation whose strength is 0 is skipped. With :math:`g(x) = 0.299R + 0.587G + 0.114B` (ITU-R
601-2 luma) each is followed by a clamp to :math:`[0, 1]`:

* brightness :math:`x \mapsto b\,x`;
* contrast :math:`x \mapsto c\,x + (1 - c)\,\bar g`, :math:`\bar g` the mean of :math:`g(x)` over
  the image's pixels;
* saturation :math:`x \mapsto s\,x + (1 - s)\,g(x)`;
* hue: convert to HSV (:func:`rgb_to_hsv`), :math:`h \mapsto (h + \delta) \bmod 1`, convert back
  (:func:`hsv_to_rgb`).

Greyscale (probability ``p_gray`` per sample)
---------------------------------------------
:math:`x \mapsto (g(x), g(x), g(x))`.

All randomness is drawn from the ``generator`` passed to ``__call__`` (the global torch generator
when it is ``None``), in a fixed order and amount per call, so equal generator states give equal
outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from unmix.errors import ConfigError
from unmix.render.sprites import hsv_to_rgb as _hsv_to_rgb_last

__all__ = ["SimCLRAugment", "hsv_to_rgb", "rgb_to_grayscale", "rgb_to_hsv"]

#: ITU-R 601-2 luma weights (R, G, B).
LUMA: tuple[float, float, float] = (0.299, 0.587, 0.114)

_CROP_TRIES = 10
_RANGE_TOL = 1e-2  # inputs may exceed [0, 1] by this much (then clamped); more is an error


def rgb_to_grayscale(x: torch.Tensor) -> torch.Tensor:
    """Luma :math:`0.299R + 0.587G + 0.114B` of ``(..., 3, H, W)`` → ``(..., 1, H, W)``."""
    r, g, b = x.unbind(dim=-3)
    return (LUMA[0] * r + LUMA[1] * g + LUMA[2] * b).unsqueeze(-3)


def rgb_to_hsv(x: torch.Tensor) -> torch.Tensor:
    r"""RGB → HSV, channels first: ``(..., 3, H, W)`` in :math:`[0, 1]` → ``(..., 3, H, W)``.

    :math:`v = \max(R, G, B)`, :math:`c = v - \min(R, G, B)`, :math:`s = c / v` (0 when
    :math:`v = 0`); hue :math:`h \in [0, 1)` is :math:`((G - B)/c \bmod 6)/6` when :math:`R` is
    the maximum, :math:`((B - R)/c + 2)/6` when :math:`G` is, else :math:`((R - G)/c + 4)/6`
    (ties resolved in the order R, G, B), and 0 for grey pixels (:math:`c = 0`) — the same
    convention as :func:`colorsys.rgb_to_hsv`.
    """
    h6, c, v = _hue_chroma_value(x)
    s = torch.where(v > 0, c / torch.where(v > 0, v, torch.ones_like(v)), torch.zeros_like(v))
    return torch.stack((h6 / 6.0, s, v), dim=-3)


def _hue_chroma_value(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hue in sixths of the wheel (``[0, 6)``), chroma ``max − min`` and value ``max``."""
    r, g, b = x.unbind(dim=-3)
    v = torch.maximum(torch.maximum(r, g), b)
    c = v - torch.minimum(torch.minimum(r, g), b)
    grey = c <= 0
    inv_c = 1.0 / torch.where(grey, torch.ones_like(c), c)
    h6 = torch.where(
        r == v,
        (g - b) * inv_c,
        torch.where(g == v, (b - r) * inv_c + 2.0, (r - g) * inv_c + 4.0),
    )
    h6 = torch.where(grey, torch.zeros_like(h6), torch.remainder(h6, 6.0))
    return h6, c, v


def hsv_to_rgb(x: torch.Tensor) -> torch.Tensor:
    r"""HSV → RGB, channels first: ``(..., 3, H, W)`` → ``(..., 3, H, W)``.

    The hexcone model of :func:`unmix.render.sprites.hsv_to_rgb` (hue taken modulo 1, identical
    to :func:`colorsys.hsv_to_rgb`), rearranged from channels-last to channels-first.
    """
    h, s, v = x.unbind(dim=-3)
    return _hsv_to_rgb_last(h, s, v).movedim(-1, -3)


def _per_image(f: torch.Tensor) -> torch.Tensor:
    return f.reshape(-1, 1, 1, 1)


def _adjust_brightness(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """``clamp(b·x, 0, 1)`` with one factor per image (``factor`` of shape ``(B,)``)."""
    return (x * _per_image(factor)).clamp(0.0, 1.0)


def _adjust_contrast(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """``clamp(c·x + (1 − c)·mean(luma(x)), 0, 1)``, the mean over each image's pixels."""
    c = _per_image(factor)
    mean = rgb_to_grayscale(x).mean(dim=(-3, -2, -1), keepdim=True)
    return (c * x + (1.0 - c) * mean).clamp(0.0, 1.0)


def _adjust_saturation(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """``clamp(s·x + (1 − s)·luma(x), 0, 1)`` per pixel."""
    s = _per_image(factor)
    return (s * x + (1.0 - s) * rgb_to_grayscale(x)).clamp(0.0, 1.0)


def _adjust_hue(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    r"""Rotate the hue by ``shift`` (a fraction of the colour wheel) per image.

    Equivalent to ``hsv_to_rgb`` of ``rgb_to_hsv(x)`` with :math:`h \mapsto (h + \delta) \bmod 1`,
    computed without :math:`s`: channel :math:`n_c = 5, 3, 1` is
    :math:`v - c\,\mathrm{clip}(\min(k_c, 4 - k_c), 0, 1)`, :math:`k_c = (n_c + 6h) \bmod 6`,
    with chroma :math:`c = v s`.
    """
    h6, c, v = _hue_chroma_value(x)
    h6 = h6 + 6.0 * shift.to(x.dtype).reshape(-1, *([1] * (h6.dim() - 1)))
    out = []
    for n in (5.0, 3.0, 1.0):
        k = torch.remainder(h6 + n, 6.0)
        out.append(v - c * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0))
    return torch.stack(out, dim=-3).clamp(0.0, 1.0)


_OPS = (_adjust_brightness, _adjust_contrast, _adjust_saturation, _adjust_hue)


def _resized_crop(x: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
    """Crop ``box = (x0, y0, w, h)`` (fractions of width/height, per sample) and resize to H×W."""
    x0, y0, w, h = box.to(x.dtype).unbind(dim=1)
    theta = torch.zeros(x.shape[0], 2, 3, dtype=x.dtype, device=x.device)
    theta[:, 0, 0] = w
    theta[:, 0, 2] = 2.0 * x0 + w - 1.0
    theta[:, 1, 1] = h
    theta[:, 1, 2] = 2.0 * y0 + h - 1.0
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


@dataclass(frozen=True)
class AugmentParams:
    """The random draws of one :class:`SimCLRAugment` call (``B`` samples).

    ``box``: ``(B, 4)`` crop ``(x0, y0, w, h)`` as fractions of the image width / height;
    ``jitter``: ``(B,)`` bool; ``factors``: ``(B, 4)`` brightness, contrast, saturation factors
    and hue shift; ``order``: ``(B, 4)`` a permutation of the operation indices 0–3 (in that
    order); ``gray``: ``(B,)`` bool.
    """

    box: torch.Tensor
    jitter: torch.Tensor
    factors: torch.Tensor
    order: torch.Tensor
    gray: torch.Tensor


def _pair(value, name: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"SimCLRAugment: {name} must be a pair (low, high) of numbers, got {value!r}."
        ) from None
    return lo, hi


def _number(value, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"SimCLRAugment: {name} must be a number, got {value!r}.") from None
    if not math.isfinite(out):
        raise ConfigError(f"SimCLRAugment: {name} must be finite, got {value!r}.")
    return out


class SimCLRAugment:
    """SimCLR random resized crop + colour distortion on ``(B, 3, H, W)`` batches in [0, 1].

    Call as ``aug(x, generator)``; see the module docstring for the exact semantics. The defaults
    are SimCLR's (colour strength 1) and paper 000's.
    """

    def __init__(
        self,
        crop_scale: Sequence[float] = (0.08, 1.0),
        crop_ratio: Sequence[float] = (3 / 4, 4 / 3),
        brightness: float = 0.8,
        contrast: float = 0.8,
        saturation: float = 0.8,
        hue: float = 0.2,
        p_jitter: float = 0.8,
        p_gray: float = 0.2,
    ) -> None:
        lo, hi = _pair(crop_scale, "crop_scale")
        if not (0.0 < lo <= hi <= 1.0):
            raise ConfigError(
                f"SimCLRAugment: crop_scale must satisfy 0 < low <= high <= 1 (area fractions), "
                f"got {tuple(crop_scale)}."
            )
        rlo, rhi = _pair(crop_ratio, "crop_ratio")
        if not (0.0 < rlo <= rhi < math.inf):
            raise ConfigError(
                f"SimCLRAugment: crop_ratio must satisfy 0 < low <= high (width/height), "
                f"got {tuple(crop_ratio)}."
            )
        self.crop_scale = (lo, hi)
        self.crop_ratio = (rlo, rhi)
        strengths = []
        for name, value in (
            ("brightness", brightness),
            ("contrast", contrast),
            ("saturation", saturation),
        ):
            v = _number(value, name)
            if v < 0:
                raise ConfigError(f"SimCLRAugment: {name} must be >= 0, got {value!r}.")
            strengths.append(v)
        h = _number(hue, "hue")
        if not 0.0 <= h <= 0.5:
            raise ConfigError(f"SimCLRAugment: hue must lie in [0, 0.5], got {hue!r}.")
        self.brightness, self.contrast, self.saturation = strengths
        self.hue = h
        for name, value in (("p_jitter", p_jitter), ("p_gray", p_gray)):
            p = _number(value, name)
            if not 0.0 <= p <= 1.0:
                raise ConfigError(
                    f"SimCLRAugment: {name} must be a probability in [0, 1], got {value!r}."
                )
        self.p_jitter = float(p_jitter)
        self.p_gray = float(p_gray)

    def __repr__(self) -> str:
        return (
            f"SimCLRAugment(crop_scale={self.crop_scale}, crop_ratio={self.crop_ratio}, "
            f"brightness={self.brightness}, contrast={self.contrast}, "
            f"saturation={self.saturation}, hue={self.hue}, p_jitter={self.p_jitter}, "
            f"p_gray={self.p_gray})"
        )

    # ------------------------------------------------------------------ sampling
    def sample_params(
        self,
        n: int,
        height: int,
        width: int,
        generator: torch.Generator | None = None,
    ) -> AugmentParams:
        """Draw the random parameters of ``n`` samples for ``height × width`` images (CPU, f64)."""
        device = generator.device if generator is not None else torch.device("cpu")

        def rand(*shape: int) -> torch.Tensor:
            return torch.rand(shape, generator=generator, device=device, dtype=torch.float64)

        lo, hi = self.crop_scale
        log_rlo, log_rhi = math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1])
        u = rand(n, _CROP_TRIES, 2)
        area = lo + (hi - lo) * u[..., 0]
        ratio = torch.exp(log_rlo + (log_rhi - log_rlo) * u[..., 1])
        aspect = height / width
        w_all = torch.sqrt(area * ratio * aspect)
        h_all = torch.sqrt(area / (ratio * aspect))
        fits = (w_all <= 1.0) & (h_all <= 1.0)
        first = fits.to(torch.int8).argmax(dim=1, keepdim=True)  # first fitting try (0 if none)
        w = w_all.gather(1, first).squeeze(1)
        h = h_all.gather(1, first).squeeze(1)
        # torchvision's fallback: a centred crop with the ratio clamped into crop_ratio
        in_ratio = width / height
        if in_ratio < self.crop_ratio[0]:
            w_fb, h_fb = 1.0, in_ratio / self.crop_ratio[0]
        elif in_ratio > self.crop_ratio[1]:
            w_fb, h_fb = self.crop_ratio[1] / in_ratio, 1.0
        else:
            w_fb, h_fb = 1.0, 1.0
        any_fit = fits.any(dim=1)
        w = torch.where(any_fit, w, torch.full_like(w, w_fb))
        h = torch.where(any_fit, h, torch.full_like(h, h_fb))
        pos = rand(n, 2)
        pos = torch.where(any_fit[:, None], pos, torch.full_like(pos, 0.5))
        box = torch.stack((pos[:, 0] * (1.0 - w), pos[:, 1] * (1.0 - h), w, h), dim=1)

        jitter = rand(n) < self.p_jitter
        f = rand(n, 4)
        factors = torch.empty_like(f)
        for i, strength in enumerate((self.brightness, self.contrast, self.saturation)):
            low = max(0.0, 1.0 - strength)
            factors[:, i] = low + (1.0 + strength - low) * f[:, i]
        factors[:, 3] = self.hue * (2.0 * f[:, 3] - 1.0)
        order = rand(n, 4).argsort(dim=1)
        gray = rand(n) < self.p_gray
        return AugmentParams(box=box, jitter=jitter, factors=factors, order=order, gray=gray)

    # ------------------------------------------------------------------ applying
    def apply(self, x: torch.Tensor, params: AugmentParams) -> torch.Tensor:
        """Apply drawn parameters to a validated batch ``x`` (``(B, 3, H, W)`` in [0, 1])."""
        dev = x.device
        out = _resized_crop(x, params.box.to(dev))
        jitter = params.jitter.to(dev)
        if bool(jitter.any()):
            factors = params.factors.to(device=dev, dtype=x.dtype)
            order = params.order.to(dev)
            strengths = (self.brightness, self.contrast, self.saturation, self.hue)
            active = [i for i, s in enumerate(strengths) if s > 0]
            for step in range(4):
                for op in active:
                    idx = (jitter & (order[:, step] == op)).nonzero().squeeze(1)
                    if idx.numel() == 0:
                        continue
                    out[idx] = _OPS[op](out[idx], factors[idx, op])
        gray = params.gray.to(dev)
        if bool(gray.any()):
            g = rgb_to_grayscale(out).expand_as(out)
            out = torch.where(gray.view(-1, 1, 1, 1), g, out)
        return out

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Augment ``x`` (``(B, 3, H, W)``, values in [0, 1]) → a new ``(B, 3, H, W)`` tensor."""
        x = self._check_input(x)
        if x.shape[0] == 0:
            return x.clone()
        params = self.sample_params(x.shape[0], x.shape[2], x.shape[3], generator)
        return self.apply(x, params)

    @staticmethod
    def _check_input(x) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise ConfigError(
                f"SimCLRAugment: x must be a torch.Tensor of shape (B, 3, H, W), "
                f"got {type(x).__name__}."
            )
        if x.dim() != 4 or x.shape[1] != 3:
            raise ConfigError(
                f"SimCLRAugment: x must be an RGB batch of shape (B, 3, H, W), got "
                f"{tuple(x.shape)}; add a batch dimension with x[None] or repeat a 1-channel "
                f"image to 3 channels."
            )
        if not x.is_floating_point():
            raise ConfigError(
                f"SimCLRAugment: x must be a float tensor with values in [0, 1], got dtype "
                f"{x.dtype}; convert with x.float() / 255."
            )
        if x.numel() == 0:
            return x
        lo, hi = torch.aminmax(x)
        lo, hi = float(lo), float(hi)
        if not (lo >= -_RANGE_TOL and hi <= 1.0 + _RANGE_TOL):
            raise ConfigError(
                f"SimCLRAugment: x must have values in [0, 1], got values in [{lo:.4g}, {hi:.4g}]"
                f"; rescale the images (e.g. x / 255) and remove NaNs."
            )
        return x.clamp(0.0, 1.0)
