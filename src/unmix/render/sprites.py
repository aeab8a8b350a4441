r"""Sprites: one anti-aliased shape on a black canvas (paper 004, Sec. 4.3).

The observation model of Reizinger et al. (2022, "Embrace the Gap", Sec. 4.3 and Fig. 5) is a
64×64 RGB image of a single triangle whose four latent factors are its x- and y-position, its size
and its colour (hue; saturation and value are 1). Each factor is a Beta variable
:math:`B_i \sim \mathrm{Beta}(\alpha_i, \beta_i)` mapped affinely onto the paper's ranges

.. math::

    x = 0.55\,B_x + 0.2,\qquad y = 0.55\,B_y + 0.2,\qquad
    \mathrm{scale} = 0.09\,B_s + 0.11,\qquad \mathrm{hue} = B_h,

with :math:`\alpha_i, \beta_i \sim U(2, 15)` drawn once per *data seed* (:class:`SpritesLatents`).

Conventions (all stated once, here):

* **Input** of :meth:`SpritesRenderer.render` is the vector of *B-values*
  :math:`b = (B_x, B_y, B_s, B_h) \in [0, 1]^4` — the unit-box latents a model should recover.
  The affine maps above are applied inside; :meth:`SpritesRenderer.to_physical` exposes them.
  With ``rotation=True`` a fifth factor :math:`B_r \in [0,1]` rotates the shape by
  :math:`2\pi B_r / k` where :math:`k` is the shape's rotational symmetry order (3 for the
  triangle, 4 for the square, 2 for the ellipse), so rotations in :math:`[0, 1)` are distinct.
* **Canvas coordinates** are fractions of the image side, origin at the *bottom-left*, y pointing
  up (as in spriteworld): the shape's centre lies at column :math:`x W` and row
  :math:`(1 - y) H` (rows counted from the top).
* **Scale** is the square root of the shape's area as a fraction of the image side, i.e. the
  shape covers :math:`\mathrm{scale}^2\,H W` pixels (spriteworld normalises every shape to unit
  area before scaling). The triangle is equilateral with a vertex pointing up; the square is
  axis-aligned; the ellipse has axis ratio 2:1 (long axis horizontal); the circle is a disc.
* **Colour** is :math:`\mathrm{HSV}(\mathrm{hue}, 1, 1)` (:func:`hsv_to_rgb`), the background is
  black, and pixel values are ``coverage × colour`` in :math:`[0, 1]`.
* **Anti-aliasing** (``antialias="coverage"``, the default) is an *analytic coverage*
  approximation of the box filter: for a straight edge at signed distance :math:`e` (in pixels,
  negative inside) from the pixel centre the coverage is the ramp :math:`\mathrm{clip}(1/2 - e,
  0, 1)` — exact for an edge parallel to the pixel grid. Polygons multiply the ramps of their
  edges (exact at the corners of an axis-aligned square); discs and ellipses use the ramp of
  the (first-order) distance to the curve. Against 16×16-point supersampling at 64×64 the
  per-pixel error is ≤ 0.12 (mean ≈ 0.017 over edge pixels) and the total area agrees within
  2 %. ``antialias="supersample"`` instead averages a ``k×k`` grid of sub-pixel point samples
  (``supersample=k``), and ``antialias="none"`` takes one point sample per pixel (hard edges).

Everything is plain batched torch (no Python loop over images), deterministic, and differentiable
almost everywhere in the factors with the coverage anti-aliasing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from unmix.distributions.beta import FactorizedBeta, random_beta_shapes
from unmix.errors import ConfigError

__all__ = [
    "SPRITES_FACTOR_NAMES",
    "SPRITES_SHAPES",
    "SpritesLatents",
    "SpritesRenderer",
    "as_factor_tensor",
    "hsv_to_rgb",
]

#: Factor order of :class:`SpritesRenderer` (``rotation`` only with ``rotation=True``).
SPRITES_FACTOR_NAMES: tuple[str, ...] = ("x", "y", "scale", "hue", "rotation")

#: Shapes :class:`SpritesRenderer` draws, with their rotational symmetry order k.
SPRITES_SHAPES: dict[str, int] = {"triangle": 3, "square": 4, "ellipse": 2, "circle": 0}

# Affine maps of the paper: value = slope * B + offset (paper 004, Sec. 4.3 / reference facts).
_SLOPE = (0.55, 0.55, 0.09, 1.0)
_OFFSET = (0.2, 0.2, 0.11, 0.0)

_ELLIPSE_RATIO = 2.0  # long / short semi-axis of the "ellipse" shape


def hsv_to_rgb(h: torch.Tensor, s: float | torch.Tensor = 1.0, v: float | torch.Tensor = 1.0):
    r"""HSV → RGB for hue :math:`h` (a fraction of the colour wheel, taken modulo 1).

    Channel :math:`c \in \{R, G, B\}` with offset :math:`n_c = 5, 3, 1` is
    :math:`v - v\,s\,\mathrm{clip}(\min(k_c, 4 - k_c), 0, 1)` where
    :math:`k_c = (n_c + 6h) \bmod 6` — the standard hexcone model, identical to
    :func:`colorsys.hsv_to_rgb` for :math:`h \in [0, 1)`. Returns ``(..., 3)``.
    """
    h = torch.as_tensor(h)
    s = torch.as_tensor(s, dtype=h.dtype, device=h.device)
    v = torch.as_tensor(v, dtype=h.dtype, device=h.device)
    n = torch.tensor([5.0, 3.0, 1.0], dtype=h.dtype, device=h.device)
    k = torch.remainder(n + 6.0 * h[..., None], 6.0)
    ramp = torch.clamp(torch.minimum(k, 4.0 - k), 0.0, 1.0)
    return v[..., None] - v[..., None] * s[..., None] * ramp


def as_factor_tensor(
    z, dim: int, owner: str, names: Sequence[str], low: float = 0.0, high: float = 1.0
) -> torch.Tensor:
    """Validate ``z`` as a float32 tensor of shape ``(..., dim)`` with entries in ``[low, high]``.

    Raises :class:`ConfigError` naming the renderer and the fix when the last dimension is not
    ``dim``, an entry is NaN/inf, or an entry lies outside ``[low, high]`` by more than 1e-5
    (entries within that tolerance are clipped).
    """
    if isinstance(z, np.ndarray) or not isinstance(z, torch.Tensor):
        try:
            z = torch.as_tensor(np.asarray(z, dtype=np.float32))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{owner}.render: factors must be a numeric array of shape (n, {dim}); "
                f"could not convert {type(z).__name__} ({exc})."
            ) from None
    if not z.is_floating_point():
        z = z.to(torch.float32)
    if z.ndim == 0 or z.shape[-1] != dim:
        raise ConfigError(
            f"{owner}.render: factors have shape {tuple(z.shape)}, but the last dimension must be "
            f"{dim} (the factors {', '.join(names)}); pass an array of shape (n, {dim})."
        )
    if not bool(torch.isfinite(z).all()):
        raise ConfigError(
            f"{owner}.render: factors contain NaN or inf; pass finite values in [{low}, {high}]."
        )
    tol = 1e-5
    lo_bad = z < low - tol
    hi_bad = z > high + tol
    if bool((lo_bad | hi_bad).any()):
        bad_cols = torch.nonzero((lo_bad | hi_bad).reshape(-1, dim).any(0)).flatten().tolist()
        col = bad_cols[0]
        vals = z.reshape(-1, dim)[:, col]
        raise ConfigError(
            f"{owner}.render: factor {col} ('{names[col]}') has values in "
            f"[{float(vals.min()):.4g}, {float(vals.max()):.4g}], outside the unit interval "
            f"[{low}, {high}] the renderer expects; rescale the factors to [{low}, {high}] "
            "(the renderer maps them onto physical ranges itself)."
        )
    return z.to(torch.float32).clamp(low, high)


def _trig(fn, x: torch.Tensor) -> torch.Tensor:
    """``fn(x)`` evaluated in float64 and rounded to float32.

    Vectorised and scalar code paths of torch's float32 sin/cos can differ by an ulp, so an
    image would depend on its position in the batch; rounding the float64 value removes that.
    """
    return fn(x.double()).float()


def _check_size(size, owner: str) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise ConfigError(f"{owner}: size must be an integer number of pixels, got {size!r}.")
    if size < 8:
        raise ConfigError(f"{owner}: size must be at least 8 pixels, got {size}; use size >= 8.")
    return int(size)


class SpritesRenderer:
    r"""Batched, deterministic renderer of one shape on black (paper 004, Sec. 4.3).

    Parameters
    ----------
    size:
        Image side :math:`H = W` in pixels (≥ 8; the paper uses 64).
    shape:
        ``"triangle"`` (default, as in the paper), ``"square"``, ``"ellipse"`` or ``"circle"``.
    antialias:
        ``"coverage"`` (analytic signed-distance coverage, default), ``"supersample"`` or
        ``"none"``; see the module docstring.
    supersample:
        Sub-samples per pixel side for ``antialias="supersample"`` (≥ 1).
    rotation:
        If True the renderer takes a fifth factor, the rotation (see the module docstring).
    hue_span:
        Fraction of the colour wheel the hue factor sweeps: hue = ``hue_span``·B. The paper's
        1.0 (default) makes B = 0 and B = 1 the same red, so the map is injective only on
        [0, 1); e.g. 0.9 removes that wrap-around.

    ``render(b)`` maps B-values of shape ``(..., 4)`` (or ``(..., 5)``) in :math:`[0, 1]` to a
    float32 image tensor ``(..., 3, H, W)`` in :math:`[0, 1]`.
    """

    def __init__(
        self,
        size: int = 64,
        shape: str = "triangle",
        antialias: Literal["coverage", "supersample", "none"] = "coverage",
        supersample: int = 4,
        rotation: bool = False,
        hue_span: float = 1.0,
    ) -> None:
        owner = "SpritesRenderer"
        self.size = _check_size(size, owner)
        if shape not in SPRITES_SHAPES:
            raise ConfigError(
                f"{owner}: shape {shape!r} is unknown; choose one of {sorted(SPRITES_SHAPES)}."
            )
        if antialias not in ("coverage", "supersample", "none"):
            raise ConfigError(
                f"{owner}: antialias {antialias!r} is unknown; choose 'coverage', "
                "'supersample' or 'none'."
            )
        if isinstance(supersample, bool) or not isinstance(supersample, int) or supersample < 1:
            raise ConfigError(f"{owner}: supersample must be an integer >= 1, got {supersample!r}.")
        if rotation and SPRITES_SHAPES[shape] == 0:
            raise ConfigError(
                f"{owner}: shape 'circle' is rotation-invariant, so rotation=True would make the "
                "rotation factor invisible; use rotation=False or another shape."
            )
        if not isinstance(hue_span, int | float) or not 0.0 < float(hue_span) <= 1.0:
            raise ConfigError(
                f"{owner}: hue_span must be in (0, 1] (the fraction of the colour wheel the hue "
                f"factor sweeps), got {hue_span!r}."
            )
        self.hue_span = float(hue_span)
        self.shape = shape
        self.antialias = antialias
        self.supersample = supersample if antialias == "supersample" else 1
        self.rotation = bool(rotation)
        self.n_factors = 5 if rotation else 4
        self.factor_names = SPRITES_FACTOR_NAMES[: self.n_factors]

    # ------------------------------------------------------------------ factor maps
    def factor_ranges(self) -> torch.Tensor:
        """Physical range ``[low, high]`` of each factor, shape ``(n_factors, 2)``.

        x, y: [0.2, 0.75] (fractions of the image side); scale: [0.11, 0.20]; hue: [0, hue_span]
        (fraction of the colour wheel); rotation (if enabled): [0, 2π/k] radians.
        """
        rows = [[o, o + s] for s, o in zip(_SLOPE, _OFFSET, strict=True)]
        rows[3][1] = self.hue_span
        if self.rotation:
            rows.append([0.0, 2 * math.pi / SPRITES_SHAPES[self.shape]])
        return torch.tensor(rows, dtype=torch.float32)

    def to_physical(self, b) -> torch.Tensor:
        """Map B-values ``(..., n_factors)`` in [0, 1] to physical values (affine, see above)."""
        b = as_factor_tensor(b, self.n_factors, "SpritesRenderer", self.factor_names)
        r = self.factor_ranges().to(b.device)
        return r[:, 0] + b * (r[:, 1] - r[:, 0])

    # ------------------------------------------------------------------ rendering
    def __call__(self, b) -> torch.Tensor:
        return self.render(b)

    def render(self, b) -> torch.Tensor:
        """Render B-values ``(..., n_factors)`` in [0, 1] → float32 ``(..., 3, H, W)`` in [0, 1]."""
        b = as_factor_tensor(b, self.n_factors, "SpritesRenderer", self.factor_names)
        lead = b.shape[:-1]
        phys = self.to_physical(b.reshape(-1, self.n_factors))
        cov = self.coverage_physical(phys)
        rgb = hsv_to_rgb(phys[:, 3])  # (n, 3)
        img = cov[:, None, :, :] * rgb[:, :, None, None]
        return img.reshape(*lead, 3, self.size, self.size)

    def coverage_physical(self, phys: torch.Tensor) -> torch.Tensor:
        """Coverage ``(n, H, W)`` in [0, 1] of the shape for physical factors ``(n, n_factors)``."""
        k = self.supersample
        if k == 1:
            return self._coverage(phys, self._grid(1, phys))
        grid = self._grid(k, phys)
        chunk = max(1, (1 << 22) // (self.size * k) ** 2)  # bound the (n, kH, kW) buffer
        parts = []
        for i in range(0, phys.shape[0], chunk):
            cov = self._coverage(phys[i : i + chunk], grid)  # (m, kH, kW) point samples
            parts.append(cov.reshape(-1, self.size, k, self.size, k).mean(dim=(2, 4)))
        if not parts:
            return phys.new_zeros(0, self.size, self.size)
        return torch.cat(parts)

    def _grid(self, k: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample positions in pixel units, y up: u (1, 1, kW) and v (1, kH, 1)."""
        m = self.size * k
        c = (torch.arange(m, dtype=torch.float32, device=like.device) + 0.5) / k
        return c.view(1, 1, m), (self.size - c).view(1, m, 1)

    def _coverage(self, phys: torch.Tensor, grid) -> torch.Tensor:
        """Coverage at the grid points: ramps of signed distances (coverage) or indicators."""
        u, v = grid
        H = self.size
        n = phys.shape[0]
        cx = (phys[:, 0] * H).view(n, 1, 1)
        cy = (phys[:, 1] * H).view(n, 1, 1)
        s = phys[:, 2] * H  # sqrt(area) in pixels, (n,)
        rot = phys[:, 4] if self.rotation else torch.zeros_like(s)
        dx = u - cx  # (n, 1, W)
        dy = v - cy  # (n, H, 1)
        kind = self.shape
        coverage = self.antialias == "coverage"
        if kind in ("triangle", "square"):
            sides = SPRITES_SHAPES[kind]
            theta0 = math.pi / 2 if kind == "triangle" else math.pi / 4  # first vertex angle
            area1 = 0.5 * sides * math.sin(2 * math.pi / sides)  # area at circumradius 1
            apothem = (s / math.sqrt(area1) * math.cos(math.pi / sides)).view(n, 1, 1)
            out = None
            for i in range(sides):
                ang = theta0 + math.pi / sides + 2 * math.pi * i / sides + rot  # edge normal
                # float64 trig rounded to float32: batch-independent (see _trig)
                e = dx * _trig(torch.cos, ang).view(n, 1, 1) + dy * _trig(torch.sin, ang).view(
                    n, 1, 1
                )
                e = e - apothem  # signed distance to edge i's line
                # coverage: product of the half-planes' ramps; point samples: all inside
                c = torch.clamp(0.5 - e, 0.0, 1.0) if coverage else e < 0
                out = c if out is None else out * c
            return out.to(torch.float32)
        if kind == "circle":
            r = (s / math.sqrt(math.pi)).view(n, 1, 1)
            d = torch.sqrt(dx * dx + dy * dy) - r
        else:  # ellipse, area pi*a*b = s^2 with a = ratio * b
            bsemi = (s / math.sqrt(math.pi * _ELLIPSE_RATIO)).view(n, 1, 1)
            asemi = _ELLIPSE_RATIO * bsemi
            c, sn = _trig(torch.cos, rot).view(n, 1, 1), _trig(torch.sin, rot).view(n, 1, 1)
            qx = dx * c + dy * sn  # rotate into the ellipse frame
            qy = dy * c - dx * sn
            # g = |(qx/a, qy/b)| - 1 has the ellipse as zero set; distance ≈ g / |grad g|
            rho = torch.sqrt((qx / asemi) ** 2 + (qy / bsemi) ** 2)
            grad = torch.sqrt((qx / asemi**2) ** 2 + (qy / bsemi**2) ** 2)
            d = (rho - 1.0) * rho / grad.clamp_min(1e-12)
        if coverage:
            return torch.clamp(0.5 - d, 0.0, 1.0)
        return (d < 0).to(torch.float32)


class SpritesLatents:
    r"""The Beta ground-truth distribution of the Sprites factors for one data seed.

    The data seed fixes :math:`\alpha_i, \beta_i \sim U(2, 15)` for each factor :math:`i`
    (paper 004, Sec. 4.3): with ``g = torch.Generator().manual_seed(seed)`` the renderer draws
    ``u = torch.rand(2, n_factors, generator=g, dtype=float64)`` and sets
    ``alpha = 2 + 13 u[0]``, ``beta = 2 + 13 u[1]``. Samples are
    :math:`B_i \sim \mathrm{Beta}(\alpha_i, \beta_i)` independently per factor, drawn by the
    exact inverse CDF :math:`B = I^{-1}_{\alpha,\beta}(U)` of :math:`U \sim U(0, 1)`
    (``scipy.special.betaincinv``, float64), so a ``torch.Generator`` makes them reproducible.

    Parameters
    ----------
    seed:
        The data seed (a non-negative integer).
    n_factors:
        4 (x, y, scale, hue) or 5 (with rotation).
    """

    def __init__(self, seed: int, n_factors: int = 4) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ConfigError(f"SpritesLatents: seed must be a non-negative integer, got {seed!r}.")
        if n_factors not in (4, 5):
            raise ConfigError(
                f"SpritesLatents: n_factors must be 4 or 5 (with rotation), got {n_factors!r}."
            )
        self.seed = int(seed)
        self.n_factors = n_factors
        self.alpha, self.beta = random_beta_shapes(self.seed, n_factors, 2.0, 15.0)
        self.distribution = FactorizedBeta(self.alpha, self.beta)

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw ``n`` B-vectors, float32 ``(n, n_factors)`` in (0, 1)."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise ConfigError(
                f"SpritesLatents.sample: n must be a non-negative integer, got {n!r}."
            )
        return self.distribution.sample((int(n),), generator=generator)

    def log_prob(self, b: torch.Tensor) -> torch.Tensor:
        r"""Sum over factors of :math:`\log \mathrm{Beta}(b_i; \alpha_i, \beta_i)`: ``(...)``,
        float64."""
        b = torch.as_tensor(b, dtype=torch.float64)
        return torch.distributions.Beta(self.alpha, self.beta).log_prob(b).sum(-1)

    def __repr__(self) -> str:
        a = ", ".join(f"{x:.3f}" for x in self.alpha.tolist())
        bb = ", ".join(f"{x:.3f}" for x in self.beta.tolist())
        return f"SpritesLatents(seed={self.seed}, alpha=[{a}], beta=[{bb}])"
