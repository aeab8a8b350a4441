r"""Special functions that torch lacks, float64-accurate.

* :func:`log_bessel_iv` — :math:`\log I_\nu(x)`, the modified Bessel function of the first kind,
  stable for large and tiny arguments and large orders (scipy's exponentially scaled ``ive`` where it
  is representable, otherwise the uniform (Debye) asymptotic expansion or the leading series term),
  differentiable in ``x`` via :math:`\partial_x \log I_\nu(x) = I_{\nu+1}(x)/I_\nu(x) + \nu/x`.
* :func:`vmf_log_normalizer` — :math:`\log C_d(\kappa)` of the von Mises–Fisher density
  :math:`C_d(\kappa)\,e^{\kappa\mu^\top x}` on the unit sphere :math:`S^{d-1}`,
  :math:`C_d(\kappa) = \kappa^{d/2-1} / ((2\pi)^{d/2} I_{d/2-1}(\kappa))`.
* :func:`log_sphere_area` — :math:`\log |S^{d-1}|` for a sphere of radius ``r`` in :math:`\mathbb{R}^d`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special as sp


def quad(*args, **kwargs):
    """``scipy.integrate.quad``, imported on first use: scipy.integrate adds ≈ 40 MB to a
    process's resident memory, and a training run never integrates (the theory checks and the
    mass-to-move quadratures do)."""
    from scipy import integrate

    return integrate.quad(*args, **kwargs)


def _log_iv_numpy(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    v, x = np.broadcast_arrays(np.asarray(v, dtype=np.float64), np.asarray(x, dtype=np.float64))
    out = np.empty(v.shape, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ive = sp.ive(v, x)
        ok = np.isfinite(ive) & (ive > 1e-290)
        out[ok] = np.log(ive[ok]) + x[ok]
        bad = ~ok
        if bad.any():
            vb, xb = v[bad], x[bad]
            # Uniform asymptotic expansion (Abramowitz & Stegun 9.7.7), accurate for large order.
            vs = np.maximum(vb, 1e-300)
            z = xb / vs
            s = np.sqrt(1.0 + z * z)
            eta = s + np.log(z / (1.0 + s))
            t = 1.0 / s
            u1 = (3 * t - 5 * t**3) / 24.0
            u2 = (81 * t**2 - 462 * t**4 + 385 * t**6) / 1152.0
            debye = (
                vs * eta
                - 0.5 * np.log(2 * np.pi * vs)
                - 0.5 * np.log(s)
                + np.log1p(u1 / vs + u2 / vs**2)
            )
            # Hankel's large-argument expansion (A&S 9.7.1), for x >> v**2 (scipy's ive is NaN
            # above ~1e9).
            mu = 4.0 * vb * vb
            hankel = (
                xb
                - 0.5 * np.log(2 * np.pi * xb)
                + np.log1p(-(mu - 1) / (8 * xb) + (mu - 1) * (mu - 9) / (2 * (8 * xb) ** 2))
            )
            # First terms of the power series, for small orders and x**2 << v + 1.
            q = xb * xb / (4.0 * (vb + 1.0))
            series = vb * np.log(xb / 2.0) - sp.gammaln(vb + 1.0) + np.log1p(q + q * q / 2.0)
            use_series = (vb < 20.0) & (q < 1e-3)
            use_hankel = xb > np.maximum(1e3 * (vb * vb + 1.0), 1e8)
            out[bad] = np.where(use_series, series, np.where(use_hankel, hankel, debye))
        out[x == 0] = np.where(v[x == 0] == 0, 0.0, -np.inf)
    return out


class _LogBesselIv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        vn = v.detach().cpu().double().numpy()
        xn = x.detach().cpu().double().numpy()
        out = torch.from_numpy(_log_iv_numpy(vn, xn)).to(device=x.device, dtype=x.dtype)
        ctx.save_for_backward(v, x, out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        v, x, out = ctx.saved_tensors
        log_next = _LogBesselIv.apply(v + 1, x)
        dlog = torch.exp(log_next - out) + v / x
        return None, grad * dlog


def log_bessel_iv(v: float | torch.Tensor, x: torch.Tensor | float) -> torch.Tensor:
    r""":math:`\log I_\nu(x)` for :math:`\nu \ge 0`, :math:`x \ge 0`, broadcast over tensors.

    Accurate to float64 round-off where scipy's ``ive`` is representable; elsewhere to the
    accuracy of the uniform asymptotic expansion (relative error :math:`O(1/\nu)` in :math:`I`,
    with the first two correction terms: absolute error in the log below ``1e-7`` for
    :math:`\nu > 100`), or of Hankel's expansion for :math:`x > \max(10^8, 10^3(\nu^2+1))`.
    """
    x = torch.as_tensor(x, dtype=torch.get_default_dtype() if not torch.is_tensor(x) else None)
    if not x.is_floating_point():
        x = x.double()
    v = torch.as_tensor(v, dtype=x.dtype, device=x.device)
    v, x = torch.broadcast_tensors(v, x)
    return _LogBesselIv.apply(v, x)


def vmf_log_normalizer(dim: int, kappa: torch.Tensor | float) -> torch.Tensor:
    r""":math:`\log C_d(\kappa)` so that :math:`p(x) = C_d(\kappa) e^{\kappa \mu^\top x}` on :math:`S^{d-1}`.

    Stable for :math:`\kappa \to 0` (tends to :math:`-\log|S^{d-1}|`) and for large :math:`\kappa`.
    """
    kappa = torch.as_tensor(kappa)
    if not kappa.is_floating_point():
        kappa = kappa.double()
    nu = dim / 2.0 - 1.0
    small = kappa < 1e-8
    k = torch.where(small, torch.ones_like(kappa), kappa)
    out = nu * torch.log(k) - (dim / 2.0) * math.log(2 * math.pi) - log_bessel_iv(nu, k)
    return torch.where(small, torch.full_like(kappa, -log_sphere_area(dim)), out)


def log_sphere_area(dim: int, radius: float = 1.0) -> float:
    r""":math:`\log |S^{d-1}_r| = \log 2 + \tfrac d2 \log\pi - \log\Gamma(\tfrac d2) + (d-1)\log r`."""
    return (
        math.log(2.0)
        + 0.5 * dim * math.log(math.pi)
        - math.lgamma(0.5 * dim)
        + (dim - 1) * math.log(radius)
    )
