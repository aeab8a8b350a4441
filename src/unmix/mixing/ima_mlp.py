r"""MLP mixings of Reizinger et al. (paper 004): Sec. 4.1's orthogonal and Fig. 4's triangular MLP.

Both use the **smooth leaky ReLU** (Gresele et al. 2020, cited in paper 004, Sec. 4.1)

.. math::

    \sigma(x) = \alpha x + (1 - \alpha) \log(1 + e^x), \qquad
    \sigma'(x) = \alpha + (1 - \alpha)\, \mathrm{sigmoid}(x) \in (\alpha, 1),

with :math:`\alpha` = ``negative_slope`` = 0.2, i.e. :math:`0.2x + 0.8 \log(1 + e^x)`. It is smooth,
strictly increasing and convex, so it is a bijection of :math:`\mathbb{R}`; its inverse has no
closed form and is computed by :func:`smooth_leaky_relu_inverse` (safeguarded Newton, float64).

* :class:`SmoothLeakyMLP` — paper 004, Sec. 4.1: "a 3-layer MLP with smooth Leaky ReLU
  nonlinearities and orthogonal weight matrices — which intentionally does not belong to the IMA
  class". :math:`g(z) = Q_L \sigma(Q_{L-1} \cdots \sigma(Q_1 z))`, :math:`Q_l` Haar-random
  orthogonal, nonlinearities between layers (as :class:`unmix.mixing.mlp.InvertibleMLP`).
* :class:`TriangularMLP` — paper 004, Sec. 4.2 / Fig. 4: "an MLP with square upper-triangular
  weight matrices and invertible element-wise nonlinearities to construct a mixing not in the IMA
  class". The paper's code for it is not public; the choices made here are listed in the class
  docstring.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

from unmix.errors import ConfigError
from unmix.mixing.base import (
    Mixing,
    check_dim_arg,
    check_finite_real,
    check_seed,
    make_generator,
    random_orthogonal,
    resolve_dtype,
)
from unmix.mixing.mlp import leaky_relu_derivative, leaky_relu_inverse

# ------------------------------------------------------------------------- smooth leaky ReLU


def _softplus(x: torch.Tensor) -> torch.Tensor:
    r""":math:`\log(1 + e^x)` as ``logaddexp(x, 0)``: no overflow, no cut-off (torch's softplus
    returns :math:`x` above ``threshold=20``, off by :math:`2\cdot 10^{-9}` and not monotone
    there), and the right derivative :math:`\mathrm{sigmoid}(x)` under autograd, also at 0."""
    return torch.logaddexp(x, torch.zeros_like(x))


def _check_slope(negative_slope: float, owner: str) -> float:
    s = check_finite_real("negative_slope", negative_slope, owner, positive=True)
    if s > 1.0:
        raise ConfigError(
            f"Parameter 'negative_slope' of {owner} must lie in (0, 1], got {negative_slope!r}: "
            "the smooth leaky ReLU a·x + (1 - a)·log(1 + e^x) is increasing only for 0 < a <= 1 "
            "(the paper uses 0.2)."
        )
    return s


def smooth_leaky_relu(x: torch.Tensor, negative_slope: float = 0.2) -> torch.Tensor:
    r""":math:`\sigma(x) = \alpha x + (1 - \alpha) \log(1 + e^x)`, :math:`\alpha \in (0, 1]`."""
    return negative_slope * x + (1.0 - negative_slope) * _softplus(x)


def smooth_leaky_relu_derivative(x: torch.Tensor, negative_slope: float = 0.2) -> torch.Tensor:
    r""":math:`\sigma'(x) = \alpha + (1 - \alpha)\,\mathrm{sigmoid}(x)`."""
    return negative_slope + (1.0 - negative_slope) * torch.sigmoid(x)


def smooth_leaky_relu_inverse(
    y: torch.Tensor, negative_slope: float = 0.2, tol: float = 1e-12, max_iter: int = 100
) -> torch.Tensor:
    r""":math:`\sigma^{-1}(y)` by safeguarded Newton iteration in float64 (result cast back).

    Bracket: with the piecewise-linear leaky ReLU :math:`\ell(x) = \max(x, \alpha x)` and
    :math:`0 \le \log(1 + e^x) - \max(x, 0) \le \log 2`, we have
    :math:`\ell(x) \le \sigma(x) \le \ell(x) + (1 - \alpha) \log 2`, hence
    :math:`x^* \in [\ell^{-1}(y - (1 - \alpha)\log 2),\ \ell^{-1}(y)]`. Newton starts at the upper
    end, where :math:`\sigma(x) - y \ge 0`; since :math:`\sigma` is increasing and convex the
    iterates then decrease monotonically to :math:`x^*` (quadratically near it). As a safeguard,
    every iterate is kept inside the bracket (bisection if a step would leave it), and the bracket
    shrinks with the sign of the residual. Iteration stops when every step is below
    ``tol * max(1, |x|)``; ``max_iter`` is a hard cap (about 6 steps suffice in practice).
    """
    a = float(negative_slope)
    out_dtype = y.dtype
    y64 = y.to(torch.float64)

    def ell_inv(v: torch.Tensor) -> torch.Tensor:
        return torch.where(v >= 0, v, v / a)

    hi = ell_inv(y64)
    lo = ell_inv(y64 - (1.0 - a) * math.log(2.0))
    x = hi.clone()
    for _ in range(max_iter):
        f = smooth_leaky_relu(x, a) - y64
        hi = torch.where(f > 0, x, hi)
        lo = torch.where(f < 0, x, lo)
        x_new = x - f / smooth_leaky_relu_derivative(x, a)
        outside = (x_new < lo) | (x_new > hi)
        x_new = torch.where(outside, 0.5 * (lo + hi), x_new)
        step = (x_new - x).abs()
        x = x_new
        if bool((step <= tol * x.abs().clamp(min=1.0)).all()):
            break
    return x.to(out_dtype)


_NONLINEARITIES = ("smooth_leaky_relu", "leaky_relu")


def _check_nonlinearity(name: str, owner: str) -> str:
    if name not in _NONLINEARITIES:
        raise ConfigError(
            f"Parameter 'nonlinearity' of {owner} must be one of {list(_NONLINEARITIES)}, "
            f"got {name!r}."
        )
    return name


class _ElementwiseMLP(Mixing):
    r"""Shared machinery of :math:`g(z) = W_L \phi(W_{L-1} \cdots \phi(W_1 z))` with square
    ``weight_0 … weight_{L-1}`` buffers and an invertible element-wise :math:`\phi` between layers.

    Subclasses register the weights and set ``n_layers``, ``negative_slope``, ``nonlinearity``.
    """

    n_layers: int
    negative_slope: float
    nonlinearity: str

    @property
    def weights(self) -> list[torch.Tensor]:
        """The weights ``[W_1, …, W_L]`` (buffers), each ``(dim, dim)``, acting as ``h @ W.T``."""
        return [getattr(self, f"weight_{i}") for i in range(self.n_layers)]

    def _phi(self, a: torch.Tensor) -> torch.Tensor:
        if self.nonlinearity == "leaky_relu":
            return F.leaky_relu(a, self.negative_slope)
        return smooth_leaky_relu(a, self.negative_slope)

    def _phi_derivative(self, a: torch.Tensor) -> torch.Tensor:
        if self.nonlinearity == "leaky_relu":
            return leaky_relu_derivative(a, self.negative_slope)
        return smooth_leaky_relu_derivative(a, self.negative_slope)

    def _phi_inverse(self, y: torch.Tensor) -> torch.Tensor:
        if self.nonlinearity == "leaky_relu":
            return leaky_relu_inverse(y, self.negative_slope)
        return smooth_leaky_relu_inverse(y, self.negative_slope)

    def _solve(self, w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Rows of ``h`` (n, d) mapped through :math:`W^{-1}`."""
        return torch.linalg.solve(w, h.mT).mT

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self._check_input(z, "z", self.dim_in)
        h = z
        last = self.n_layers - 1
        for i, w in enumerate(self.weights):
            h = h @ w.mT
            if i < last:
                h = self._phi(h)
        return h

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        r"""Exact inverse: linear solves and :math:`\phi^{-1}`, layer by layer in reverse."""
        self._check_input(x, "x", self.dim_out)
        shape = x.shape
        h = x.reshape(-1, self.dim_out)
        for i in reversed(range(self.n_layers)):
            if i < self.n_layers - 1:
                h = self._phi_inverse(h)
            h = self._solve(self.weights[i], h)
        return h.reshape(shape)

    def _pre_activations(self, z: torch.Tensor) -> list[torch.Tensor]:
        out = []
        h = z
        for w in self.weights[:-1]:
            a = h @ w.mT
            out.append(a)
            h = self._phi(a)
        return out

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""Closed form :math:`J = W_L D_{L-1} W_{L-1} \cdots D_1 W_1`,
        :math:`D_l = \operatorname{diag} \phi'(a_l)`; shape ``(..., dim, dim)``."""
        self._check_input(z, "z", self.dim_in)
        ws = self.weights
        jac = ws[0].expand(*z.shape[:-1], self.dim_out, self.dim_in)
        for a, w in zip(self._pre_activations(z), ws[1:], strict=True):
            jac = w @ (self._phi_derivative(a).unsqueeze(-1) * jac)
        return jac

    def _log_abs_det_weights(self) -> torch.Tensor:
        return sum(torch.linalg.slogdet(w).logabsdet for w in self.weights)

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`\sum_l \log|\det W_l| + \sum_{l<L} \sum_i \log \phi'(a_{l,i})`."""
        self._check_input(z, "z", self.dim_in)
        out = torch.zeros(z.shape[:-1], dtype=z.dtype, device=z.device)
        out = out + self._log_abs_det_weights()
        for a in self._pre_activations(z):
            out = out + self._phi_derivative(a).log().sum(-1)
        return out


class SmoothLeakyMLP(_ElementwiseMLP):
    r"""Paper 004, Sec. 4.1: :math:`g(z) = Q_L \sigma(Q_{L-1} \cdots \sigma(Q_1 z))`.

    :math:`Q_l` are Haar-random orthogonal ``dim × dim`` matrices (QR of a standard Gaussian
    matrix with the sign fix), drawn in order from a ``torch.Generator`` seeded with ``seed``;
    :math:`\sigma` is the smooth leaky ReLU :math:`0.2x + 0.8\log(1 + e^x)` (``negative_slope``
    = 0.2), applied between layers: ``n_layers`` = 3 gives 3 orthogonal layers and 2
    nonlinearities, no biases. Since :math:`|\det Q_l| = 1`,
    :math:`\log|\det J| = \sum_{l<L}\sum_i \log\sigma'(a_{l,i})`.
    The inverse applies :math:`Q_l^T` and :func:`smooth_leaky_relu_inverse` (round trip
    :math:`\le 10^{-10}` in float64).
    """

    def __init__(
        self,
        dim: int,
        n_layers: int = 3,
        negative_slope: float = 0.2,
        seed: int = 0,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = "SmoothLeakyMLP"
        dim = check_dim_arg("dim", dim, owner)
        super().__init__(dim, dim)
        self.n_layers = check_dim_arg("n_layers", n_layers, owner)
        self.negative_slope = _check_slope(negative_slope, owner)
        self.nonlinearity = "smooth_leaky_relu"
        self.seed = check_seed(seed, owner)
        dtype = resolve_dtype(dtype, owner)
        gen = make_generator(self.seed)
        for i in range(self.n_layers):
            self.register_buffer(f"weight_{i}", random_orthogonal(dim, gen).to(dtype))

    def _solve(self, w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return h @ w  # Q^{-1} = Q^T, so rows map as h @ (Q^T)^T = h @ Q

    def _log_abs_det_weights(self) -> torch.Tensor:
        return torch.zeros((), dtype=self.weight_0.dtype, device=self.weight_0.device)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim_in}, n_layers={self.n_layers}, "
            f"negative_slope={self.negative_slope}, seed={self.seed}"
        )


class TriangularMLP(_ElementwiseMLP):
    r"""Paper 004, Sec. 4.2 / Fig. 4: an MLP with upper-triangular weights, outside the IMA class.

    :math:`g(z) = U_L \phi(U_{L-1} \cdots \phi(U_1 z))` with square upper-triangular
    :math:`U_l` and an invertible element-wise :math:`\phi` between layers. The paper states only
    "square upper-triangular weight matrices and invertible element-wise nonlinearities"; its code
    for this experiment is not public. unmix's choices:

    * ``n_layers`` = 3 bias-free layers (as the paper's other MLP mixing, Sec. 4.1), nonlinearities
      between layers, none after the last;
    * :math:`\phi` = the smooth leaky ReLU :math:`0.2x + 0.8\log(1 + e^x)` of Sec. 4.1
      (``nonlinearity="leaky_relu"`` gives the piecewise-linear one instead);
    * entries above the diagonal :math:`U(-1, 1)`; diagonal entries :math:`\pm U(0.5, 1.5)` with a
      random sign, so :math:`|\det U_l| \ge 0.5^d > 0`; below the diagonal exactly 0. Drawn in
      float64 from a ``torch.Generator`` seeded with ``seed``: per layer, first the
      ``dim × dim`` uniform matrix (its strict upper part is used), then the ``dim`` magnitudes,
      then the ``dim`` signs.

    The Jacobian :math:`J = U_L D_{L-1} \cdots D_1 U_1` is upper-triangular, so
    :math:`\log|\det J| = \sum_l \sum_i \log|U_{l,ii}| + \sum_{l<L} \sum_i \log \phi'(a_{l,i})`.
    Its columns are not orthogonal unless :math:`J` is diagonal (a triangular matrix with
    orthogonal columns is diagonal), so :math:`c_{IMA}(g, z) > 0`: :math:`g` is outside the IMA
    class, as the experiment requires. Exact inverse: back-substitution
    (``solve_triangular``) and :math:`\phi^{-1}` layer by layer.
    """

    def __init__(
        self,
        dim: int,
        n_layers: int = 3,
        nonlinearity: Literal["smooth_leaky_relu", "leaky_relu"] = "smooth_leaky_relu",
        negative_slope: float = 0.2,
        diag_range: tuple[float, float] = (0.5, 1.5),
        seed: int = 0,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = "TriangularMLP"
        dim = check_dim_arg("dim", dim, owner)
        super().__init__(dim, dim)
        self.n_layers = check_dim_arg("n_layers", n_layers, owner)
        self.nonlinearity = _check_nonlinearity(nonlinearity, owner)
        if self.nonlinearity == "smooth_leaky_relu":
            self.negative_slope = _check_slope(negative_slope, owner)
        else:
            self.negative_slope = check_finite_real("negative_slope", negative_slope, owner, True)
        try:
            lo, hi = (float(v) for v in diag_range)
        except (TypeError, ValueError):
            lo, hi = math.nan, math.nan
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
            raise ConfigError(
                f"Parameter 'diag_range' of {owner} must be (low, high) with 0 < low <= high, "
                f"got {diag_range!r}: the diagonal magnitudes must be bounded away from 0."
            )
        self.diag_range = (lo, hi)
        self.seed = check_seed(seed, owner)
        dtype = resolve_dtype(dtype, owner)
        gen = make_generator(self.seed)
        for i in range(self.n_layers):
            full = torch.rand(dim, dim, generator=gen, dtype=torch.float64) * 2.0 - 1.0
            mag = lo + (hi - lo) * torch.rand(dim, generator=gen, dtype=torch.float64)
            sign = torch.where(torch.rand(dim, generator=gen, dtype=torch.float64) < 0.5, -1.0, 1.0)
            w = torch.triu(full, diagonal=1) + torch.diag(sign * mag)
            self.register_buffer(f"weight_{i}", w.to(dtype))

    def _solve(self, w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.linalg.solve_triangular(w, h.mT, upper=True).mT

    def _log_abs_det_weights(self) -> torch.Tensor:
        return sum(torch.diagonal(w).abs().log().sum() for w in self.weights)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim_in}, n_layers={self.n_layers}, nonlinearity={self.nonlinearity!r}, "
            f"negative_slope={self.negative_slope}, diag_range={self.diag_range}, seed={self.seed}"
        )
