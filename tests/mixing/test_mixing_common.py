"""Interface properties every mixing must have, checked on each of them.

References: torch.autograd.functional.jacobian (per sample), torch.linalg.slogdet of that
Jacobian, exact round trips in float64, and the state of the global RNGs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.mixing import (
    MIXINGS,
    Compose,
    InvertibleMLP,
    LinearMixing,
    Mixing,
    Moebius,
    SmoothLeakyMLP,
    TriangularMLP,
    VolumePreservingLinear,
    make_mixing,
)

F64 = torch.float64

FACTORIES = {
    "invertible_mlp": lambda seed: InvertibleMLP(4, cond_pool_size=300, seed=seed, dtype=F64),
    "invertible_mlp_1layer": lambda seed: InvertibleMLP(
        3, n_layers=1, cond_pool_size=200, seed=seed, dtype=F64
    ),
    "moebius": lambda seed: Moebius(3, seed=seed, dtype=F64),
    "moebius_alpha": lambda seed: Moebius(5, alpha=-2.5, seed=seed, dtype=F64),
    "volume_preserving": lambda seed: VolumePreservingLinear(4, seed=seed, dtype=F64),
    "smooth_leaky_mlp": lambda seed: SmoothLeakyMLP(4, seed=seed, dtype=F64),
    "triangular_mlp": lambda seed: TriangularMLP(4, seed=seed, dtype=F64),
    "triangular_mlp_leaky": lambda seed: TriangularMLP(
        3, n_layers=2, nonlinearity="leaky_relu", seed=seed, dtype=F64
    ),
    "compose": lambda seed: Compose(
        Moebius(3, seed=seed, dtype=F64), VolumePreservingLinear(3, seed=seed, dtype=F64)
    ),
}


@pytest.fixture(params=sorted(FACTORIES), scope="module")
def name(request):
    return request.param


@pytest.fixture(scope="module")
def mixing(name) -> Mixing:
    return FACTORIES[name](0)


def _latents(m: Mixing, shape=(6, 5), seed=1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # U[-0.5, 0.5]^d, the sources of paper 004 (keeps the Möbius pole |a_i| > 0.5 away)
    return torch.rand(*shape, m.dim_in, generator=g, dtype=F64) - 0.5


def test_shapes_and_batching(mixing):
    z = _latents(mixing)
    x = mixing(z)
    assert x.shape == (6, 5, mixing.dim_out)
    assert x.dtype == F64
    # one sample at a time (no batch dimension) gives the same numbers: outputs are per sample
    one = torch.stack([mixing(z[i, j]) for i in range(6) for j in range(5)]).reshape(x.shape)
    torch.testing.assert_close(one, x, rtol=1e-13, atol=1e-13)
    # an empty batch
    assert mixing(z[:0]).shape == (0, 5, mixing.dim_out)
    assert mixing.jacobian(z[:0]).shape == (0, 5, mixing.dim_out, mixing.dim_in)


def test_inverse_round_trip(mixing):
    z = _latents(mixing)
    x = mixing(z)
    assert (mixing.inverse(x) - z).abs().max() <= 1e-8
    # and the other way round, on points of the image
    x2 = mixing(_latents(mixing, seed=2))
    assert (mixing(mixing.inverse(x2)) - x2).abs().max() <= 1e-8 * max(1.0, x2.abs().max())


def test_jacobian_matches_autograd(mixing):
    # z = 0 puts the first pre-activations of the MLPs exactly at the kink / centre of σ
    z = torch.cat([torch.zeros(1, mixing.dim_in, dtype=F64), _latents(mixing, shape=(4,))])
    jac = mixing.jacobian(z)
    assert jac.shape == (5, mixing.dim_out, mixing.dim_in)
    for i in range(5):
        ref = torch.autograd.functional.jacobian(mixing, z[i])
        torch.testing.assert_close(jac[i], ref, rtol=1e-10, atol=1e-12)
    # the base-class default (vmap of jacrev) agrees with the closed form, batch dims kept
    z2 = _latents(mixing, shape=(2, 3))
    torch.testing.assert_close(
        Mixing.jacobian(mixing, z2), mixing.jacobian(z2), rtol=1e-10, atol=1e-12
    )


def test_log_abs_det_matches_slogdet(mixing):
    z = _latents(mixing, shape=(4,))
    lad = mixing.log_abs_det_jacobian(z)
    assert lad.shape == (4,)
    for i in range(4):
        ref = torch.linalg.slogdet(torch.autograd.functional.jacobian(mixing, z[i])).logabsdet
        torch.testing.assert_close(lad[i], ref, rtol=1e-10, atol=1e-10)
    z2 = _latents(mixing, shape=(2, 3))
    assert mixing.log_abs_det_jacobian(z2).shape == (2, 3)


def test_gradients_flow_to_inputs(mixing):
    z = _latents(mixing, shape=(3,)).requires_grad_(True)
    mixing(z).sum().backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()


def test_determinism_per_seed(name):
    a, b, c = FACTORIES[name](3), FACTORIES[name](3), FACTORIES[name](4)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert sa.keys() == sb.keys() == sc.keys() and len(sa) > 0
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)


def test_global_rng_untouched(name):
    torch.manual_seed(123)
    np.random.seed(123)
    t_state, n_state = torch.get_rng_state(), np.random.get_state()
    FACTORIES[name](0)
    assert torch.equal(torch.get_rng_state(), t_state)
    after = np.random.get_state()
    assert after[0] == n_state[0] and np.array_equal(after[1], n_state[1])
    assert after[2:] == n_state[2:]


def test_buffers_not_parameters(name):
    m = FACTORIES[name](0)
    assert list(m.parameters()) == []
    bufs = list(m.buffers())
    assert bufs and all(not b.requires_grad for b in bufs)
    # .to(dtype) moves every buffer; the float32 copy is the same map up to float32 rounding
    z = _latents(m, shape=(4,))
    m32 = FACTORIES[name](0).to(torch.float32)
    assert all(b.dtype == torch.float32 for b in m32.buffers() if b.is_floating_point())
    torch.testing.assert_close(m32(z.float()).double(), m(z), rtol=1e-4, atol=1e-4)
    # state_dict round trip: a mixing built with another seed becomes the saved one
    other = FACTORIES[name](7)
    other.load_state_dict(m.state_dict())
    torch.testing.assert_close(other(z), m(z), rtol=0, atol=0)


def test_input_errors(mixing):
    owner = type(mixing).__name__
    bad = torch.zeros(3, mixing.dim_in + 1, dtype=F64)
    with pytest.raises(ConfigError, match=rf"{owner} got 'z' of shape \(3, {mixing.dim_in + 1}\)"):
        mixing(bad)
    with pytest.raises(ConfigError, match="last dimension must be"):
        mixing.jacobian(bad)
    with pytest.raises(ConfigError, match="last dimension must be"):
        mixing.inverse(torch.zeros(mixing.dim_out + 2, dtype=F64))
    with pytest.raises(ConfigError, match=r"holds torch.float64 weights but 'z' is torch.float32"):
        mixing(torch.zeros(2, mixing.dim_in))
    with pytest.raises(ConfigError, match="expects a floating 'z'"):
        mixing(torch.zeros(2, mixing.dim_in, dtype=torch.long))
    with pytest.raises(ConfigError, match="torch.Tensor"):
        mixing([0.0] * mixing.dim_in)


def test_default_dtype_is_torch_default():
    m = Moebius(3)
    assert m.dtype == torch.get_default_dtype()
    assert m(torch.zeros(2, 3)).dtype == torch.get_default_dtype()


def test_bad_dtype_argument():
    with pytest.raises(ConfigError, match="floating torch dtype"):
        Moebius(3, dtype=torch.int64)


@pytest.mark.parametrize("cls", [Moebius, SmoothLeakyMLP, TriangularMLP, VolumePreservingLinear])
@pytest.mark.parametrize("dim", [0, -1, 2.0, True])
def test_bad_dim(cls, dim):
    with pytest.raises(ConfigError, match=rf"'dim' of {cls.__name__} must be an integer >= 1"):
        cls(dim)


@pytest.mark.parametrize("cls", [Moebius, SmoothLeakyMLP, TriangularMLP, VolumePreservingLinear])
def test_bad_seed(cls):
    with pytest.raises(ConfigError, match="'seed'.*non-negative integer"):
        cls(3, seed=-1)
    with pytest.raises(ConfigError, match="'seed'.*non-negative integer"):
        cls(3, seed=1.5)


@pytest.mark.parametrize("cls", [SmoothLeakyMLP, TriangularMLP])
def test_bad_n_layers(cls):
    with pytest.raises(ConfigError, match="'n_layers'.*integer >= 1"):
        cls(3, n_layers=0)


class _Quadratic(Mixing):
    """Test-only mixing R^2 -> R^3 without an inverse: x = (z1, z2, z1 * z2)."""

    def __init__(self):
        super().__init__(2, 3)
        self.register_buffer("scale", torch.ones((), dtype=F64))

    def forward(self, z):
        self._check_input(z, "z", 2)
        return self.scale * torch.stack([z[..., 0], z[..., 1], z[..., 0] * z[..., 1]], dim=-1)


def test_base_defaults_on_a_non_square_mixing():
    m = _Quadratic()
    z = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=F64)
    jac = m.jacobian(z)
    expected = torch.tensor(
        [[[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]], [[1.0, 0.0], [0.0, 1.0], [-1.0, 3.0]]], dtype=F64
    )
    torch.testing.assert_close(jac, expected)
    with pytest.raises(NotImplementedError, match="_Quadratic has no exact inverse"):
        m.inverse(torch.zeros(3, dtype=F64))
    with pytest.raises(NotImplementedError, match="square Jacobians"):
        m.log_abs_det_jacobian(z)


def test_make_mixing():
    assert set(MIXINGS) == {
        "invertible_mlp",
        "moebius",
        "volume_preserving_linear",
        "smooth_leaky_mlp",
        "triangular_mlp",
    }
    m = make_mixing("moebius", 3, seed=2, dtype=F64)
    ref = Moebius(3, seed=2, dtype=F64)
    assert torch.equal(m.A, ref.A) and torch.equal(m.a, ref.a)
    assert isinstance(make_mixing("invertible_mlp", 3, cond_pool_size=50), InvertibleMLP)
    with pytest.raises(ConfigError, match="Unknown mixing 'mobius': choose one of"):
        make_mixing("mobius", 3)
    with pytest.raises(ConfigError, match="Bad options for mixing 'moebius'"):
        make_mixing("moebius", 3, n_layers=2)


def test_linear_mixing_in_common_interface():
    m = LinearMixing(torch.tensor([[2.0, 1.0], [0.0, 1.0]], dtype=F64))
    z = torch.tensor([[1.0, 1.0]], dtype=F64)
    torch.testing.assert_close(m(z), torch.tensor([[3.0, 1.0]], dtype=F64))


def test_numpy_integers_and_floats_accepted():
    m = Moebius(np.int64(3), alpha=np.float32(1.5), seed=np.int64(2), dtype=F64)
    ref = Moebius(3, alpha=1.5, seed=2, dtype=F64)
    assert m.dim_in == 3 and isinstance(m.dim_in, int) and float(m.alpha) == 1.5
    assert torch.equal(m.A, ref.A)
