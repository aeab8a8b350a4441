r"""The von Mises–Fisher distribution on the unit sphere, torch-native and batched.

Density
-------
For a mean direction :math:`\mu \in S^{d-1}` (``loc``, a unit vector in :math:`\mathbb{R}^d`,
:math:`d \ge 2`) and a concentration :math:`\kappa > 0` (``concentration``; a precision-like
parameter, *not* a standard deviation: the angular spread is roughly :math:`1/\sqrt{\kappa}`),

.. math::

    p(x \mid \mu, \kappa) = C_d(\kappa)\, e^{\kappa \mu^\top x}, \qquad
    C_d(\kappa) = \frac{\kappa^{d/2-1}}{(2\pi)^{d/2} I_{d/2-1}(\kappa)},
    \qquad x \in S^{d-1},

with respect to the surface measure of the unit sphere :math:`S^{d-1} = \{x : \|x\|_2 = 1\}`
(:math:`I_\nu` is the modified Bessel function of the first kind). As :math:`\kappa \to 0` it tends
to the uniform distribution, :math:`C_d \to 1/|S^{d-1}|`. This is the positive-pair conditional
:math:`p(\tilde z \mid z) = C_p^{-1} e^{\kappa \tilde z^\top z}` of paper 000 (Zimmermann et al.
2021, eq. (2)) with :math:`\mu = z` and :math:`C_p = 1/C_d(\kappa)`.

Moments: :math:`\mathbb{E}[x] = A_d(\kappa)\,\mu` with the mean resultant length
:math:`A_d(\kappa) = I_{d/2}(\kappa) / I_{d/2-1}(\kappa) \in (0, 1)`
(:func:`vmf_mean_resultant_length`), and the entropy is
:math:`H = -\log C_d(\kappa) - \kappa A_d(\kappa)`.

Sampling (Wood 1994)
--------------------
Write :math:`x = w\mu + \sqrt{1-w^2}\, v` with :math:`w = \mu^\top x \in [-1, 1]` and :math:`v` a
unit vector orthogonal to :math:`\mu`. Under the vMF, :math:`w` and :math:`v` are independent,
:math:`v` is uniform on the :math:`(d-2)`-sphere orthogonal to :math:`\mu`, and :math:`w` has
density :math:`\propto e^{\kappa w}(1-w^2)^{(d-3)/2}` on :math:`[-1, 1]`. Wood's rejection sampler
for :math:`w` sets

.. math::

    b = \frac{d-1}{2\kappa + \sqrt{4\kappa^2 + (d-1)^2}}
      \;\Big(= \frac{-2\kappa + \sqrt{4\kappa^2 + (d-1)^2}}{d-1}\text{, cancellation-free}\Big),
    \quad x_0 = \frac{1-b}{1+b}, \quad c = \kappa x_0 + (d-1)\log(1 - x_0^2),

draws :math:`Z \sim \mathrm{Beta}(\tfrac{d-1}2, \tfrac{d-1}2)`, :math:`U \sim \mathcal{U}(0, 1)`,
proposes :math:`W = \frac{1 - (1+b)Z}{1 - (1-b)Z}` and accepts when

.. math::

    \kappa W + (d-1)\log(1 - x_0 W) - c \;\ge\; \log U .

Rejected entries are redrawn until all are accepted, so the result is an *exact* draw. This module
draws :math:`Z = X/(X+Y)` with :math:`X, Y \sim \mathrm{Gamma}(\tfrac{d-1}2, 1)` i.i.d.
(equivalently squared norms of :math:`(d-1)`-dimensional standard normal vectors, up to the same
factor 2), which turns every quantity into a ratio without cancellation:

.. math::

    W = \frac{Y - bX}{Y + bX},\qquad 1 - W^2 = \frac{4bXY}{(Y + bX)^2},\qquad
    \frac{2\kappa b\,(Y - X)}{(1+b)(Y + bX)} + (d-1)\log\frac{(1+b)(X+Y)}{2(Y + bX)} \ge \log U,

the last line being Wood's acceptance rule rewritten exactly (it is
:math:`\kappa(W - x_0) + (d-1)[\log(1 - x_0W) - \log(1-x_0^2)]`), finite for every positive
finite :math:`\kappa` (tested from :math:`10^{-300}` to :math:`10^{300}`). The Gamma variates come
from Marsaglia & Tsang's (2000) exact rejection sampler (:math:`a \ge 1`), :math:`N^2/2` for
:math:`a = 1/2` (:math:`d = 2`) and :math:`-\log U` for :math:`a = 1` (:math:`d = 3`), all built on
``torch.randn``/``torch.rand`` with the caller's ``torch.Generator`` (torch's own Gamma/Beta
samplers take no generator). The tangent direction is
:math:`v = Q(0, \xi/\|\xi\|)` with :math:`\xi \sim \mathcal{N}(0, I_{d-1})` and :math:`Q` a
Householder-based orthogonal map sending :math:`e_1` to :math:`\mu` (so :math:`e_1^\perp` to
:math:`\mu^\perp`); then :math:`x = Q(w, \sqrt{1-w^2}\,\xi/\|\xi\|)`.

Everything runs in float64 (on the generator's device when a generator is given, else on ``loc``'s
device) and the result is cast back to ``loc``'s dtype and device. There is no reparameterised
sampler (:meth:`VonMisesFisher.rsample` raises): the samples carry no gradient, and a fixed
generator seed gives identical samples.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special as sp
from torch.distributions import constraints

from unmix.distributions.base import Distribution, check_positive
from unmix.errors import ConfigError
from unmix.special import log_bessel_iv, vmf_log_normalizer

__all__ = ["VonMisesFisher", "vmf_mean_resultant_length"]

_MAX_ROUNDS = 10_000  # rejection rounds before we conclude the parameters are broken (e.g. NaN)


def _unit_tolerance(dtype: torch.dtype) -> float:
    """How far ``‖x‖`` may be from 1 and still count as a unit vector, for a given dtype."""
    return min(1e-2, max(1e-6, 1000.0 * torch.finfo(dtype).eps))


class _UnitSphere(constraints.Constraint):
    r"""The unit sphere :math:`\{x : \|x\|_2 = 1\}` along the last dimension (dtype tolerance)."""

    is_discrete = False
    event_dim = 1

    def check(self, value: torch.Tensor) -> torch.Tensor:
        tol = _unit_tolerance(value.dtype) if value.is_floating_point() else 1e-6
        return (value.norm(dim=-1) - 1).abs() <= tol

    def __repr__(self) -> str:
        return "UnitSphere()"


unit_sphere = _UnitSphere()


def _log_ive_hankel(v: np.ndarray, x: np.ndarray, terms: int = 8) -> np.ndarray:
    r"""Hankel's expansion :math:`I_\nu(x)e^{-x} \approx (2\pi x)^{-1/2}\sum_k (-1)^k a_k(\nu)/x^k`,
    :math:`a_k = \prod_{j=1}^k (4\nu^2 - (2j-1)^2) / (k!\,8^k)` (A&S 9.7.1); used for
    :math:`x > 10^8`, :math:`\nu^2 < 2\cdot10^{-3}x`, where each term is below ~1e-3 times the
    previous one, so 8 terms are far beyond float64 precision."""
    mu = 4.0 * v * v
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, terms + 1):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        total = total + term
    return -0.5 * np.log(2 * np.pi * x) + np.log(total)


class _LogBesselIve(torch.autograd.Function):
    r""":math:`\log(I_\nu(x)e^{-x})` in float64, differentiable in ``x``.

    scipy's exponentially scaled ``ive`` keeps full relative precision for large ``x``, where
    ``log_bessel_iv(ν, x) - x`` would carry an absolute rounding error of about ``x·1e-16`` (the
    ``+ x`` inside ``log I``). Where ``ive`` under/overflows (order ≫ argument), it falls back to
    :func:`unmix.special.log_bessel_iv` minus ``x``, whose rounding error is then negligible.
    :math:`\partial_x = I_{\nu+1}/I_\nu + \nu/x - 1`.
    """

    @staticmethod
    def forward(ctx, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        vn = v.detach().cpu().double().numpy()
        xn = x.detach().cpu().double().numpy()
        with np.errstate(all="ignore"):
            ive = sp.ive(vn, xn)
            ok = np.isfinite(ive) & (ive > 1e-290)
            out = np.where(ok, np.log(np.where(ok, ive, 1.0)), 0.0)
        if not ok.all():
            # Beyond scipy's range (x > ~1e9): Hankel's large-argument expansion when x >> ν².
            hankel = ~ok & (xn > 1e8) & (vn * vn < 2e-3 * xn)
            if hankel.any():
                out[hankel] = _log_ive_hankel(vn[hankel], xn[hankel])
            bad = ~ok & ~hankel
            if bad.any():
                fallback = log_bessel_iv(torch.from_numpy(vn[bad]), torch.from_numpy(xn[bad]))
                out[bad] = fallback.detach().numpy() - xn[bad]
        result = torch.from_numpy(out).to(device=x.device, dtype=torch.float64)
        ctx.save_for_backward(v, x, result)
        return result

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        v, x, out = ctx.saved_tensors
        ratio = torch.exp(_LogBesselIve.apply(v + 1, x) - out)
        return None, grad * (ratio + v / x - 1.0)


def _log_bessel_ive(v: float, x: torch.Tensor) -> torch.Tensor:
    """``log(I_v(x) e^{-x})`` for a float64 tensor ``x >= 0`` (see :class:`_LogBesselIve`)."""
    vt = torch.full_like(x, float(v))
    return _LogBesselIve.apply(vt, x)


def _as_kappa(kappa: torch.Tensor | float) -> torch.Tensor:
    if not torch.is_tensor(kappa):
        return torch.as_tensor(kappa, dtype=torch.float64)
    return kappa if kappa.is_floating_point() else kappa.double()


def _log_mean_resultant_length(dim: int, kappa: torch.Tensor) -> torch.Tensor:
    r""":math:`\log A_d(\kappa) = \log I_{d/2}(\kappa) - \log I_{d/2-1}(\kappa)` (float64), taken as
    the difference of exponentially scaled logs so no :math:`\kappa`-sized terms cancel."""
    k64 = kappa.double()
    return _log_bessel_ive(dim / 2.0, k64) - _log_bessel_ive(dim / 2.0 - 1.0, k64)


def vmf_mean_resultant_length(dim: int, kappa: torch.Tensor | float) -> torch.Tensor:
    r"""Mean resultant length :math:`A_d(\kappa) = I_{d/2}(\kappa)/I_{d/2-1}(\kappa)` of the vMF.

    :math:`A_d(\kappa) = \lVert\mathbb{E}[x]\rVert`. Computed as
    :math:`\exp(\log I_{d/2}(\kappa) - \log I_{d/2-1}(\kappa))`, with both logs taken in the
    exponentially scaled form :math:`\log(I_\nu(\kappa)e^{-\kappa})` (scipy's ``ive``; falling back
    to :func:`unmix.special.log_bessel_iv` where that underflows), so it keeps float64 relative
    precision for tiny and huge :math:`\kappa` (it tends to :math:`\kappa/d` as :math:`\kappa \to 0`
    and to :math:`1 - (d-1)/(2\kappa)` as :math:`\kappa \to \infty`). Differentiable in ``kappa``;
    returned in ``kappa``'s dtype (float64 for Python numbers).
    """
    if not isinstance(dim, int) or dim < 2:
        raise ConfigError(
            f"dim must be an integer >= 2 (ambient dimension of S^(d-1)), got {dim!r}."
        )
    kappa = _as_kappa(kappa)
    return torch.exp(_log_mean_resultant_length(dim, kappa)).to(kappa.dtype)


def _vmf_entropy(dim: int, kappa: torch.Tensor) -> torch.Tensor:
    r""":math:`H = -\log C_d(\kappa) - \kappa A_d(\kappa)` rearranged to avoid cancellation:
    :math:`H = -\nu\log\kappa + \tfrac d2\log 2\pi + \log(I_\nu(\kappa)e^{-\kappa})
    + \kappa(1 - A_d(\kappa))`, :math:`\nu = d/2 - 1`, with
    :math:`1 - A_d = -\mathrm{expm1}(\log A_d)`."""
    k64 = kappa.double()
    nu = dim / 2.0 - 1.0
    log_ive = _log_bessel_ive(nu, k64)
    one_minus_a = -torch.expm1(_log_mean_resultant_length(dim, k64))
    h = -nu * torch.log(k64) + 0.5 * dim * math.log(2 * math.pi) + log_ive + k64 * one_minus_a
    return h.to(kappa.dtype)


# --------------------------------------------------------------------------------------------------
# Generator-friendly exact samplers (float64), vectorised rejection.
# --------------------------------------------------------------------------------------------------


def _standard_gamma(
    alpha: float, n: int, generator: torch.Generator | None, device: torch.device
) -> torch.Tensor:
    r"""``n`` i.i.d. :math:`\mathrm{Gamma}(\alpha, 1)` variates in float64, exact.

    :math:`\alpha = 1/2`: :math:`N^2/2`; :math:`\alpha = 1`: :math:`-\log(1-U)`; :math:`\alpha > 1`:
    Marsaglia & Tsang (2000) — with :math:`d = \alpha - 1/3`, :math:`c = 1/\sqrt{9d}`, propose
    :math:`V = (1 + cN)^3` and accept when :math:`V > 0` and
    :math:`\log U < N^2/2 + d - dV + d\log V`, returning :math:`dV`; :math:`\alpha < 1`:
    :math:`\mathrm{Gamma}(\alpha+1)\,U^{1/\alpha}`. Only the rejected entries are redrawn.
    """
    opts = {"dtype": torch.float64, "device": device}
    if alpha == 0.5:
        z = torch.randn(n, generator=generator, **opts)
        return 0.5 * z * z
    if alpha == 1.0:
        u = torch.rand(n, generator=generator, **opts)
        return -torch.log1p(-u)  # u in [0, 1): finite and >= 0
    if alpha < 1.0:
        g = _standard_gamma(alpha + 1.0, n, generator, device)
        u = torch.rand(n, generator=generator, **opts)
        return g * u.pow(1.0 / alpha)
    d = alpha - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    out = torch.empty(n, **opts)
    pending: torch.Tensor | None = None  # None: every entry is still pending
    m = n
    for _ in range(_MAX_ROUNDS):
        x = torch.randn(m, generator=generator, **opts)
        u = torch.rand(m, generator=generator, **opts)
        v = 1.0 + c * x
        positive = v > 0
        v3 = torch.where(positive, v, torch.ones_like(v)).pow(3)
        accept = positive & (torch.log(u) < 0.5 * x * x + d - d * v3 + d * torch.log(v3))
        if pending is None:
            out[accept] = d * v3[accept]
            pending = torch.nonzero(~accept).squeeze(-1)
        else:
            out[pending[accept]] = d * v3[accept]
            pending = pending[~accept]
        m = pending.numel()
        if m == 0:
            return out
    raise RuntimeError(f"Gamma({alpha}) rejection sampler did not finish in {_MAX_ROUNDS} rounds.")


def _wood_constants(dim: int, kappa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`b` and :math:`2\kappa b` of Wood's algorithm, cancellation- and overflow-free.

    :math:`b = (d-1)/(2\kappa + \sqrt{4\kappa^2 + (d-1)^2})` and
    :math:`2\kappa b = (d-1)/(1 + \sqrt{1 + ((d-1)/(2\kappa))^2})`; float64 in, float64 out.
    """
    m1 = float(dim - 1)
    two_k = 2.0 * kappa
    b = m1 / (two_k + torch.hypot(two_k, torch.full_like(kappa, m1)))
    r = m1 / two_k
    kb2 = m1 / (1.0 + torch.hypot(torch.ones_like(r), r))
    return b, kb2


def _wood_log_accept(
    dim: int, b: torch.Tensor, kb2: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    r"""Wood's log acceptance ratio :math:`\kappa W + (d-1)\log(1-x_0W) - c \le 0` for
    :math:`Z = X/(X+Y)`, in the cancellation-free form
    :math:`2\kappa b(Y-X)/((1+b)(Y+bX)) + (d-1)\log[(1+b)(X+Y)/(2(Y+bX))]`."""
    den = y + b * x
    return kb2 * (y - x) / ((1.0 + b) * den) + (dim - 1) * torch.log(
        (1.0 + b) * (x + y) / (2.0 * den)
    )


def _sample_wood(
    dim: int,
    kappa: torch.Tensor,
    n: int,
    generator: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Exact draws of :math:`w = \mu^\top x` and :math:`\sqrt{1-w^2}` for ``n`` entries (float64).

    ``kappa`` has ``n`` entries, or one entry shared by all. Vectorised rejection: every round draws
    proposals only for the still-rejected entries.
    """
    device = kappa.device
    a = 0.5 * (dim - 1)
    b_all, kb2_all = _wood_constants(dim, kappa.reshape(-1))
    shared = b_all.numel() == 1
    w = torch.empty(n, dtype=torch.float64, device=device)
    s = torch.empty(n, dtype=torch.float64, device=device)
    pending: torch.Tensor | None = None
    m = n
    for _ in range(_MAX_ROUNDS):
        if shared or pending is None:
            b, kb2 = b_all, kb2_all
        else:
            b, kb2 = b_all[pending], kb2_all[pending]
        x = _standard_gamma(a, m, generator, device)
        y = _standard_gamma(a, m, generator, device)
        u = torch.rand(m, generator=generator, dtype=torch.float64, device=device)
        accept = _wood_log_accept(dim, b, kb2, x, y) >= torch.log(u)  # NaN -> rejected
        den = y + b * x
        w_new = (y - b * x) / den
        s_new = 2.0 * torch.sqrt(b * x * y) / den
        if pending is None:
            w[accept] = w_new[accept]
            s[accept] = s_new[accept]
            pending = torch.nonzero(~accept).squeeze(-1)
        else:
            w[pending[accept]] = w_new[accept]
            s[pending[accept]] = s_new[accept]
            pending = pending[~accept]
        m = pending.numel()
        if m == 0:
            return w, s
    raise RuntimeError(
        f"vMF rejection sampler did not finish in {_MAX_ROUNDS} rounds; check that 'concentration' "
        "is finite and > 0."
    )


def _assemble(
    mu: torch.Tensor,
    w: torch.Tensor,
    s: torch.Tensor,
    n: int,
    generator: torch.Generator | None,
) -> torch.Tensor:
    r"""``x = w μ + s v`` of shape ``(n, B, d)`` with ``v`` uniform on the unit sphere of ``μ^⊥``.

    ``mu`` is ``(B, d)`` (unit rows, float64); ``w``, ``s`` hold ``n·B`` entries. The tangent is
    drawn in :math:`e_1`-coordinates, :math:`y = (w,\ s\,\xi/\lVert\xi\rVert)` with
    :math:`\xi \sim \mathcal{N}(0, I_{d-1})`, and carried to :math:`\mu` by the orthogonal map
    :math:`Q = -\sigma H`, :math:`H = I - 2uu^\top`, :math:`u = (\mu + \sigma e_1)/\lVert\mu +
    \sigma e_1\rVert`, :math:`\sigma = \operatorname{sign}\mu_1` (no cancellation), which sends
    :math:`e_1 \mapsto \mu` and :math:`e_1^\perp` onto :math:`\mu^\perp`. The direction of a
    Gaussian is independent of its norm, so redrawing the (probability ~0) rows with a tiny norm is
    exact.
    """
    nb, d = mu.shape
    opts = {"dtype": torch.float64, "device": mu.device}
    xi = torch.randn(n, nb, d - 1, generator=generator, **opts)
    nrm = torch.linalg.vector_norm(xi, dim=-1, keepdim=True)
    for _ in range(_MAX_ROUNDS):
        bad = nrm.squeeze(-1) <= 1e-100
        if not bool(bad.any()):
            break
        idx = torch.nonzero(bad, as_tuple=True)
        redo = torch.randn(idx[0].numel(), d - 1, generator=generator, **opts)
        xi[idx] = redo
        nrm[idx] = torch.linalg.vector_norm(redo, dim=-1, keepdim=True)
    else:
        raise RuntimeError("Could not draw a tangent direction.")
    xi.mul_(s.view(n, nb, 1) / nrm)
    y = torch.cat([w.view(n, nb, 1), xi], dim=-1)  # e₁-coordinates: (w, s·ξ/‖ξ‖)
    del xi
    sigma = torch.where(mu[:, 0] >= 0, 1.0, -1.0).to(mu.dtype)  # (B,)
    u = mu.clone()
    u[:, 0] += sigma
    u = u / torch.linalg.vector_norm(u, dim=-1, keepdim=True)  # ‖μ + σe₁‖² = 2(1 + |μ₁|) ≥ 2
    proj = (y @ u[0]).unsqueeze(-1) if nb == 1 else (y * u).sum(-1, keepdim=True)
    sigma = sigma.view(nb, 1)
    # x = -σ·H·y = σ·(2(u·y)u - y), in place
    y.mul_(-sigma)
    y.addcmul_(proj.mul_(2.0 * sigma), u)
    return y


class VonMisesFisher(Distribution):
    r"""von Mises–Fisher distribution :math:`C_d(\kappa)e^{\kappa\mu^\top x}` on :math:`S^{d-1}`.

    The positive-pair conditional of paper 000, eq. (2). See the module docstring for the density,
    the normaliser, Wood's (1994) exact rejection sampler and its acceptance rule.

    Args:
        loc: mean direction :math:`\mu`, shape ``(..., d)`` with ``d >= 2``; each row must be a unit
            vector (within ``1000·eps`` of the dtype, clamped to ``[1e-6, 1e-2]``).
        concentration: :math:`\kappa > 0`, broadcastable to ``loc.shape[:-1]``; cast to ``loc``'s
            dtype and device.
        validate_args: as in ``torch.distributions``; ``None`` follows torch's global default (on).
            The dimension check always runs; the value checks (unit ``loc``, positive ``κ``, points
            of ``log_prob`` on the sphere) run when validation is on and raise
            :class:`unmix.errors.ConfigError`.

    ``batch_shape = broadcast(loc.shape[:-1], concentration.shape)``, ``event_shape = (d,)``.

    :meth:`sample` is exact and accepts a ``torch.Generator`` (it must live on the device where you
    want the computation to run; the result is moved to ``loc``'s device). There is no
    :meth:`rsample`: the rejection sampler is not reparameterised, and gradients do not flow through
    samples. :meth:`log_prob`, :attr:`mean` and :meth:`entropy` are differentiable in ``loc`` and
    ``concentration``.
    """

    arg_constraints = {"loc": constraints.real_vector, "concentration": constraints.positive}
    support = unit_sphere
    has_rsample = False

    def __init__(
        self,
        loc: torch.Tensor,
        concentration: torch.Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        loc = torch.as_tensor(loc)
        if not loc.is_floating_point():
            loc = loc.to(torch.get_default_dtype())
        if loc.ndim == 0 or loc.shape[-1] < 2:
            raise ConfigError(
                f"Parameter 'loc' of VonMisesFisher has shape {tuple(loc.shape)}; its last "
                "dimension d is the ambient dimension of the sphere S^(d-1) and must be >= 2: "
                "pass unit vectors of shape (..., d)."
            )
        if torch.is_tensor(concentration):
            kappa = concentration.to(dtype=loc.dtype, device=loc.device)
        else:
            kappa = torch.as_tensor(concentration, dtype=loc.dtype, device=loc.device)
        try:
            batch_shape = torch.broadcast_shapes(loc.shape[:-1], kappa.shape)
        except RuntimeError:
            raise ConfigError(
                f"Parameter 'concentration' of VonMisesFisher has shape {tuple(kappa.shape)}, "
                f"which does not broadcast with loc.shape[:-1] = {tuple(loc.shape[:-1])}: pass a "
                "scalar or one value per mean direction."
            ) from None
        validate = Distribution._validate_args if validate_args is None else bool(validate_args)
        if validate:
            check_positive("concentration", kappa.detach(), owner="VonMisesFisher")
            norms = loc.detach().double().norm(dim=-1)
            tol = _unit_tolerance(loc.dtype)
            bad = ~((norms - 1.0).abs() <= tol)
            if bool(bad.any()):
                raise ConfigError(
                    f"Parameter 'loc' of VonMisesFisher must hold unit vectors along its last "
                    f"dimension (norm 1 within {tol:.1e}), got norms {norms[bad][:3].tolist()}: "
                    "normalise it, e.g. loc / loc.norm(dim=-1, keepdim=True)."
                )
        d = loc.shape[-1]
        self.loc = loc.expand(batch_shape + (d,))
        self.concentration = kappa.expand(batch_shape)
        self._dim = d
        # Our checks above replace torch's arg_constraints checks (which fail on empty batches).
        super().__init__(batch_shape, torch.Size((d,)), validate_args=False)
        self._validate_args = validate

    def expand(self, batch_shape, _instance=None) -> VonMisesFisher:
        new = self._get_checked_instance(VonMisesFisher, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new._dim = self._dim
        super(VonMisesFisher, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def dim(self) -> int:
        """Ambient dimension :math:`d` (the sphere is :math:`S^{d-1} \\subset \\mathbb{R}^d`)."""
        return self._dim

    def log_normalizer(self) -> torch.Tensor:
        r""":math:`\log C_d(\kappa)`, shape ``batch_shape``.

        Computed by (and as accurate as) :func:`unmix.special.vmf_log_normalizer`.
        """
        return vmf_log_normalizer(self._dim, self.concentration)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        r""":math:`\log p(x) = \log C_d(\kappa) + \kappa\mu^\top x` (paper 000, eq. (2)).

        Shape ``broadcast(value.shape[:-1], batch_shape)``. With validation on, ``value`` must lie
        on the unit sphere."""
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self._validate_args:
            if value.ndim == 0 or value.shape[-1] != self._dim:
                raise ConfigError(
                    f"log_prob of VonMisesFisher got value of shape {tuple(value.shape)}; its last "
                    f"dimension must be d = {self._dim}."
                )
            if not bool(self.support.check(value.detach()).all()):
                raise ConfigError(
                    "log_prob of VonMisesFisher needs points on the unit sphere (norm 1 along the "
                    "last dimension); normalise the value first."
                )
        return self.log_normalizer() + self.concentration * (self.loc * value).sum(-1)

    @property
    def mean_resultant_length(self) -> torch.Tensor:
        r""":math:`A_d(\kappa) = \lVert\mathbb{E}[x]\rVert`, shape ``batch_shape``."""
        return vmf_mean_resultant_length(self._dim, self.concentration)

    @property
    def mean(self) -> torch.Tensor:
        r""":math:`\mathbb{E}[x] = A_d(\kappa)\,\mu`, shape ``batch_shape + (d,)``."""
        return self.mean_resultant_length.unsqueeze(-1) * self.loc

    @property
    def mode(self) -> torch.Tensor:
        r"""The mode :math:`\mu`."""
        return self.loc

    def entropy(self) -> torch.Tensor:
        r""":math:`H = -\log C_d(\kappa) - \kappa A_d(\kappa)` (nats), shape ``batch_shape``.

        Evaluated in a rearranged, exponentially scaled form (no :math:`\kappa`-sized cancellation),
        accurate to ~1e-10 even at :math:`\kappa = 10^8`; differentiable in ``concentration``."""
        return _vmf_entropy(self._dim, self.concentration)

    def rsample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None):
        raise NotImplementedError(
            "VonMisesFisher has no reparameterised sampler (Wood's rejection sampler is not "
            "differentiable); use sample()."
        )

    def sample(
        self, sample_shape=torch.Size(), generator: torch.Generator | None = None
    ) -> torch.Tensor:
        r"""Exact samples, shape ``sample_shape + batch_shape + (d,)`` (Wood 1994; see module doc).

        Deterministic for a fixed ``generator`` state. Computation runs in float64 on
        ``generator.device`` (or ``loc``'s device without a generator); the result has ``loc``'s
        dtype and device.
        """
        sample_shape = torch.Size(sample_shape)
        shape = self._extended_shape(sample_shape)
        d = self._dim
        device = generator.device if generator is not None else self.loc.device
        n = sample_shape.numel()
        with torch.no_grad():
            mu = self.loc.detach().to(device=device, dtype=torch.float64).reshape(-1, d)
            mu = mu / mu.norm(dim=-1, keepdim=True)
            nb = mu.shape[0]
            kappa = self.concentration.detach().to(device=device, dtype=torch.float64).reshape(-1)
            if nb > 1 and bool((kappa == kappa[0]).all()):
                kappa = kappa[:1]  # one shared κ: no per-entry gathers in the rejection loop
            elif nb > 1:
                kappa = kappa.expand(n, nb).reshape(-1)
            w, s = _sample_wood(d, kappa, n * nb, generator)
            x = _assemble(mu, w, s, n, generator)
        return x.reshape(shape).to(dtype=self.loc.dtype, device=self.loc.device)

    def __repr__(self) -> str:
        return (
            f"VonMisesFisher(d={self._dim}, batch_shape={tuple(self.batch_shape)}, "
            f"dtype={self.loc.dtype})"
        )
