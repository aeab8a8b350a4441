r"""Uniform distributions on the bounded latent spaces: the marginals paper 000 assumes.

* :class:`UniformSphere` — uniform on :math:`S^{d-1}_r` w.r.t. its surface measure:
  :math:`p(x) = 1/|S^{d-1}_r|`, :math:`|S^{d-1}_r| = 2\pi^{d/2}r^{d-1}/\Gamma(d/2)`. Sampled as
  :math:`x = r\,g/\lVert g\rVert`, :math:`g \sim \mathcal N(0, I_d)` (rotation invariance). The
  marginal :math:`p(z)` of Theorem 1 (Sec. 3.1) and Table 1 rows 1–4.
* :class:`UniformBox` — uniform on :math:`\prod_i[\mathrm{low}_i, \mathrm{high}_i]`:
  :math:`p(x) = \prod_i 1/(\mathrm{high}_i - \mathrm{low}_i)`; sampled as
  :math:`\mathrm{low} + (\mathrm{high}-\mathrm{low})U`. The box marginal of Theorems 4–6 and
  Tables 1–2.

``log_prob`` is :math:`-\infty` outside the support (for the sphere: when
:math:`|\lVert x\rVert - r| > \mathrm{tol}\cdot r`, tol = 1e-6 in float64, ~1e-4 in float32).
Draws are made in float64 from the caller's generator and cast to the requested dtype.
:func:`uniform_on` builds the right one for an :class:`unmix.spaces.Space`; there is no uniform
distribution on :math:`\mathbb{R}^d`.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import constraints

from unmix.distributions.base import Distribution
from unmix.errors import ConfigError
from unmix.spaces import Box, Euclidean, Space, Sphere
from unmix.special import log_sphere_area

__all__ = ["UniformSphere", "UniformBox", "uniform_on"]


def sphere_tolerance(dtype: torch.dtype) -> float:
    """Relative tolerance on ``‖x‖ = r`` for a point to count as on the sphere, by dtype
    (1e-6 for float64, ~1.2e-4 for float32)."""
    return min(1e-2, max(1e-6, 1000.0 * torch.finfo(dtype).eps))


def _check_dim(dim, owner: str, minimum: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < minimum:
        raise ConfigError(f"'dim' of {owner} must be an integer >= {minimum}, got {dim!r}.")
    return dim


def _check_value(value, dim: int, owner: str, dtype: torch.dtype, device) -> torch.Tensor:
    value = torch.as_tensor(value, dtype=dtype, device=device)
    if value.ndim == 0 or value.shape[-1] != dim:
        raise ConfigError(
            f"{owner}.log_prob got a value of shape {tuple(value.shape)}; its last dimension "
            f"must be {dim} (the latent dimension)."
        )
    return value


class UniformSphere(Distribution):
    r"""Uniform distribution on the sphere :math:`S^{d-1}_r \subset \mathbb{R}^d` (``dim`` = d ≥ 2).

    :math:`\log p(x) = -\log|S^{d-1}_r|` on the sphere, :math:`-\infty` off it. Mean 0,
    per-coordinate variance :math:`r^2/d`.
    """

    arg_constraints: dict = {}
    support = constraints.real_vector  # the sphere (not a torch constraint)
    has_rsample = False

    def __init__(
        self,
        dim: int,
        radius: float = 1.0,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.dim = _check_dim(dim, "UniformSphere", 2)
        if not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
            raise ConfigError(
                f"'radius' of UniformSphere must be a positive finite number, got {radius!r}."
            )
        self.radius = float(radius)
        self.dtype = dtype or torch.get_default_dtype()
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        super().__init__(torch.Size(), torch.Size([dim]), validate_args=False)

    def sample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        shape = self._extended_shape(torch.Size(sample_shape))
        dev = generator.device if generator is not None else self.device
        g = torch.randn(shape, generator=generator, dtype=torch.float64, device=dev)
        norm = g.norm(dim=-1, keepdim=True)
        e1 = torch.zeros_like(g)
        e1[..., 0] = 1.0
        x = torch.where(norm > 0, g / torch.where(norm > 0, norm, 1.0), e1)  # norm = 0: prob. 0
        return (self.radius * x).to(dtype=self.dtype, device=self.device)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        value = _check_value(value, self.dim, "UniformSphere", self.dtype, self.device)
        tol = sphere_tolerance(value.dtype) * self.radius
        on = (value.norm(dim=-1) - self.radius).abs() <= tol
        lp = torch.full(on.shape, -log_sphere_area(self.dim, self.radius), dtype=value.dtype)
        return torch.where(on, lp.to(value.device), torch.full_like(lp, -math.inf).to(value.device))

    @property
    def mean(self) -> torch.Tensor:
        return torch.zeros(self.dim, dtype=self.dtype, device=self.device)

    @property
    def variance(self) -> torch.Tensor:
        return torch.full(
            (self.dim,), self.radius**2 / self.dim, dtype=self.dtype, device=self.device
        )

    def entropy(self) -> torch.Tensor:
        return torch.tensor(log_sphere_area(self.dim, self.radius), dtype=self.dtype)


class UniformBox(Distribution):
    r"""Uniform distribution on the box :math:`\prod_{i=1}^d [\mathrm{low}_i, \mathrm{high}_i]`.

    ``low``/``high`` are finite scalars (the same on every axis) or tensors of shape ``(dim,)``;
    ``low < high``. :math:`\log p(x) = -\sum_i \log(\mathrm{high}_i - \mathrm{low}_i)` inside
    (boundary included), :math:`-\infty` outside. Mean :math:`(\mathrm{low}+\mathrm{high})/2`,
    variance :math:`(\mathrm{high}-\mathrm{low})^2/12`. ``sample`` draws float64 uniforms and casts.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(
        self,
        low=0.0,
        high=1.0,
        dim: int = 1,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.dim = _check_dim(dim, "UniformBox", 1)
        self.dtype = dtype or torch.get_default_dtype()
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        bounds = []
        for name, v in (("low", low), ("high", high)):
            t = torch.as_tensor(v, dtype=torch.float64)
            if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != dim):
                raise ConfigError(
                    f"'{name}' of UniformBox has shape {tuple(t.shape)}; pass a scalar or a "
                    f"tensor of shape ({dim},) (dim={dim})."
                )
            if not bool(torch.isfinite(t).all()):
                raise ConfigError(f"'{name}' of UniformBox must be finite, got {t.tolist()}.")
            bounds.append(t.expand(dim))
        lo64, hi64 = bounds
        if not bool((lo64 < hi64).all()):
            raise ConfigError(
                f"UniformBox needs low < high on every axis, got low={lo64.tolist()}, "
                f"high={hi64.tolist()}: swap or widen the bounds."
            )
        self._low64, self._high64 = lo64.to(self.device), hi64.to(self.device)
        self.low = self._low64.to(self.dtype)
        self.high = self._high64.to(self.dtype)
        self._log_volume = float(torch.log(hi64 - lo64).sum())
        super().__init__(torch.Size(), torch.Size([dim]), validate_args=False)

    @constraints.dependent_property(is_discrete=False, event_dim=1)
    def support(self):
        return constraints.independent(constraints.interval(self.low, self.high), 1)

    def sample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        shape = self._extended_shape(torch.Size(sample_shape))
        dev = generator.device if generator is not None else self.device
        u = torch.rand(shape, generator=generator, dtype=torch.float64, device=dev).to(self.device)
        x = (self._low64 + (self._high64 - self._low64) * u).to(self.dtype)
        return torch.minimum(torch.maximum(x, self.low), self.high)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        value = _check_value(value, self.dim, "UniformBox", self.dtype, self.device)
        low, high = self.low.to(value.dtype), self.high.to(value.dtype)
        inside = ((value >= low) & (value <= high)).all(-1)
        lp = torch.full(inside.shape, -self._log_volume, dtype=value.dtype, device=value.device)
        return torch.where(inside, lp, torch.full_like(lp, -math.inf))

    @property
    def mean(self) -> torch.Tensor:
        return (0.5 * (self._low64 + self._high64)).to(self.dtype)

    @property
    def variance(self) -> torch.Tensor:
        return ((self._high64 - self._low64) ** 2 / 12.0).to(self.dtype)

    def entropy(self) -> torch.Tensor:
        return torch.tensor(self._log_volume, dtype=self.dtype)


def uniform_on(
    space: Space, dtype: torch.dtype | None = None, device: torch.device | str | None = None
) -> UniformSphere | UniformBox:
    """The uniform distribution on a bounded :class:`unmix.spaces.Space` (Sphere or Box).

    Raises :class:`ConfigError` for :class:`unmix.spaces.Euclidean` (no uniform on R^d).
    """
    if isinstance(space, Sphere):
        return UniformSphere(space.dim, space.radius, dtype=dtype, device=device)
    if isinstance(space, Box):
        return UniformBox(space.low, space.high, space.dim, dtype=dtype, device=device)
    if isinstance(space, Euclidean):
        raise ConfigError(
            "There is no uniform distribution on the unbounded space R^d (Euclidean): choose a "
            "Normal or Laplace marginal, or a bounded space (sphere or box)."
        )
    raise ConfigError(f"uniform_on does not know the space {space!r}: pass a Sphere or a Box.")
