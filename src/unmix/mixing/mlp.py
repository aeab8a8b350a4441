r"""The invertible leaky-ReLU MLP mixing of Zimmermann et al. (paper 000, Sec. 4.1 and Appx. A.3).

.. math::

    g(z) = W_L\, \sigma(W_{L-1} \cdots \sigma(W_1 z)), \qquad
    \sigma(a) = \begin{cases} a & a > 0 \\ s\,a & a \le 0 \end{cases}

with ``n_layers`` = :math:`L` bias-free square weight matrices and the LeakyReLU :math:`\sigma` of
negative slope :math:`s` (0.2 in the paper, "the angle of the negative slope") *between* them —
:math:`L-1` nonlinearities, none after the last layer. Paper 000 speaks of "three hidden layers";
its reference code (facts in ``shared/papers/README.md``) has three linear layers and two
LeakyReLUs, which is what ``n_layers=3`` gives.

Each weight matrix has entries :math:`U(-1, 1)` and L2-normalised columns; its 2-norm condition
number is kept at or below a threshold set by a pool of random matrices (see
:class:`InvertibleMLP`). Because :math:`s > 0` and every :math:`W_l` is invertible, :math:`g` is a
bijection of :math:`\mathbb{R}^d` with an exact inverse.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from unmix.errors import ConfigError
from unmix.mixing.base import (
    Mixing,
    check_dim_arg,
    check_finite_real,
    check_seed,
    resolve_dtype,
)

_CHUNK = 4096
"""Matrices drawn per batch while searching for a well-conditioned layer (fixed: the chosen
weights depend on it, because the rest of a chunk is discarded once a layer is accepted)."""

_SCREEN_SLACK = 1e-6
"""Relative slack on the cheap lower bound: a matrix is only skipped without an exact SVD when
its lower bound exceeds ``threshold * (1 + _SCREEN_SLACK)``, far above floating-point error."""


def leaky_relu_inverse(y: torch.Tensor, negative_slope: float) -> torch.Tensor:
    r"""Inverse of the LeakyReLU: :math:`y` for :math:`y > 0`, :math:`y / s` otherwise (s > 0)."""
    return torch.where(y > 0, y, y / negative_slope)


def leaky_relu_derivative(a: torch.Tensor, negative_slope: float) -> torch.Tensor:
    r""":math:`\sigma'(a)`: 1 for :math:`a > 0`, :math:`s` for :math:`a \le 0` (torch's convention
    at 0)."""
    return torch.where(a > 0, torch.ones_like(a), torch.full_like(a, negative_slope))


def condition_number(w: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    r"""2-norm condition numbers :math:`\kappa_2(W) = s_{max}(W) / s_{min}(W)` of a batch
    ``(..., n, n)`` (``inf`` for a singular matrix), from the singular values; accepts a torch
    tensor or a numpy array and returns the same kind."""
    if isinstance(w, np.ndarray):
        s = np.linalg.svd(w, compute_uv=False)
        with np.errstate(divide="ignore"):
            return s[..., 0] / s[..., -1]
    s = torch.linalg.svdvals(w)
    return s[..., 0] / s[..., -1]


def condition_number_lower_bound(w: np.ndarray, n_iter: int = 2) -> np.ndarray:
    r"""A cheap lower bound on :math:`\kappa_2(W) = \|W\|_2 \|W^{-1}\|_2` for a batch ``(m, n, n)``.

    For any non-zero vector :math:`u`, :math:`\|A\|_2 \ge \|A u\| / \|u\|`; ``n_iter``
    power-iteration steps on :math:`A^T A`, started from the all-ones vector, make the ratio close
    to :math:`\|A\|_2`, for :math:`A = W` and :math:`A = W^{-1}`. Used only to skip the exact SVD
    for matrices clearly above the threshold (about 99.9 % of them at the paper's threshold). If a
    matrix of the batch is exactly singular, returns zeros ("no information") for the whole batch.
    """
    n = w.shape[-1]
    try:
        w_inv = np.linalg.inv(w)
    except np.linalg.LinAlgError:
        return np.zeros(w.shape[0])

    def norm_estimate(a: np.ndarray) -> np.ndarray:
        u = np.full((a.shape[0], n, 1), n**-0.5)
        for _ in range(n_iter):
            u = np.swapaxes(a, -1, -2) @ (a @ u)
            u = u / np.sqrt((u * u).sum(axis=-2, keepdims=True))
        v = a @ u
        return np.sqrt((v * v).sum(axis=(-2, -1)))

    return norm_estimate(w) * norm_estimate(w_inv)


def _draw_column_normalised(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` matrices ``dim × dim`` (float64) with entries U(-1, 1) and unit-L2-norm columns."""
    w = rng.uniform(-1.0, 1.0, size=(n, dim, dim))
    return w / np.sqrt((w * w).sum(axis=-2, keepdims=True))


@functools.lru_cache(maxsize=64)
def _search_weights(
    dim: int, n_layers: int, pool_size: int, quantile: float, seed: int, max_draws: int
) -> tuple[float, tuple[tuple[np.ndarray, float, int], ...]]:
    """The threshold and, per layer, ``(weight, condition number, draws)``: the paper's rule.

    Deterministic in its arguments, so it is cached (a sweep builds the same mixing many times).
    """
    rng = np.random.default_rng(seed)
    conds = []
    left = pool_size
    while left > 0:
        n = min(_CHUNK, left)
        conds.append(condition_number(_draw_column_normalised(n, dim, rng)))
        left -= n
    threshold = float(np.quantile(np.concatenate(conds), quantile))
    layers = tuple(
        _draw_layer(dim, threshold, rng, layer, seed, max_draws) for layer in range(n_layers)
    )
    for w, _, _ in layers:
        w.setflags(write=False)
    return threshold, layers


def _draw_layer(
    dim: int, threshold: float, rng: np.random.Generator, layer: int, seed: int, max_draws: int
) -> tuple[np.ndarray, float, int]:
    screen = threshold < 1e6  # the float64 lower bound is reliable far beyond this
    drawn = 0
    while drawn < max_draws:
        n = min(_CHUNK, max_draws - drawn)
        w = _draw_column_normalised(n, dim, rng)
        if screen:
            lb = condition_number_lower_bound(w)
            cand = np.flatnonzero(~(lb > threshold * (1.0 + _SCREEN_SLACK)))
        else:
            cand = np.arange(n)
        if cand.size > 0:
            conds = condition_number(w[cand])
            ok = np.flatnonzero(conds <= threshold)
            if ok.size > 0:
                i = int(ok[0])
                j = int(cand[i])
                return w[j].copy(), float(conds[i]), drawn + j + 1
        drawn += n
    raise ConfigError(
        f"InvertibleMLP(seed={seed}): layer {layer} found no matrix with condition "
        f"number <= {threshold:.4g} in max_draws_per_layer={max_draws} draws "
        "(the pool minimum can be very rare). Use another seed, raise max_draws_per_layer, "
        "or set cond_quantile > 0 (e.g. 1e-3)."
    )


class InvertibleMLP(Mixing):
    r"""Invertible leaky-ReLU MLP :math:`g(z) = W_L \sigma(\cdots \sigma(W_1 z))` (paper 000, 4.1).

    Parameters
    ----------
    dim:
        :math:`d`, the latent and observation dimension.
    n_layers:
        :math:`L \ge 1` bias-free ``dim × dim`` linear layers; LeakyReLU between consecutive ones
        (:math:`L - 1` nonlinearities, none after the last layer).
    negative_slope:
        :math:`s > 0`, the LeakyReLU slope for negative inputs (0.2 in paper 000, Appx. A.3).
    cond_pool_size, cond_quantile:
        The condition-number rule, exactly: (1) draw a pool of ``cond_pool_size`` matrices with
        entries :math:`U(-1,1)` and L2-normalised columns; (2) the threshold :math:`\kappa^*` is
        the ``cond_quantile`` quantile (``numpy.quantile``, linear interpolation) of their 2-norm
        condition numbers :math:`\kappa_2 = s_{max}/s_{min}`; ``cond_quantile=0.0`` is the pool
        minimum, as in the paper ("minimum condition number of 25 000 uniformly distributed
        samples") and its reference code; (3) for each layer in turn, draw fresh matrices of the
        same kind in chunks of 4096 and take the first, in draw order, with
        :math:`\kappa_2 \le \kappa^*` (a cheap lower bound skips the SVD of matrices that are
        clearly above; it changes no choice). All draws come from one
        ``numpy.random.default_rng(seed)``: the pool first, then the layers in order.
    max_draws_per_layer:
        Give up (ConfigError) if a layer needs more draws than this; default
        ``1000 * cond_pool_size``. With the pool minimum as threshold the search is heavy-tailed:
        the acceptance probability :math:`p = F(\kappa^*)` is itself random,
        :math:`p \sim \mathrm{Beta}(1, N)` for a pool of :math:`N`, so a layer needs more than
        :math:`k` draws with probability exactly :math:`E[(1-p)^k] = N / (N + k)`: median
        :math:`N`, but more than :math:`10N` for 1 layer in 11. On the shared 2-core CPU a draw
        costs about 5–15 µs, so for ``dim=10`` a typical seed takes 1–2 s and about one in five
        takes 5–15 s; about 0.2 % of seeds (≈ 1.8 N / cap) hit the default cap. A
        ``cond_quantile`` of e.g. ``1e-3`` makes every layer need about 1000 draws.
    seed:
        Seed of the local generator; the same arguments always give the same weights.
    dtype:
        dtype of the stored weights (default ``torch.get_default_dtype()``); drawn in float64.

    Attributes
    ----------
    weights:
        ``[W_1, …, W_L]``, each ``(dim, dim)`` acting as :math:`h \mapsto W h` (torch ``Linear``
        convention: ``h @ W.T``); buffers ``weight_0 … weight_{L-1}``.
    cond_threshold:
        :math:`\kappa^*`.
    layer_conds, n_draws:
        :math:`\kappa_2(W_l)` (float64, before the cast) and the number of draws each layer took.
    """

    def __init__(
        self,
        dim: int,
        n_layers: int = 3,
        negative_slope: float = 0.2,
        cond_pool_size: int = 25_000,
        cond_quantile: float = 0.0,
        seed: int = 0,
        max_draws_per_layer: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = "InvertibleMLP"
        dim = check_dim_arg("dim", dim, owner)
        super().__init__(dim, dim)
        self.n_layers = check_dim_arg("n_layers", n_layers, owner)
        self.negative_slope = check_finite_real("negative_slope", negative_slope, owner, True)
        self.cond_pool_size = check_dim_arg("cond_pool_size", cond_pool_size, owner)
        q = check_finite_real("cond_quantile", cond_quantile, owner)
        if not 0.0 <= q <= 1.0:
            raise ConfigError(
                f"Parameter 'cond_quantile' of {owner} must lie in [0, 1], got {cond_quantile!r}:"
                " use 0.0 for the pool minimum (the paper's rule)."
            )
        self.cond_quantile = q
        self.seed = check_seed(seed, owner)
        if max_draws_per_layer is None:
            max_draws_per_layer = 1000 * self.cond_pool_size
        self.max_draws_per_layer = check_dim_arg("max_draws_per_layer", max_draws_per_layer, owner)
        dtype = resolve_dtype(dtype, owner)

        self.cond_threshold, layers = _search_weights(
            self.dim_in,
            self.n_layers,
            self.cond_pool_size,
            self.cond_quantile,
            self.seed,
            self.max_draws_per_layer,
        )
        self.layer_conds: list[float] = [cond for _, cond, _ in layers]
        self.n_draws: list[int] = [draws for _, _, draws in layers]
        for layer, (w, _, _) in enumerate(layers):
            self.register_buffer(f"weight_{layer}", torch.from_numpy(w.copy()).to(dtype))

    # ---------------------------------------------------------------------------- interface
    @property
    def weights(self) -> list[torch.Tensor]:
        """The weight matrices ``[W_1, …, W_L]`` (buffers), each ``(dim, dim)``."""
        return [getattr(self, f"weight_{i}") for i in range(self.n_layers)]

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self._check_input(z, "z", self.dim_in)
        h = z
        last = self.n_layers - 1
        for i, w in enumerate(self.weights):
            h = h @ w.mT
            if i < last:
                h = F.leaky_relu(h, self.negative_slope)
        return h

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        r"""Exact inverse: :math:`z = W_1^{-1} \sigma^{-1}(W_2^{-1} \cdots \sigma^{-1}(W_L^{-1} x))`
        (linear solves, no explicit inverse matrices)."""
        self._check_input(x, "x", self.dim_out)
        shape = x.shape
        h = x.reshape(-1, self.dim_out)
        for i in reversed(range(self.n_layers)):
            if i < self.n_layers - 1:
                h = leaky_relu_inverse(h, self.negative_slope)
            h = torch.linalg.solve(self.weights[i], h.mT).mT
        return h.reshape(shape)

    def _pre_activations(self, z: torch.Tensor) -> list[torch.Tensor]:
        """Inputs :math:`a_l = W_l h_{l-1}` of the nonlinearities, :math:`l = 1 … L-1`."""
        out = []
        h = z
        for w in self.weights[:-1]:
            a = h @ w.mT
            out.append(a)
            h = F.leaky_relu(a, self.negative_slope)
        return out

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""Closed form :math:`J = W_L D_{L-1} W_{L-1} \cdots D_1 W_1`, with
        :math:`D_l = \operatorname{diag}\sigma'(a_l)`; shape ``(..., dim, dim)``."""
        self._check_input(z, "z", self.dim_in)
        ws = self.weights
        jac = ws[0].expand(*z.shape[:-1], self.dim_out, self.dim_in)
        for a, w in zip(self._pre_activations(z), ws[1:], strict=True):
            jac = w @ (leaky_relu_derivative(a, self.negative_slope).unsqueeze(-1) * jac)
        return jac

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`\sum_l \log|\det W_l| + \sum_{l<L} \sum_i \log \sigma'(a_{l,i})`."""
        self._check_input(z, "z", self.dim_in)
        const = sum(torch.linalg.slogdet(w).logabsdet for w in self.weights)
        out = torch.zeros(z.shape[:-1], dtype=z.dtype, device=z.device) + const
        for a in self._pre_activations(z):
            out = out + leaky_relu_derivative(a, self.negative_slope).log().sum(-1)
        return out

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim_in}, n_layers={self.n_layers}, negative_slope={self.negative_slope}, "
            f"cond_threshold={self.cond_threshold:.4g}, seed={self.seed}"
        )
