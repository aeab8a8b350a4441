"""log-Bessel and vMF normaliser against mpmath (arbitrary precision) and closed forms."""

import math

import mpmath as mp
import pytest
import torch

from unmix.special import log_bessel_iv, log_sphere_area, vmf_log_normalizer

mp.mp.dps = 40
ORDERS = [0.0, 0.5, 4.0, 19.5, 20.0, 100.0, 499.0, 1000.0]
ARGS = [1e-250, 1e-30, 1e-3, 1.0, 10.0, 100.0, 1e4, 1e6, 1e9, 1e10]


@pytest.mark.parametrize("v", ORDERS)
def test_log_bessel_matches_mpmath_over_all_regimes(v):
    x = torch.tensor(ARGS, dtype=torch.float64)
    ours = log_bessel_iv(v, x)
    for xi, oi in zip(ARGS, ours.tolist(), strict=False):
        ref = float(mp.log(mp.besseli(v, xi)))
        assert abs(oi - ref) <= 1e-9 * max(1.0, abs(ref)), (v, xi, oi, ref)


def test_log_bessel_gradient_matches_finite_differences():
    x = torch.tensor([0.5, 3.0, 50.0], dtype=torch.float64, requires_grad=True)
    log_bessel_iv(4.0, x).sum().backward()
    h = 1e-6
    fd = (log_bessel_iv(4.0, x.detach() + h) - log_bessel_iv(4.0, x.detach() - h)) / (2 * h)
    torch.testing.assert_close(x.grad, fd, rtol=1e-7, atol=1e-9)


def test_vmf_normaliser_closed_forms():
    k = torch.tensor([1e-3, 1.0, 10.0, 300.0], dtype=torch.float64)
    # d = 3: C = κ / (4π sinh κ);   log sinh κ = κ + log(1 − e^{−2κ}) − log 2
    log_sinh = k + torch.log1p(-torch.exp(-2 * k)) - math.log(2)
    torch.testing.assert_close(
        vmf_log_normalizer(3, k), torch.log(k) - math.log(4 * math.pi) - log_sinh
    )
    # κ → 0: the uniform density 1/|S^{d-1}|
    assert float(vmf_log_normalizer(10, torch.tensor(0.0, dtype=torch.float64))) == pytest.approx(
        -log_sphere_area(10)
    )


def test_sphere_area():
    assert math.exp(log_sphere_area(2)) == pytest.approx(2 * math.pi)
    assert math.exp(log_sphere_area(3, radius=2.0)) == pytest.approx(16 * math.pi)
