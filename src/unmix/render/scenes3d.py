r"""3DIdent-like scenes: one rigid asymmetric object above a coloured ground, lit by a spotlight.

A local, CPU, batched stand-in for the 3DIdent dataset of Zimmermann et al. (2021, paper 000,
Sec. 4.2.2 and Appx A.4). A scene is described by 10 factors, sampled in the unit box
:math:`u \in [0, 1]^{10}` and rescaled affinely,
:math:`v = \mathrm{low} + u\,(\mathrm{high}-\mathrm{low})`:

=====  =====================  ===================  ==========================================
index  factor                 physical range       meaning
=====  =====================  ===================  ==========================================
0      ``object_x``           [-3, 3]              object centre, world x (image left → right)
1      ``object_y``           [-3, 3]              object centre, world y (away from camera)
2      ``object_z``           [-3, 3]              object centre, world z (height)
3      ``object_alpha``       [-π/2, π/2]          Euler angle about world x (applied first)
4      ``object_beta``        [-π/2, π/2]          Euler angle about world y (second)
5      ``object_gamma``       [-π/2, π/2]          Euler angle about world z (third)
6      ``spotlight_angle``    [-π/2, π/2]          spotlight position on its half circle
7      ``object_hue``         [-π/2, π/2]          hue angle of the object (saturation 1.0)
8      ``spotlight_hue``      [-π/2, π/2]          hue angle of the light (saturation 0.8)
9      ``ground_hue``         [-π/2, π/2]          hue angle of the ground (saturation 0.6)
=====  =====================  ===================  ==========================================

The order is that of 3DIdent's ``latents.npy``. Conventions:

* **Rotation** :math:`R = R_z(\gamma)\,R_y(\beta)\,R_x(\alpha)` (extrinsic x-y-z, Blender's
  ``XYZ`` Euler mode); a point :math:`q` of the object's own frame lands at
  :math:`p = c + R q`. With all three angles in :math:`[-\pi/2, \pi/2]` this map to SO(3) is
  one-to-one except on the measure-zero gimbal set :math:`|\beta| = \pi/2`.
* **Hue angles** :math:`\theta` are angles on the colour wheel: the HSV hue fraction is
  :math:`(\theta / 2\pi) \bmod 1`, so each hue factor spans half the wheel (blue-violet → red →
  yellow-green) without wrapping around — the colour map is injective. HSV value is 1.
* **Spotlight** sits at :math:`(4\sin\phi, -4\cos\phi, 7)` for the angle :math:`\phi`: a
  horizontal half circle of radius 4 on the camera's side of the scene, 7 units above the world
  origin. It always aims at the object's centre, has a 35° cone (full angle; ``spot_cone``)
  with a soft rim (the outer 10 % of the half-angle, cf. Blender's ``spot_blend = 0.1``), and
  constant falloff.
* **Shading** is Lambertian. The radiance of a surface point :math:`p` with normal :math:`n` and
  albedo :math:`\rho` is

  .. math::

      L(p) = \rho \odot \big[k_a\,(0.6 + 0.4\,n_z)\,\mathbf{1}
              + k_s\,c_{\mathrm{light}}\,\mathrm{cone}(p)\,\max(0, n\cdot\ell)\,V(p)\big],

  with :math:`\ell` the unit vector from :math:`p` to the light, :math:`k_a = 0.3` a white sky
  (hemisphere) light, :math:`k_s = 1.1`, and :math:`V(p) \in \{0, 1\}` the *shadow* term: 0 when
  the segment from :math:`p` to the light hits the object (shadows on the ground and self-shadows
  on the object). Values are clipped to :math:`[0, 1]`; there is no gamma curve.
* **Object**: a rigid, *chiral* compound of analytic primitives (a teapot-like body ellipsoid, a
  spout ellipsoid tilted up and sideways, a box handle, a lid knob off the body's axis), about
  3.8 units long, rotating about a point near its middle (every point within 2.21 of it). It
  has no rotational or mirror symmetry, so every rotation gives a different shape, and it never
  reaches the ground plane :math:`z = -5.3`.
* **Camera**: a pinhole at distance 20 from the target :math:`(0, 0, -0.5)`, looking down at
  35° elevation from the −y side, vertical field of view 34°; the ground fills the frame.

Rendering is *per-pixel ray casting* against the primitives (ray–ellipsoid: a quadratic in the
ellipsoid's unit-sphere frame; ray–box: the slab test), vectorised in torch. Ground terms are
computed densely over images × rays (the ground point of a ray is the same in every image);
primary rays and shadow rays are first culled with the object's bounding ball and only the
survivors (a few % of the rays) are intersected with the primitives. With four primitives this
is exact (no tessellation) and cheaper than rasterising a mesh fine enough to look smooth.
``antialias=k`` averages a ``k×k`` grid of sub-pixel rays per pixel (box filter; ``k = 1`` is
one ray through each pixel centre). Per-image quantities (rotation, light, colours) are
computed in float64 and rounded, and all sums run in a fixed order, so an image does not
depend on the other latents in its batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from unmix.errors import ConfigError
from unmix.render.sprites import _check_size, as_factor_tensor, hsv_to_rgb

__all__ = ["SCENE_FACTOR_NAMES", "TEXTURES", "SceneRenderer"]

#: Factor order of :class:`SceneRenderer` (3DIdent's ``latents.npy`` order).
SCENE_FACTOR_NAMES: tuple[str, ...] = (
    "object_x",
    "object_y",
    "object_z",
    "object_alpha",
    "object_beta",
    "object_gamma",
    "spotlight_angle",
    "object_hue",
    "spotlight_hue",
    "ground_hue",
)

#: Values of :class:`SceneRenderer`'s ``texture`` (see its docstring).
TEXTURES: tuple[str, ...] = ("none", "ramp", "ramps", "ramp_cap")

_HALF_PI = math.pi / 2
_RANGES = [(-3.0, 3.0)] * 3 + [(-_HALF_PI, _HALF_PI)] * 7

# Saturations (paper 000, Appx A.4): object 1.0, spotlight 0.8, ground 0.6.
SAT_OBJECT, SAT_LIGHT, SAT_GROUND = 1.0, 0.8, 0.6


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], dtype=np.float64)


def _rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], dtype=np.float64)


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=np.float64)


def euler_xyz_matrix(angles: torch.Tensor) -> torch.Tensor:
    r"""Rotation matrices :math:`R_z(\gamma) R_y(\beta) R_x(\alpha)` for angles ``(..., 3)``."""
    a, b, g = angles.unbind(-1)
    ca, sa, cb, sb, cg, sg = a.cos(), a.sin(), b.cos(), b.sin(), g.cos(), g.sin()
    one, zero = torch.ones_like(a), torch.zeros_like(a)
    rx = torch.stack([one, zero, zero, zero, ca, -sa, zero, sa, ca], -1)
    ry = torch.stack([cb, zero, sb, zero, one, zero, -sb, zero, cb], -1)
    rz = torch.stack([cg, -sg, zero, sg, cg, zero, zero, zero, one], -1)
    shape = (*angles.shape[:-1], 3, 3)
    return rz.reshape(shape) @ ry.reshape(shape) @ rx.reshape(shape)


@dataclass(frozen=True)
class Primitive:
    """One analytic solid in the object's frame: ``kind`` 'ellipsoid' or 'box'.

    ``half`` are the semi-axes (ellipsoid) or half-extents (box); ``rot`` the 3×3 orientation.
    A point ``q`` of the object frame is inside iff ``|S⁻¹ Qᵀ (q − centre)|`` ≤ 1 in the
    Euclidean norm (ellipsoid) or the max norm (box).
    """

    kind: str
    centre: tuple[float, float, float]
    half: tuple[float, float, float]
    rot: np.ndarray


# Roles of default_object's primitives, in its order, and their (gain, white) albedo under
# ``two_tone``: light parts are half the object colour plus half white, the handle is dark.
_PART_ROLES = ("body", "spout", "knob", "handle")
_TWO_TONE = {"body": (1.0, 0.0), "spout": (0.5, 0.5), "knob": (0.5, 0.5), "handle": (0.35, 0.0)}

# Object-frame direction of the ``texture="ramp"`` brightness ramp (unit length).
_RAMP_DIRECTION = (0.8, 0.6, 0.0)
# ``texture="ramp_cap"``: a white cap where q . w_cap > _CAP_LEVEL * r (w_cap orthogonal to the
# ramp's direction, unit length; r the bounding radius), the albedo mixed towards white by
# _CAP_WHITE. At the level 0.2 the cap covers the outer ≈ 28 % of the body's extent along w_cap.
_CAP_DIRECTION = (-0.6, 0.8, 0.0)
_CAP_LEVEL = 0.2
_CAP_WHITE = 0.75

# Rotation centre of the object, in the coordinates of the primitive list below: close to the
# centre of the smallest ball around the object, so the object turns about its middle.
_OBJECT_ORIGIN = (0.12, 0.0, 0.2)


def _is_number_in(value: object, low: float, high: float) -> bool:
    """Whether ``value`` is an int or float (not a bool) in ``[low, high]``."""
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high


def default_object(scale: float = 1.0) -> list[Primitive]:
    """The asymmetric teapot-like compound used by :class:`SceneRenderer` (object frame, z up).

    Returned coordinates are relative to the rotation centre and multiplied by ``scale``.
    """
    eye = np.eye(3)
    prims = [
        # body: three distinct semi-axes
        Primitive("ellipsoid", (0.0, 0.0, 0.0), (0.95, 0.78, 0.66), eye),
        # spout: long thin ellipsoid, tilted up 40 deg and turned 25 deg towards +y
        Primitive(
            "ellipsoid",
            (1.05, 0.22, 0.28),
            (0.62, 0.15, 0.15),
            _rot_z(math.radians(25)) @ _rot_y(math.radians(-40)),
        ),
        # lid knob, off the body's axis
        Primitive("ellipsoid", (0.25, -0.28, 0.66), (0.2, 0.2, 0.16), eye),
        # handle: a flat box behind the body, leaning back 15 deg
        Primitive("box", (-1.02, 0.0, 0.12), (0.1, 0.1, 0.5), _rot_y(math.radians(-15))),
    ]
    origin = np.array(_OBJECT_ORIGIN)
    return [
        Primitive(
            p.kind,
            tuple(float(scale * c) for c in np.array(p.centre) - origin),
            tuple(float(scale * h) for h in p.half),
            p.rot,
        )
        for p in prims
    ]


def bounding_radius(prims: list[Primitive]) -> float:
    """Radius of a ball about the object origin containing every primitive (an upper bound:
    the exact farthest corner for boxes, centre distance + largest semi-axis for ellipsoids)."""
    radius = 0.0
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
    for p in prims:
        c = np.array(p.centre)
        if p.kind == "box":
            r = np.linalg.norm(c + (corners * np.array(p.half)) @ p.rot.T, axis=1).max()
        else:
            r = np.linalg.norm(c) + max(p.half)
        radius = max(radius, float(r))
    return radius


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Dot product over the last axis (size 3) in a fixed order, broadcasting."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _matvec(M: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``M @ v`` for (..., 3, 3) and (..., 3), broadcasting, in a fixed summation order."""
    return M[..., 0] * v[..., 0:1] + M[..., 1] * v[..., 1:2] + M[..., 2] * v[..., 2:3]


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / torch.sqrt(_dot(v, v)).clamp_min(1e-12)[..., None]


def _rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``x[idx]`` along dim 0 via ``index_select`` (much faster than advanced indexing)."""
    return x.index_select(0, idx)


class SceneRenderer:
    r"""Batched software renderer of 3DIdent-like scenes (paper 000, Appx A.4).

    Parameters
    ----------
    size:
        Image side in pixels (≥ 8; 64 default, 224 as in 3DIdent).
    antialias:
        Sub-pixel rays per pixel side (``k×k`` per pixel, box filter); 1 = none.
    shadows:
        Cast shadow rays (ground shadows and self-shadowing). Default True.
    max_rays_per_chunk:
        Memory knob: images are rendered in chunks of about this many rays.
    object_scale:
        Size of the object (a multiple of :func:`default_object`'s units; 1.4 default, the
        object then spans ≈ 130 of 4,096 pixels at 64 px). The ground plane moves down with a
        larger object so that it can never cut it (``ground_z = min(-5.3, -3 - 1.001 r - 0.05)`` with
        ``r`` the object's bounding radius).
    two_tone:
        Draw the object's small asymmetric parts in contrasting albedos: spout and lid knob
        light (the object colour mixed half-and-half with white), handle dark (0.35 × the object
        colour); the body keeps the object colour. Off by default (one colour, as 3DIdent's
        teapot). It makes the orientation readable at low resolution, where the body's
        near-symmetric ellipsoid alone is ambiguous up to half turns (docs/images.md).
    texture:
        ``"none"`` (default): a uniform albedo. ``"ramp"``: the albedo is multiplied by a linear
        brightness ramp painted on the object along the object-frame direction
        :math:`w \propto (0.8, 0.6, 0)`, :math:`0.55 + 0.45\,\mathrm{clip}(q\cdot w / r, -1, 1)`
        for a surface point :math:`q` (object frame, :math:`r` the bounding radius). No rotation
        maps the body ellipsoid and the ramp onto themselves, so every orientation looks
        different over the whole object, not only at its small parts. ``"ramps"``: that ramp
        and a second one in whiteness along the object's own z axis (the albedo mixed towards
        white by :math:`0.3\,(1 + \mathrm{clip}(q_z / r, -1, 1))`): two non-parallel painted
        directions, which fix the orientation from the pattern alone. ``"ramp_cap"``: the
        ramp and a white cap, the albedo :math:`\rho` mixed to :math:`\rho + 0.75\,(1-\rho)`
        where :math:`q\cdot w_{\mathrm{cap}} > 0.2\,r`, :math:`w_{\mathrm{cap}} = (-0.6, 0.8, 0)`
        orthogonal to the ramp: the ramp shows where :math:`w` points, the cap's outline the
        turn about :math:`w` (docs/images.md measures what each reads).
    spot_cone:
        The spotlight's full cone angle in degrees (35, 3DIdent's value, by default). A larger
        object covers more of the cone, so less ground is lit in the light's colour; a wider
        cone gives that lit ground back (docs/images.md).

    ``render(u)`` maps unit-box factors ``(..., 10)`` (order :data:`SCENE_FACTOR_NAMES`) to a
    float32 image tensor ``(..., 3, H, W)`` in :math:`[0, 1]`. See the module docstring.
    """

    n_factors = 10
    factor_names = SCENE_FACTOR_NAMES

    # scene constants (world units, z up)
    ground_z = -5.3
    light_radius = 4.0
    light_height = 7.0
    cone_blend = 0.1
    ambient = 0.3
    spot_gain = 1.1
    cam_target = (0.0, 0.0, -0.5)
    cam_distance = 20.0
    cam_elevation = math.radians(35.0)
    cam_fov = math.radians(34.0)

    def __init__(
        self,
        size: int = 64,
        antialias: int = 1,
        shadows: bool = True,
        max_rays_per_chunk: int = 1 << 18,
        object_scale: float = 1.4,
        two_tone: bool = False,
        texture: str = "none",
        spot_cone: float = 35.0,
    ) -> None:
        owner = "SceneRenderer"
        self.size = _check_size(size, owner)
        if isinstance(antialias, bool) or not isinstance(antialias, int) or antialias < 1:
            raise ConfigError(
                f"{owner}: antialias must be an integer >= 1 (sub-pixel rays per pixel side), "
                f"got {antialias!r}."
            )
        if not isinstance(max_rays_per_chunk, int) or max_rays_per_chunk < 1:
            raise ConfigError(
                f"{owner}: max_rays_per_chunk must be a positive integer, got "
                f"{max_rays_per_chunk!r}."
            )
        self.antialias = antialias
        self.shadows = bool(shadows)
        self.max_rays_per_chunk = max_rays_per_chunk
        if not _is_number_in(object_scale, 0.1, 4.0):
            raise ConfigError(
                f"{owner}: object_scale must be a number in [0.1, 4] (1.4 default), got "
                f"{object_scale!r}."
            )
        if not isinstance(two_tone, bool):
            raise ConfigError(f"{owner}: two_tone must be true or false, got {two_tone!r}.")
        if texture not in TEXTURES:
            raise ConfigError(
                f"{owner}: texture must be one of {', '.join(map(repr, TEXTURES))}, "
                f"got {texture!r}."
            )
        if not _is_number_in(spot_cone, 10.0, 120.0):
            raise ConfigError(
                f"{owner}: spot_cone must be the spotlight's full cone angle in degrees, in "
                f"[10, 120] (35 default), got {spot_cone!r}."
            )
        self.spot_cone = float(spot_cone)
        self.cone_half_angle = math.radians(self.spot_cone) / 2
        self.object_scale = float(object_scale)
        self.two_tone = two_tone
        self.texture = texture
        self.primitives = default_object(self.object_scale)
        # the object's lowest point is at z >= -3 - r; keep the ground below it
        self.ground_z = min(
            SceneRenderer.ground_z, -3.0 - 1.001 * bounding_radius(self.primitives) - 0.05
        )
        self._build_constants()

    # ------------------------------------------------------------------ set-up
    def _build_constants(self) -> None:
        prims = self.primitives
        # per primitive: local map q -> S^-1 Q^T (q - c), stored as M_k = S^-1 Q^T and c_k
        self._prim_M = torch.tensor(
            np.stack([np.diag(1.0 / np.array(p.half)) @ p.rot.T for p in prims]),
            dtype=torch.float32,
        )  # (K, 3, 3)
        self._prim_c = torch.tensor([p.centre for p in prims], dtype=torch.float32)  # (K, 3)
        self._is_box = torch.tensor([p.kind == "box" for p in prims])
        # albedo of primitive k: gain_k * object colour + white_k (see ``two_tone``)
        gains, whites = [1.0] * len(prims), [0.0] * len(prims)
        if self.two_tone:
            for k, role in enumerate(_PART_ROLES[: len(prims)]):
                gains[k], whites[k] = _TWO_TONE[role]
        self._albedo_gain = torch.tensor(gains, dtype=torch.float32)
        self._albedo_white = torch.tensor(whites, dtype=torch.float32)
        self._Mc = torch.einsum("kij,kj->ki", self._prim_M, self._prim_c)  # (K, 3) M_k c_k
        self.n_ellipsoids = int((~self._is_box).sum())
        if bool(self._is_box[: self.n_ellipsoids].any()):
            raise ValueError("primitives must list the ellipsoids before the boxes")
        # camera
        t = np.array(self.cam_target)
        e = self.cam_elevation
        cam = t + self.cam_distance * np.array([0.0, -math.cos(e), math.sin(e)])
        fwd = (t - cam) / np.linalg.norm(t - cam)
        right = np.cross(fwd, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, fwd)
        k = self.antialias
        m = self.size * k
        s = (np.arange(m) + 0.5) / m * 2.0 - 1.0  # sample centres in (-1, 1)
        tan = math.tan(self.cam_fov / 2)
        sx = s[None, :] * tan  # columns: left -> right
        sy = -s[:, None] * tan  # rows: top -> bottom
        d = fwd[None, None, :] + sx[..., None] * right + sy[..., None] * up
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        if k > 1:  # order rays pixel-major so a k*k block is contiguous: (H, W, k, k, 3)
            d = d.reshape(self.size, k, self.size, k, 3).transpose(0, 2, 1, 3, 4)
        self._cam = torch.tensor(cam, dtype=torch.float32)
        self._dirs = torch.tensor(d.reshape(-1, 3), dtype=torch.float32)  # (P, 3)
        if float(self._dirs[:, 2].max()) >= 0:
            raise ValueError("camera set-up error: some rays do not hit the ground")
        self._ground_t = (self.ground_z - self._cam[2]) / self._dirs[:, 2]  # (P,)
        self._ground_pts = self._cam + self._ground_t[:, None] * self._dirs
        # bounding ball of the object, centred on its rotation centre
        self._bs_radius = 1.001 * bounding_radius(prims)
        if self.ground_z > -3.0 - self._bs_radius:
            raise ValueError("scene set-up error: the object could cut the ground")

    # ------------------------------------------------------------------ factors
    def factor_ranges(self) -> torch.Tensor:
        """Physical ``[low, high]`` of each factor, shape ``(10, 2)`` (see the module table)."""
        return torch.tensor(_RANGES, dtype=torch.float32)

    def to_physical(self, u) -> torch.Tensor:
        """Unit-box factors ``(..., 10)`` → physical values ``low + u (high − low)``."""
        u = as_factor_tensor(u, 10, "SceneRenderer", SCENE_FACTOR_NAMES)
        r = self.factor_ranges().to(u.device)
        return r[:, 0] + u * (r[:, 1] - r[:, 0])

    def to_unit(self, v) -> torch.Tensor:
        """Physical values ``(..., 10)`` → unit-box factors (inverse of :meth:`to_physical`)."""
        v = torch.as_tensor(v, dtype=torch.float32)
        r = self.factor_ranges().to(v.device)
        return (v - r[:, 0]) / (r[:, 1] - r[:, 0])

    # ------------------------------------------------------------------ rendering
    def __call__(self, u) -> torch.Tensor:
        return self.render(u)

    def render(self, u) -> torch.Tensor:
        """Render unit-box factors ``(..., 10)`` → float32 ``(..., 3, H, W)`` in [0, 1]."""
        u = as_factor_tensor(u, 10, "SceneRenderer", SCENE_FACTOR_NAMES)
        lead = u.shape[:-1]
        phys = self.to_physical(u.reshape(-1, 10))
        n = phys.shape[0]
        per_image = self._dirs.shape[0]
        chunk = max(1, self.max_rays_per_chunk // per_image)
        out = torch.empty(n, 3, self.size, self.size, dtype=torch.float32, device=phys.device)
        for i in range(0, n, chunk):
            out[i : i + chunk] = self._shade(phys[i : i + chunk])["image"]
        return out.reshape(*lead, 3, self.size, self.size)

    def render_buffers(self, u) -> dict[str, torch.Tensor]:
        """Per-ray intermediate buffers for ``(n, 10)`` unit factors (tests and debugging).

        Keys: ``image`` (n, 3, H, W); per ray (n, P) with P = (size·antialias)²: ``t`` (distance
        along the unit ray), ``hit`` (primitive index, K for the ground), ``point`` (n, P, 3),
        ``normal`` (n, P, 3), ``visible`` (1 unless shadowed), ``cone``; and ``camera`` (3,),
        ``dirs`` (P, 3), ``light`` (n, 3), ``R`` (n, 3, 3).
        """
        u = as_factor_tensor(u, 10, "SceneRenderer", SCENE_FACTOR_NAMES).reshape(-1, 10)
        return self._shade(self.to_physical(u), keep=True)

    # ------------------------------------------------------------------ internals
    def _to_local(self, x_obj: torch.Tensor, is_dir: bool) -> torch.Tensor:
        """Object-frame points/directions (m, 3) → every primitive's unit frame (m, K, 3).

        Point: :math:`M_k (x - c_k)`; direction: :math:`M_k x`.
        """
        y = _matvec(self._prim_M.to(x_obj.device)[None], x_obj[:, None, :])
        return y if is_dir else y - self._Mc.to(x_obj.device)

    @staticmethod
    def _rotate_rows(Rt: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """``Rt[idx[i]] @ v[i]`` for every row i: (m, 3)."""
        return _matvec(Rt.reshape(-1, 9).index_select(0, idx).view(-1, 3, 3), v)

    def _intersect(self, o: torch.Tensor, d: torch.Tensor):
        r"""Entry/exit parameters of rays ``o + t d`` with every primitive.

        ``o``, ``d``: (..., K, 3), already in each primitive's unit frame (unit sphere or the
        cube :math:`[-1, 1]^3`). Returns ``t_in, t_out`` (..., K); a miss has
        ``t_in = +inf, t_out = -inf``. Ellipsoid: roots of :math:`|o + t d|^2 = 1`; box: slabs.
        """
        ke = self.n_ellipsoids
        parts_in, parts_out = [], []
        if ke:
            oe, de = o[..., :ke, :], d[..., :ke, :]
            a = _dot(de, de)
            b = _dot(oe, de)
            c = _dot(oe, oe) - 1.0
            disc = b * b - a * c
            root = torch.sqrt(torch.clamp(disc, min=0.0))
            miss = disc <= 0
            parts_in.append(torch.where(miss, math.inf, (-b - root) / a))
            parts_out.append(torch.where(miss, -math.inf, (-b + root) / a))
        if ke < len(self.primitives):
            ob, db = o[..., ke:, :], d[..., ke:, :]
            db = torch.where(db.abs() < 1e-12, 1e-12, db)
            ta = (-1.0 - ob) / db
            tb = (1.0 - ob) / db
            t0 = torch.minimum(ta, tb).amax(-1)
            t1 = torch.maximum(ta, tb).amin(-1)
            miss = t0 >= t1
            parts_in.append(torch.where(miss, math.inf, t0))
            parts_out.append(torch.where(miss, -math.inf, t1))
        if len(parts_in) == 1:
            return parts_in[0], parts_out[0]
        return torch.cat(parts_in, -1), torch.cat(parts_out, -1)

    def _occluded(self, Rt, pos, idx, p0, seg):
        """Whether segments ``p0 + t seg`` (t ∈ (0, 1]) of images ``idx`` hit the object."""
        o = self._to_local(self._rotate_rows(Rt, idx, p0 - pos.index_select(0, idx)), False)
        d = self._to_local(self._rotate_rows(Rt, idx, seg), True)
        t0, t1 = self._intersect(o, d)
        return ((t1 > 1e-4) & (t0 < 1.0) & (t0 < t1)).any(-1)

    @staticmethod
    def _sphere_hit(o: torch.Tensor, d: torch.Tensor, r2: float, t_max: float) -> torch.Tensor:
        """Whether rays ``o + t d`` (..., 3) meet the ball of radius² ``r2`` at 0 for t ≤ t_max."""
        a = _dot(d, d)
        b = _dot(o, d)
        c = _dot(o, o) - r2
        disc = b * b - a * c
        root = torch.sqrt(torch.clamp(disc, min=0.0))
        return (disc > 0) & (-b + root > 0) & (-b - root < t_max * a)

    def _light(self, phys: torch.Tensor):
        """Light position (n, 3) and unit aim direction at the object (n, 3); float64 in/out."""
        phi = phys[:, 6]
        light = torch.stack(
            [
                self.light_radius * phi.sin(),
                -self.light_radius * phi.cos(),
                torch.full_like(phi, self.light_height),
            ],
            -1,
        )  # (n, 3)
        aim = phys[:, 0:3] - light
        return light, _unit(aim)

    def _cone(self, cos_spot: torch.Tensor) -> torch.Tensor:
        """Spotlight profile: 1 inside, 0 outside the cone, smoothstep across the soft rim."""
        cos_out = math.cos(self.cone_half_angle)
        cos_in = math.cos(self.cone_half_angle * (1.0 - self.cone_blend))
        x = ((cos_spot - cos_out) * (1.0 / (cos_in - cos_out))).clamp(0.0, 1.0)
        return x * x * (3.0 - 2.0 * x)

    def _shade(self, phys: torch.Tensor, keep: bool = False) -> dict[str, torch.Tensor]:
        """Render physical factors (n, 10). Ground terms are dense over (image, ray); the object
        and shadow rays are first culled with the object's bounding sphere, then intersected
        with the primitives only where they can hit."""
        dev = phys.device
        n = phys.shape[0]
        K = len(self.primitives)
        cam = self._cam.to(dev)
        dirs = self._dirs.to(dev)  # (P, 3)
        G = self._ground_pts.to(dev)  # (P, 3) ground point of every ray (same in all images)
        t_g = self._ground_t.to(dev)  # (P,)
        P = dirs.shape[0]
        # Per-image quantities in float64, then rounded to float32: trig functions are
        # vectorised differently depending on an element's position in the batch, and the
        # rounding makes the picture of a latent independent of the other latents in the batch.
        ph64 = phys.double()
        R64 = euler_xyz_matrix(ph64[:, 3:6])  # object → world rotation (n, 3, 3)
        light64, aim64 = self._light(ph64)
        o_obj64 = _matvec(R64.transpose(1, 2), self._cam.to(dev).double() - ph64[:, 0:3])
        hue = torch.remainder(ph64[:, 7:10] / (2 * math.pi), 1.0)  # object, light, ground
        obj_rgb = hsv_to_rgb(hue[:, 0], SAT_OBJECT).float()  # (n, 3)
        light_rgb = hsv_to_rgb(hue[:, 1], SAT_LIGHT).float()
        ground_rgb = hsv_to_rgb(hue[:, 2], SAT_GROUND).float()
        R, light, aim = R64.float(), light64.float(), aim64.float()
        Rt = R.transpose(1, 2).contiguous()  # world → object
        pos = phys[:, 0:3].contiguous()
        bs_c = pos  # the bounding sphere is centred on the rotation centre
        bs_r2 = self._bs_radius**2

        # ---- ground, dense over (n, P): cone and Lambert term with normal e_z
        lx = light[:, 0:1] - G[None, :, 0]
        ly = light[:, 1:2] - G[None, :, 1]
        lz = light[:, 2:3] - G[None, :, 2]
        inv = torch.rsqrt(lx * lx + ly * ly + lz * lz)
        cos_spot = -(lx * aim[:, 0:1] + ly * aim[:, 1:2] + lz * aim[:, 2:3]) * inv
        cone_g = self._cone(cos_spot)
        direct = cone_g * (lz * inv)  # (n, P)
        visible = torch.ones_like(direct)

        # ---- primary rays that can meet the object: bounding-sphere cull, then primitives
        oc = cam - bs_c  # (n, 3)
        b = _dot(oc[:, None, :], dirs[None])  # (n, P), |d| = 1
        cand = b * b - (_dot(oc, oc)[:, None] - bs_r2) > 0
        cn, cp = torch.nonzero(cand, as_tuple=True)
        o_img = self._to_local(o_obj64.float(), False)  # camera in unit frames (n, K, 3)
        o_loc = o_img.index_select(0, cn)  # (m, K, 3)
        d_loc = self._to_local(self._rotate_rows(Rt, cn, dirs.index_select(0, cp)), True)
        t_in, _ = self._intersect(o_loc, d_loc)
        t_in = torch.where(t_in > 0, t_in, math.inf)
        t_obj, k_obj = t_in.min(-1)  # (m,)
        hit_obj = t_obj < t_g.index_select(0, cp)
        on, op = cn[hit_obj], cp[hit_obj]  # object pixels (image, ray)
        t_o, k_o = t_obj[hit_obj], k_obj[hit_obj]
        sel = torch.nonzero(hit_obj).flatten()
        q_loc = o_loc[sel, k_o] + t_o[:, None] * d_loc[sel, k_o]  # unit-frame point
        face = torch.nn.functional.one_hot(q_loc.abs().argmax(-1), 3).to(q_loc.dtype)
        grad = torch.where(self._is_box.to(dev)[k_o, None], face * torch.sign(q_loc), q_loc)
        # world normal ∝ R M_k^T g  (gradient of the implicit function |M_k(R^T(p - pos) - c_k)|)
        Mt = self._prim_M.to(dev).transpose(1, 2).index_select(0, k_o)  # (mo, 3, 3)
        nrm = _unit(self._rotate_rows(R, on, _matvec(Mt, grad)))
        p_o = cam + t_o[:, None] * dirs[op]
        ell = _unit(light[on] - p_o)
        cone_o = self._cone(-_dot(ell, aim[on]))
        direct_o = cone_o * _dot(nrm, ell).clamp_min(0.0)

        # ---- shadows on the object (self-shadowing) and on the ground
        vis_o = torch.ones_like(direct_o)
        if self.shadows:
            lit = direct_o > 0
            if bool(lit.any()):
                li = torch.nonzero(lit).flatten()
                ii = on[li]
                p0 = p_o[li] + 1e-3 * nrm[li]
                occ = self._occluded(Rt, pos, ii, p0, _rows(light, ii) - p0)
                vis_o[li] = (~occ).to(vis_o)
            gn, gp = torch.nonzero(direct > 0, as_tuple=True)
            if gn.numel():
                g0 = G.index_select(0, gp)
                seg = _rows(light, gn) - g0
                near = self._sphere_hit(g0 - _rows(bs_c, gn), seg, bs_r2, 1.0)
                gn, gp, g0, seg = gn[near], gp[near], g0[near], seg[near]
                if gn.numel():
                    occ = self._occluded(Rt, pos, gn, g0, seg)
                    visible[gn, gp] = (~occ).to(visible)

        # ---- colours: ground everywhere, then the object's pixels on top
        dv = (self.spot_gain * direct * visible)[:, None, :]  # (n, 1, P)
        sky_g = self.ambient  # 0.6 + 0.4 n_z with n_z = 1
        rad = ground_rgb[:, :, None] * (sky_g + dv * light_rgb[:, :, None])  # (n, 3, P)
        sky_o = self.ambient * (0.6 + 0.4 * nrm[:, 2])
        irr_o = sky_o[:, None] + (self.spot_gain * direct_o * vis_o)[:, None] * light_rgb[on]
        if self.two_tone:
            alb = obj_rgb[on] * self._albedo_gain.to(dev)[k_o, None]
            alb = alb + self._albedo_white.to(dev)[k_o, None]
        else:
            alb = obj_rgb[on]
        if self.texture != "none":  # brightness ramp painted along w in the object frame
            q_obj = self._rotate_rows(Rt, on, p_o - pos.index_select(0, on))
            w = torch.tensor(_RAMP_DIRECTION, device=dev)
            t = (_dot(q_obj, w) * (1.0 / self._bs_radius)).clamp(-1.0, 1.0)
            alb = alb * (0.55 + 0.45 * t)[:, None]
            if self.texture == "ramps":  # and whiteness along the object's z axis
                white = 0.3 * (1.0 + (q_obj[:, 2] * (1.0 / self._bs_radius)).clamp(-1.0, 1.0))
                alb = alb + white[:, None] * (1.0 - alb)
            elif self.texture == "ramp_cap":  # and a white cap along w_cap
                w_cap = torch.tensor(_CAP_DIRECTION, device=dev)
                cap = (_dot(q_obj, w_cap) > _CAP_LEVEL * self._bs_radius)[:, None]
                alb = torch.where(cap, alb + _CAP_WHITE * (1.0 - alb), alb)
        rad[on, :, op] = alb * irr_o
        rad = rad.clamp_(0.0, 1.0)
        k2 = self.antialias**2
        rad = rad.reshape(n, 3, self.size, self.size, k2)
        img = rad[..., 0]
        for j in range(1, k2):  # fixed summation order (a box filter over the sub-pixel rays)
            img = img + rad[..., j]
        if k2 > 1:
            img = img * (1.0 / k2)
        out = {"image": img}
        if keep:
            hit = torch.full((n, P), K, dtype=torch.long, device=dev)
            hit[on, op] = k_o
            t = t_g[None].repeat(n, 1)
            t[on, op] = t_o
            normal = torch.zeros(n, P, 3, device=dev)
            normal[..., 2] = 1.0
            normal[on, op] = nrm
            cone = cone_g.clone()
            cone[on, op] = cone_o
            visible[on, op] = vis_o
            out.update(
                t=t,
                hit=hit,
                point=cam + t[..., None] * dirs,
                normal=normal,
                visible=visible,
                cone=cone,
                camera=cam,
                dirs=dirs,
                light=light,
                R=R,
            )
        return out
