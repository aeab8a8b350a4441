"""Compose: chain rule, inverse order and log-determinants, against autograd on the composite."""

from __future__ import annotations

import pytest
import torch

from unmix.errors import ConfigError
from unmix.mixing import (
    Compose,
    InvertibleMLP,
    LinearMixing,
    Mixing,
    Moebius,
    SmoothLeakyMLP,
    TriangularMLP,
    VolumePreservingLinear,
)

F64 = torch.float64


def _sources(n: int, d: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64) - 0.5


def test_compose_moebius_then_volume_preserving():
    """Paper 004, Fig. 3 right: a volume-preserving linear map after the Möbius transform."""
    mob = Moebius(3, seed=5, dtype=F64)
    lin = VolumePreservingLinear(3, seed=5, dtype=F64)
    g = Compose(mob, lin)
    z = _sources(30, 3)
    torch.testing.assert_close(g(z), lin(mob(z)), rtol=0, atol=0)
    torch.testing.assert_close(g.inverse(g(z)), z, rtol=1e-10, atol=1e-10)
    jac = g.jacobian(z)
    for i in range(0, 30, 7):
        ref = torch.autograd.functional.jacobian(lambda s: lin(mob(s)), z[i])
        torch.testing.assert_close(jac[i], ref, rtol=1e-12, atol=1e-12)
    # |det M| = 1, so log|det J| is the Möbius part alone
    torch.testing.assert_close(g.log_abs_det_jacobian(z), mob.log_abs_det_jacobian(z))
    torch.testing.assert_close(
        g.log_abs_det_jacobian(z), torch.linalg.slogdet(jac).logabsdet, rtol=1e-12, atol=1e-12
    )
    # the linear map breaks conformality: c_IMA > 0 after it, = 0 before
    c_ima = jac.norm(dim=-2).log().sum(-1) - torch.linalg.slogdet(jac).logabsdet
    assert torch.all(c_ima > 1e-3)


def test_compose_three_parts_and_order():
    a = SmoothLeakyMLP(4, seed=1, dtype=F64)
    b = TriangularMLP(4, seed=2, dtype=F64)
    c = InvertibleMLP(4, cond_pool_size=100, seed=3, dtype=F64)
    g = Compose(a, b, c)
    assert len(g) == 3 and g[0] is a and g[2] is c
    z = torch.randn(8, 4, generator=torch.Generator().manual_seed(0), dtype=F64)
    torch.testing.assert_close(g(z), c(b(a(z))), rtol=0, atol=0)
    assert not torch.allclose(g(z), a(b(c(z))))  # order matters: the first argument acts first
    assert (g.inverse(g(z)) - z).abs().max() <= 1e-8
    jac = g.jacobian(z)
    torch.testing.assert_close(
        jac, c.jacobian(b(a(z))) @ b.jacobian(a(z)) @ a.jacobian(z), rtol=1e-12, atol=1e-12
    )
    for i in (0, 5):
        ref = torch.autograd.functional.jacobian(g, z[i])
        torch.testing.assert_close(jac[i], ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(
        g.log_abs_det_jacobian(z), torch.linalg.slogdet(jac).logabsdet, rtol=1e-10, atol=1e-10
    )


def test_compose_list_argument_and_nesting():
    parts = [Moebius(3, seed=0, dtype=F64), LinearMixing(2 * torch.eye(3, dtype=F64))]
    g1, g2 = Compose(parts), Compose(*parts)
    z = _sources(5, 3)
    torch.testing.assert_close(g1(z), g2(z))
    nested = Compose(g1, Moebius(3, seed=1, dtype=F64))
    torch.testing.assert_close(nested.inverse(nested(z)), z, rtol=1e-9, atol=1e-9)


def test_compose_buffers_move_and_save():
    g = Compose(Moebius(3, seed=0, dtype=F64), VolumePreservingLinear(3, seed=0, dtype=F64))
    keys = set(g.state_dict())
    assert {"mixings.0.A", "mixings.0.a", "mixings.0.b", "mixings.1.matrix"} <= keys
    g32 = g.to(torch.float32)
    assert all(b.dtype == torch.float32 for b in g32.buffers())
    assert g32(torch.zeros(2, 3)).dtype == torch.float32


def test_compose_errors():
    with pytest.raises(ConfigError, match="at least one mixing"):
        Compose()
    with pytest.raises(ConfigError, match="argument 1 is a Linear, not a unmix Mixing"):
        Compose(Moebius(3), torch.nn.Linear(3, 3))
    with pytest.raises(
        ConfigError, match=r"mixing 0 \(Moebius\) outputs 3 dimensions but mixing 1"
    ):
        Compose(Moebius(3), Moebius(4))


class _Lift(Mixing):
    """Test-only R^2 -> R^3: (z1, z2) -> (z1, z2, z1 z2)."""

    def __init__(self):
        super().__init__(2, 3)
        self.register_buffer("one", torch.ones((), dtype=F64))

    def forward(self, z):
        self._check_input(z, "z", 2)
        return self.one * torch.stack([z[..., 0], z[..., 1], z[..., 0] * z[..., 1]], dim=-1)


class _Drop(Mixing):
    """Test-only R^3 -> R^2: (x1, x2, x3) -> (2 x1 + x3, x2)."""

    def __init__(self):
        super().__init__(3, 2)
        self.register_buffer("one", torch.ones((), dtype=F64))

    def forward(self, x):
        self._check_input(x, "x", 3)
        return self.one * torch.stack([2 * x[..., 0] + x[..., 2], x[..., 1]], dim=-1)


def test_compose_non_square_parts():
    """Square overall, non-square parts: g(z) = (2 z1 + z1 z2, z2); det J = 2 + z2."""
    g = Compose(_Lift(), _Drop())
    z = torch.tensor([[1.0, 0.5], [-2.0, 3.0]], dtype=F64)
    expected = torch.tensor([[[2.5, 1.0], [0.0, 1.0]], [[5.0, -2.0], [0.0, 1.0]]], dtype=F64)
    torch.testing.assert_close(g.jacobian(z), expected)
    torch.testing.assert_close(g.log_abs_det_jacobian(z), torch.log(2.0 + z[:, 1]))
    with pytest.raises(NotImplementedError, match="_Drop has no exact inverse"):
        g.inverse(z)
