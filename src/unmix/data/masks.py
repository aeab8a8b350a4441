r"""Mask sequences: pedestrian-like silhouettes whose latents move with sparse transitions.

A stand-in for KITTI Masks (Klindt et al. 2021) generated on the spot, so that paper 000's
Table 3 runs without the authors' file. Every frame is a 64×64 (or ``image_size``) mask of one
figure — an elliptic body, a round head and two leg strokes — drawn with anti-aliased edges
(coverage of each pixel from a signed distance, or thresholded at 1/2 with ``binary=True``).

Latents (unit box, one row per frame)
-------------------------------------
``x`` (horizontal centre), ``y`` (vertical centre), ``scale`` (figure height; its area grows as
``scale``'s square) and, with ``dim=4``, ``aspect`` (width/height). Pixel geometry, as fractions
of the image side: centre ``(0.15 + 0.7 x, 0.25 + 0.5 y)``, height ``h = 0.25 + 0.45 scale``,
width ``w = h (0.3 + 0.15 aspect)`` (``aspect = 1/2`` when it is not a latent). The legs swing
with a gait phase that advances with the horizontal distance walked — a nuisance that is a
function of the path, not a latent (real pedestrians' limbs move too).

Transitions (what the data is for)
----------------------------------
Each sequence starts at ``u_0 ~ U(0, 1)^d`` and moves by independent steps per frame and
coordinate, :math:`u_{t+1} = \operatorname{reflect}(u_t + \Delta_t)` with
:math:`\Delta_{t,i} \sim \mathrm{GenLaplace}(\alpha_i, s_i)`, density
:math:`\propto \exp(-|\Delta/s_i|^{\alpha_i})`, and reflection at the box's faces. Klindt et al.
(2021) find that objects in segmented natural movies undergo "transitions that are typically small
in magnitude with occasional large jumps" (their abstract). Their data analysis
(``bethgelab/slow_disentanglement``, ``data_analysis/data_analysis_both.ipynb``, whose saved
outputs hold ``scipy.stats.gennorm.fit`` of the 82,506 frame-to-frame changes of KITTI Masks at
64 px, built by ``data_generation/gen_kitti_masks.py``) gives shape / scale (loc aside):
x 0.587 / 0.169 px, y 0.694 / 0.232 px, area 0.455 / 1.01 px² (kurtosis 38.5, 65.4, 68.9).
The defaults take those shapes and convert the scales into unit-box units with this renderer's
pixel geometry at 64 px (below): 44.8 px per unit of x, 32 px per unit of y, and an area that
grows by ≈ 468 px² per unit of ``scale`` at its middle (266–665 px² across the box):

* :data:`TRANSITION_ALPHA` = (0.587, 0.694, 0.455, 0.6) per latent;
* :data:`TRANSITION_SCALES` = (0.00377, 0.00725, 0.00216, 0.003) per frame, in unit-box units.

The fourth (``aspect``, ``dim=4`` only) has no KITTI statistic: its 0.6 / 0.003 are unmix's
assumptions. A single float ``alpha`` gives every latent the same shape (until 2026-12 the
defaults were unmix's guesses, α = 0.6 and s = 0.006, 0.003, 0.004, 0.003).

Frames are nominally 10 fps (KITTI's rate). Positive pairs use the rule of the slowVAE / cl-ica
loaders (:meth:`FrameSequences.pairs`): an anchor at frame ``t`` (not the last of its sequence)
and the frame ``min(t + k, T - 1)`` with ``k ~ U{1, …, max_delta_t}``.

Nuisances and measured latents (options, off by default)
--------------------------------------------------------
KITTI Masks holds many different pedestrians, segmented with noise, as binary masks whose
latents were *measured* from each mask (centre of mass and area; the authors'
``gen_kitti_masks.py``). :func:`mask_sequences` can draw each sequence's own figure
(``shape_jitter``), fray every frame's outline (``edge_noise``), threshold the masks
(``binary``) and score against the measured centre of mass and area (``latents="measured"``).
None of them changes the default data; docs/table3.md has what they did to Table 3's orderings.

Δt̄ → frame gap (an assumption, the same for both data sets)
-----------------------------------------------------------
Paper 000's Table 3 labels its two KITTI settings by the mean gap Δt̄ = 0.05 s and 0.15 s but does
not give the loader's ``max_delta_t``. unmix maps Δt̄ = 0.05 s → ``max_delta_t = 1`` (cl-ica's
``--kitti-max-delta-t`` default) and Δt̄ = 0.15 s → ``max_delta_t = 5`` (the slowVAE loader's
default): their mean gaps, 1 and ≈ 3 frames, stand in the paper's ratio of 1 : 3 and equal the
paper's seconds at 0.05 s per frame. At KITTI's 10 fps the same gaps are 0.1 s and ≈ 0.3 s, so
the paper's labels and the 10 fps frame rate do not fit together exactly under any gap ≥ 1 frame
with this rule; unmix records ``max_delta_t`` with every run (:data:`DELTA_T_GAPS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from unmix.data.store import ImageDataset, as_index_array
from unmix.errors import ConfigError

__all__ = [
    "DELTA_T_GAPS",
    "FrameSequences",
    "MASK_FACTOR_NAMES",
    "MEASURED_NAMES",
    "SHAPE_PARTS",
    "TRANSITION_ALPHA",
    "TRANSITION_SCALES",
    "gen_laplace_steps",
    "mask_sequences",
    "measure_masks",
    "random_walk",
    "render_silhouettes",
]

MASK_FACTOR_NAMES: tuple[str, ...] = ("x", "y", "scale", "aspect")
MEASURED_NAMES: tuple[str, ...] = ("com_x", "com_y", "area")
TRANSITION_ALPHA: tuple[float, ...] = (0.587, 0.694, 0.455, 0.6)
TRANSITION_SCALES: tuple[float, ...] = (0.00377, 0.00725, 0.00216, 0.003)
FPS = 10.0
DELTA_T_GAPS: dict[float, int] = {0.05: 1, 0.15: 5}
"""Paper 000's Table 3 Δt̄ (seconds) → ``max_delta_t`` (frames), unmix's mapping (module doc)."""


def gen_laplace_steps(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    alpha: float | np.ndarray,
    scale: np.ndarray,
) -> np.ndarray:
    r"""Generalised-Laplace draws :math:`s\cdot\operatorname{sign}\cdot G^{1/\alpha}`,
    :math:`G \sim \Gamma(1/\alpha, 1)` — density :math:`\propto \exp(-|x/s|^\alpha)`;
    ``alpha`` and ``scale`` broadcast over the last axis."""
    alpha = np.asarray(alpha, dtype=np.float64)
    g = rng.gamma(1.0 / alpha, 1.0, size=shape)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return sign * g ** (1.0 / alpha) * np.asarray(scale, dtype=np.float64)


def _reflect(u: np.ndarray) -> np.ndarray:
    """Fold values onto [0, 1] by reflection at 0 and 1 (any distance outside)."""
    v = np.mod(u, 2.0)
    return np.where(v > 1.0, 2.0 - v, v)


def random_walk(
    rng: np.random.Generator,
    n_sequences: int,
    length: int,
    dim: int = 3,
    alpha: float | Sequence[float] = TRANSITION_ALPHA,
    scales: Sequence[float] = TRANSITION_SCALES,
) -> np.ndarray:
    """``(n_sequences, length, dim)`` latents in the unit box: uniform start, generalised-Laplace
    steps per frame and coordinate, reflected into the box (module docstring). ``alpha``: one
    shape for every latent or one per latent (the first ``dim`` are used)."""
    shapes = np.asarray(alpha, dtype=np.float64)
    if shapes.ndim == 1:
        shapes = shapes[:dim]
    if (shapes.ndim == 1 and shapes.shape != (dim,)) or shapes.ndim > 1:
        raise ConfigError(f"alpha needs one shape or {dim} (one per latent), got {alpha}")
    if not np.all((shapes > 0) & (shapes <= 2)):
        raise ConfigError(f"alpha must be in (0, 2], got {alpha}")
    scale = np.asarray(scales[:dim], dtype=np.float64)
    if scale.shape != (dim,) or not np.all(scale > 0):
        raise ConfigError(f"need {dim} positive step scales, got {list(scales)}")
    start = rng.random((n_sequences, 1, dim))
    steps = gen_laplace_steps(rng, (n_sequences, length - 1, dim), shapes, scale)
    out = np.empty((n_sequences, length, dim))
    out[:, :1] = start
    u = start[:, 0]
    for t in range(1, length):
        u = _reflect(u + steps[:, t - 1])
        out[:, t] = u
    return out


def _capsule_distance(px, py, ax, ay, bx, by, radius):
    """Signed distance (pixels) to a segment a–b of half-width ``radius``; arrays broadcast."""
    vx, vy = bx - ax, by - ay
    wx, wy = px - ax, py - ay
    t = np.clip((wx * vx + wy * vy) / np.maximum(vx * vx + vy * vy, 1e-9), 0.0, 1.0)
    return np.hypot(wx - t * vx, wy - t * vy) - radius


SHAPE_PARTS: tuple[str, ...] = ("body_width", "body_height", "head", "legs")
"""The figure's proportions that ``shape`` (of :func:`render_silhouettes`) scales, in order."""


def render_silhouettes(
    latents: np.ndarray,
    gait: np.ndarray,
    image_size: int = 64,
    binary: bool = False,
    shape: np.ndarray | None = None,
    edge_noise: np.ndarray | None = None,
    anchor: str = "centre",
) -> np.ndarray:
    """uint8 masks ``(B, S, S)`` (255 = figure) of latents ``(B, 3 or 4)`` in the unit box and a
    gait phase ``(B,)`` in radians (module docstring for the geometry).

    ``shape`` ``(B, 4)``: positive factors on the body's width and height, the head's radius and
    the legs' length and thickness (:data:`SHAPE_PARTS`; all ones = the template). ``edge_noise``
    ``(B, S, S)``: added to the signed distance in pixels before the coverage is taken, so it
    frays the outline and leaves the inside and outside alone.

    ``anchor``: where ``y`` places the figure. ``"centre"`` (default): the figure's centre, and
    ``scale`` grows it about that centre. ``"feet"``: ``y`` places the foot line (where the figure
    stands; at ``scale = 1/2`` the two agree), and ``scale`` grows the figure upwards from it, so a
    change of ``scale`` also moves the figure's centre (a tall figure at ``y`` near 0 is cut off at
    the top edge)."""
    lat = np.asarray(latents, dtype=np.float64)
    if lat.ndim != 2 or lat.shape[1] not in (3, 4):
        raise ConfigError(f"latents must be (B, 3) or (B, 4), got {lat.shape}")
    s = float(image_size)
    b = lat.shape[0]
    if shape is None:
        shape = np.ones((b, len(SHAPE_PARTS)))
    shape = np.asarray(shape, dtype=np.float64)
    if shape.shape != (b, len(SHAPE_PARTS)) or not np.all(shape > 0):
        raise ConfigError(f"shape must be positive, (B, 4) = ({b}, 4), got {shape.shape}")
    f_w, f_h, f_head, f_legs = (shape[:, i] for i in range(len(SHAPE_PARTS)))
    aspect = lat[:, 3] if lat.shape[1] == 4 else np.full(b, 0.5)
    cx = (0.15 + 0.7 * lat[:, 0]) * s
    if anchor not in ("centre", "feet"):
        raise ConfigError(f"anchor must be 'centre' or 'feet', got {anchor!r}")
    cy = (0.25 + 0.5 * lat[:, 1]) * s
    h = (0.25 + 0.45 * lat[:, 2]) * s
    if anchor == "feet":  # the foot line cy + h/2 is that of the centre at scale 1/2 (h = 0.475 s)
        cy = cy - 0.5 * (h - 0.475 * s)
    w = h * (0.3 + 0.15 * aspect)
    col = np.arange(image_size, dtype=np.float64) + 0.5
    px = col[None, None, :]
    py = col[None, :, None]

    def per(v):
        return v[:, None, None]

    # body: ellipse (approximate signed distance, exact on the axes)
    ea, eb = per(0.5 * w * f_w), per(0.28 * h * f_h)
    ex, ey = per(cx), per(cy - 0.05 * h)
    rho = np.hypot((px - ex) / ea, (py - ey) / eb)
    d = (rho - 1.0) * np.minimum(ea, eb)
    # head: circle
    d = np.minimum(d, np.hypot(px - per(cx), py - per(cy - 0.40 * h)) - per(0.11 * h * f_head))
    # legs: two strokes from the hips, swinging opposite to each other with the gait phase
    swing = 0.35 * w * np.sin(gait)
    # the legs' length (0.38 h from the hip) scales about the hip; written as the template's foot
    # line plus a change that is exactly 0 at f_legs = 1, so the template stays bit for bit
    foot_y = cy + 0.5 * h + 0.38 * h * (f_legs - 1.0)
    for side in (-1.0, 1.0):
        hip_x = cx + side * 0.18 * w * f_w
        foot_x = hip_x + side * swing
        d = np.minimum(
            d,
            _capsule_distance(
                px,
                py,
                per(hip_x),
                per(cy + 0.12 * h),
                per(foot_x),
                per(foot_y),
                per(np.maximum(0.05 * h * f_legs, 0.6)),
            ),
        )
    if edge_noise is not None:
        noise = np.asarray(edge_noise, dtype=np.float64)
        if noise.shape != d.shape:
            raise ConfigError(f"edge_noise must have shape {d.shape}, got {noise.shape}")
        d = d + noise
    cover = np.clip(0.5 - d, 0.0, 1.0)
    if binary:
        cover = (cover >= 0.5).astype(np.float64)
    return np.round(cover * 255.0).astype(np.uint8)


class FrameSequences(ImageDataset):
    """Frames of S sequences with latents and temporal positive pairs (``positives:
    next_frame``).

    ``masks``: uint8 ``(N, H, W)`` (255 = figure), ``latents``: ``(N, d)``, ``lengths``: frames per
    sequence, in order (sequence 0's frames first). ``images(idx)`` gives float32
    ``(B, 1, H, W)`` in [0, 1]; :meth:`pairs` draws (anchor, positive) frame indices by the
    forward rule of the module docstring."""

    def __init__(
        self,
        masks: np.ndarray,
        latents: np.ndarray | torch.Tensor,
        lengths: Sequence[int],
        max_delta_t: int = 1,
        factor_names: Sequence[str] | None = None,
    ) -> None:
        if isinstance(max_delta_t, bool) or not isinstance(max_delta_t, int) or max_delta_t < 1:
            raise ConfigError(f"max_delta_t must be an integer ≥ 1, got {max_delta_t!r}.")
        self._masks = np.ascontiguousarray(masks, dtype=np.uint8)
        self.latents = torch.as_tensor(np.asarray(latents, dtype=np.float32))
        self.seq_len = torch.tensor([int(n) for n in lengths], dtype=torch.int64)
        n = int(self.seq_len.sum())
        if self._masks.ndim != 3 or self._masks.shape[0] != n or self.latents.shape[0] != n:
            raise ConfigError(
                f"masks {self._masks.shape} and latents {tuple(self.latents.shape)} must both "
                f"hold the {n} frames the sequence lengths add up to"
            )
        self.max_delta_t = max_delta_t
        self.factor_names = list(factor_names) if factor_names is not None else None
        self.seq_start = torch.cumsum(self.seq_len, 0) - self.seq_len
        self.sequence = torch.repeat_interleave(torch.arange(len(self.seq_len)), self.seq_len)
        self.frame = torch.arange(n) - self.seq_start[self.sequence]
        self._last = (self.seq_start + self.seq_len - 1)[self.sequence]
        self._anchors = torch.nonzero(self.frame < self.seq_len[self.sequence] - 1).reshape(-1)
        if self._anchors.numel() == 0:
            raise ConfigError("no sequence has 2 or more frames, so no positive pairs exist")

    def __len__(self) -> int:
        return int(self._masks.shape[0])

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return (1, int(self._masks.shape[1]), int(self._masks.shape[2]))

    @property
    def n_sequences(self) -> int:
        return int(self.seq_len.numel())

    def images(self, idx) -> torch.Tensor:
        index = as_index_array(idx, len(self))
        return torch.from_numpy(self._masks[index]).unsqueeze(1).to(torch.float32).div_(255.0)

    def pairs(
        self, batch_size: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch_size`` (anchor, positive) int64 index pairs on the CPU: the anchor uniform over
        frames that are not the last of their sequence, the positive ``min(t + k, T - 1)``,
        ``k ~ U{1, …, max_delta_t}`` (drawn on the generator's device)."""
        dev = generator.device if generator is not None else torch.device("cpu")
        pick = torch.randint(len(self._anchors), (batch_size,), generator=generator, device=dev)
        k = torch.randint(1, self.max_delta_t + 1, (batch_size,), generator=generator, device=dev)
        anchor = self._anchors[pick.cpu()]
        positive = torch.minimum(anchor + k.cpu(), self._last[anchor])
        return anchor, positive

    def subset(self, sequences: Sequence[int]) -> FrameSequences:
        """The frames of the given sequences (in that order), same pair rule."""
        seqs = [int(s) for s in sequences]
        idx = np.concatenate(
            [
                np.arange(int(self.seq_start[s]), int(self.seq_start[s] + self.seq_len[s]))
                for s in seqs
            ]
        )
        return FrameSequences(
            self._masks[idx],
            self.latents[torch.from_numpy(idx)],
            [int(self.seq_len[s]) for s in seqs],
            self.max_delta_t,
            self.factor_names,
        )

    def mean_gap(self) -> float:
        """The exact mean frame gap of :meth:`pairs` (over anchors and k)."""
        t = self.frame[self._anchors].double()
        room = (self.seq_len[self.sequence[self._anchors]] - 1).double() - t
        ks = torch.arange(1, self.max_delta_t + 1, dtype=torch.float64)
        return float(torch.minimum(ks[None, :], room[:, None]).mean())

    def __repr__(self) -> str:
        return (
            f"FrameSequences(n={len(self)}, sequences={self.n_sequences}, "
            f"max_delta_t={self.max_delta_t})"
        )


def mask_sequences(
    rng: np.random.Generator,
    n_frames: int,
    frames_per_sequence: int = 50,
    dim: int = 3,
    image_size: int = 64,
    max_delta_t: int = 1,
    alpha: float | Sequence[float] = TRANSITION_ALPHA,
    scales: Sequence[float] = TRANSITION_SCALES,
    binary: bool = False,
    stride: float = 0.12,
    shape_jitter: float = 0.0,
    edge_noise: float = 0.0,
    latents: str = "generative",
    anchor: str = "centre",
) -> FrameSequences:
    r"""``n_frames`` frames in sequences of ``frames_per_sequence`` (the last one shorter if need
    be): latents by :func:`random_walk`, masks by :func:`render_silhouettes`. The gait phase
    advances by 2π per ``stride`` of horizontal distance (unit-box units).

    Nuisances (both off by default; they draw nothing from ``rng`` when zero, so the default
    data stay as they were): ``shape_jitter`` = j gives each *sequence* its own figure, every
    proportion of :data:`SHAPE_PARTS` scaled by :math:`e^{j z}`, :math:`z \sim N(0, 1)` —
    different pedestrians, fixed along a sequence; ``edge_noise`` = σ adds independent
    :math:`N(0, σ^2)` pixel noise (in pixels) to the signed distance of every *frame*, a ragged
    outline like a segmentation's.

    ``latents``: ``"generative"`` (the walk's x, y, scale[, aspect]) or ``"measured"`` — what
    KITTI Masks records (Klindt et al.'s ``gen_kitti_masks.py``): each mask's centre of mass and
    area, here ``(com_x, com_y, area)`` in image-side units (coverage-weighted), ``dim=3`` only
    (:func:`measure_masks`). ``anchor`` (``"centre"`` or ``"feet"``): what ``y`` places, the
    figure's centre or its foot line (:func:`render_silhouettes`)."""
    if dim not in (3, 4):
        raise ConfigError(f"dim must be 3 (x, y, scale) or 4 (+ aspect), got {dim}")
    if frames_per_sequence < 2:
        raise ConfigError(f"frames_per_sequence must be ≥ 2, got {frames_per_sequence}")
    if latents not in ("generative", "measured"):
        raise ConfigError(f"latents must be 'generative' or 'measured', got {latents!r}")
    if latents == "measured" and dim != 3:
        raise ConfigError("latents='measured' gives 3 latents (com_x, com_y, area): set dim=3")
    if not (0.0 <= shape_jitter <= 1.0 and 0.0 <= edge_noise <= 10.0):
        raise ConfigError(
            f"shape_jitter must be in [0, 1] and edge_noise in [0, 10] pixels, got "
            f"{shape_jitter} and {edge_noise}"
        )
    n_seq = math.ceil(n_frames / frames_per_sequence)
    walk = random_walk(rng, n_seq, frames_per_sequence, dim, alpha, scales)
    phase0 = rng.random((n_seq, 1)) * 2 * np.pi
    dist = np.concatenate(
        [np.zeros((n_seq, 1)), np.cumsum(np.abs(np.diff(walk[:, :, 0], axis=1)), axis=1)], axis=1
    )
    gait = phase0 + 2 * np.pi * dist / stride
    lengths = [frames_per_sequence] * n_seq
    lengths[-1] = n_frames - frames_per_sequence * (n_seq - 1)
    if lengths[-1] < 2 and n_seq > 1:  # no 1-frame tail: the one before gives up a frame
        lengths[-2] -= 1
        lengths[-1] += 1
    walk = np.concatenate([walk[i, :n] for i, n in enumerate(lengths)])
    gait = np.concatenate([gait[i, :n] for i, n in enumerate(lengths)])
    shape = np.ones((n_frames, len(SHAPE_PARTS)))
    if shape_jitter > 0:
        per_seq = np.exp(shape_jitter * rng.standard_normal((n_seq, len(SHAPE_PARTS))))
        shape = np.repeat(per_seq, lengths, axis=0)
    masks = np.empty((n_frames, image_size, image_size), dtype=np.uint8)
    for start in range(0, n_frames, 512):
        sl = slice(start, min(start + 512, n_frames))
        noise = None
        if edge_noise > 0:
            noise = edge_noise * rng.standard_normal((sl.stop - sl.start, image_size, image_size))
        masks[sl] = render_silhouettes(
            walk[sl], gait[sl], image_size, binary, shape[sl], noise, anchor
        )
    if latents == "measured":
        return FrameSequences(masks, measure_masks(masks), lengths, max_delta_t, MEASURED_NAMES)
    return FrameSequences(masks, walk, lengths, max_delta_t, MASK_FACTOR_NAMES[:dim])


def measure_masks(masks: np.ndarray) -> np.ndarray:
    """``(N, 3)`` centre of mass (x, y) and area of uint8 masks ``(N, S, S)``, as fractions of
    the side (area of its square), weighted by coverage; an empty mask gives its centre
    ``(0.5, 0.5)`` and area 0."""
    m = np.asarray(masks, dtype=np.float64) / 255.0
    size = m.shape[-1]
    pos = (np.arange(size, dtype=np.float64) + 0.5) / size
    mass = m.sum((1, 2))
    safe = np.where(mass > 0, mass, 1.0)
    com_x = np.where(mass > 0, (m.sum(1) * pos).sum(1) / safe, 0.5)
    com_y = np.where(mass > 0, (m.sum(2) * pos).sum(1) / safe, 0.5)
    return np.stack([com_x, com_y, mass / size**2], axis=1)
