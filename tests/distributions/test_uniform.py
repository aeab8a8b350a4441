"""Uniform distributions on the sphere and the box.

References: for z uniform on S^{d-1}, (1 + z_1)/2 ~ Beta((d-1)/2, (d-1)/2) (scipy.stats.beta);
box coordinates ~ U(low, high) (scipy.stats.uniform); log-volumes in closed form.
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from unmix.distributions.uniform import UniformBox, UniformSphere, uniform_on
from unmix.errors import ConfigError
from unmix.spaces import Box, Euclidean, Sphere

F64 = torch.float64
P_MIN = 1e-3


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dim,radius", [(2, 1.0), (3, 2.0), (10, 1.0)])
def test_uniform_sphere(dim, radius):
    dist = UniformSphere(dim, radius, dtype=F64)
    assert dist.batch_shape == () and dist.event_shape == (dim,)
    x = dist.sample((4000,), generator=gen(dim))
    assert x.shape == (4000, dim) and x.dtype == F64
    torch.testing.assert_close(x.norm(dim=-1), torch.full((4000,), radius, dtype=F64))
    ref = stats.beta((dim - 1) / 2, (dim - 1) / 2)
    for j in (0, dim - 1):
        assert stats.kstest(((1 + x[:, j] / radius) / 2).numpy(), ref.cdf).pvalue > P_MIN
    area = 2 * math.pi ** (dim / 2) * radius ** (dim - 1) / math.gamma(dim / 2)
    torch.testing.assert_close(dist.log_prob(x[:3]), torch.full((3,), -math.log(area), dtype=F64))
    assert torch.isneginf(dist.log_prob(1.01 * x[:2])).all()
    # moments: mean 0, variance r²/d per coordinate, within 5 SE
    var = radius**2 / dim
    assert (x.mean(0).abs() <= 5 * math.sqrt(var / 4000)).all()
    torch.testing.assert_close(dist.variance, torch.full((dim,), var, dtype=F64))


def test_uniform_sphere_float32_and_determinism():
    dist = UniformSphere(5)
    a = dist.sample((10,), generator=gen(1))
    assert a.dtype == torch.get_default_dtype()
    assert torch.equal(a, dist.sample((10,), generator=gen(1)))
    assert torch.isfinite(dist.log_prob(a)).all()


def test_uniform_box_scalar_and_per_dim_bounds():
    dist = UniformBox(-1.0, 3.0, dim=4, dtype=F64)
    x = dist.sample((3000,), generator=gen(0))
    assert x.shape == (3000, 4) and (x >= -1).all() and (x <= 3).all()
    for j in range(4):
        assert stats.kstest(x[:, j].numpy(), stats.uniform(-1, 4).cdf).pvalue > P_MIN
    torch.testing.assert_close(
        dist.log_prob(x[:2]), torch.full((2,), -4 * math.log(4.0), dtype=F64)
    )
    low, high = torch.tensor([0.0, -2.0]), torch.tensor([1.0, 5.0])
    box = UniformBox(low, high, dim=2, dtype=F64)
    y = box.sample((3000,), generator=gen(2))
    assert (y >= low).all() and (y <= high).all()
    assert stats.kstest(y[:, 1].numpy(), stats.uniform(-2, 7).cdf).pvalue > P_MIN
    lp = box.log_prob(torch.tensor([[0.0, 5.0], [0.5, 0.0], [1.0 + 1e-12, 0.0]], dtype=F64))
    assert lp[0].item() == pytest.approx(-math.log(7.0)) and lp[1].item() == lp[0].item()
    assert torch.isneginf(lp[2])
    torch.testing.assert_close(box.mean, torch.tensor([0.5, 1.5], dtype=F64))
    torch.testing.assert_close(box.variance, torch.tensor([1 / 12, 49 / 12], dtype=F64))
    assert torch.equal(box.sample((5,), generator=gen(3)), box.sample((5,), generator=gen(3)))


def test_uniform_on_spaces():
    s = uniform_on(Sphere(dim=6, radius=2.0), dtype=F64)
    assert isinstance(s, UniformSphere) and s.dim == 6 and s.radius == 2.0
    b = uniform_on(Box(dim=3, low=-1.0, high=2.0))
    assert isinstance(b, UniformBox) and b.dim == 3
    assert b.log_prob(torch.zeros(3)).item() == pytest.approx(-3 * math.log(3.0))
    with pytest.raises(ConfigError, match="no uniform distribution.*R\\^d"):
        uniform_on(Euclidean(dim=3))


def test_error_messages():
    with pytest.raises(ConfigError, match="'dim'.*>= 2"):
        UniformSphere(1)
    with pytest.raises(ConfigError, match="'radius'"):
        UniformSphere(3, radius=-1.0)
    with pytest.raises(ConfigError, match="low < high"):
        UniformBox(1.0, 1.0, dim=2)
    with pytest.raises(ConfigError, match="'low'.*shape"):
        UniformBox(torch.zeros(3), 1.0, dim=2)
    with pytest.raises(ConfigError, match="finite"):
        UniformBox(0.0, math.inf, dim=2)
    with pytest.raises(ConfigError, match="last dimension must be 3"):
        UniformSphere(3).log_prob(torch.zeros(2))
