"""c_IMA: closed forms for linear maps, invariances, finite-difference Jacobians, fallbacks."""

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.metrics import (
    batched_jacobian,
    c_ima,
    c_ima_from_jacobian,
    c_ima_of_mean_jacobian,
    global_c_ima,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _orthogonal(n, seed):
    q, r = torch.linalg.qr(torch.randn(n, n, generator=_gen(seed), dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


def _z(n=64, d=3, seed=0):
    return torch.randn(n, d, generator=_gen(seed), dtype=torch.float64)


def _closed_form_linear(a: np.ndarray) -> float:
    """½[Σ_k log (AᵀA)_kk − log det AᵀA] for an (m, n) matrix A, in NumPy."""
    g = a.T @ a
    return 0.5 * (np.log(np.diag(g)).sum() - np.linalg.slogdet(g)[1])


def test_orthogonal_and_diagonal_maps_have_zero_contrast():
    q = _orthogonal(4, 1)
    scale = torch.tensor([0.1, 2.0, -5.0, 30.0], dtype=torch.float64)
    z = _z(d=4)
    for fn in (lambda v: v @ q.T, lambda v: v * scale, lambda v: (v * scale) @ q.T):
        c = c_ima(fn, z)
        assert c.shape == (64,) and c.dtype == torch.float64
        assert c.abs().max() < 1e-12


@pytest.mark.parametrize("m", [3, 6])
def test_linear_map_matches_closed_form(m):
    a = torch.randn(m, 3, generator=_gen(2), dtype=torch.float64)
    c = c_ima(lambda v: v @ a.T, _z())
    expected = _closed_form_linear(a.numpy())
    assert expected > 0.01
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-10)
    assert global_c_ima(lambda v: v @ a.T, _z()) == pytest.approx(expected, rel=1e-10)
    # a constant Jacobian: the batch-mean Jacobian gives the same number
    assert c_ima_of_mean_jacobian(lambda v: v @ a.T, _z()) == pytest.approx(expected, rel=1e-10)


def _mlp(m=5, n=3, seed=3):
    w1 = torch.randn(n, 8, generator=_gen(seed), dtype=torch.float64)
    w2 = torch.randn(8, m, generator=_gen(seed + 1), dtype=torch.float64)
    return lambda v: torch.tanh(v @ w1) @ w2 + 0.5 * v.pow(3).sum(-1, keepdim=True)


def _fd_jacobian(fn, z, h=1e-6):
    """Central finite differences, sample by sample (independent of torch.func)."""
    zs = z.numpy()
    out = []
    for zi in zs:
        cols = []
        for k in range(zs.shape[1]):
            e = np.zeros_like(zi)
            e[k] = h
            fp = fn(torch.as_tensor(zi + e)[None]).numpy()[0]
            fm = fn(torch.as_tensor(zi - e)[None]).numpy()[0]
            cols.append((fp - fm) / (2 * h))
        out.append(np.stack(cols, axis=1))
    return np.stack(out)


@pytest.mark.parametrize("m", [3, 5])
def test_nonlinear_map_matches_finite_difference_reference(m):
    fn, z = _mlp(m=m), _z(n=20, seed=4)
    j_fd = _fd_jacobian(fn, z)
    j = batched_jacobian(fn, z)
    np.testing.assert_allclose(j.numpy(), j_fd, atol=1e-7)
    ref = [
        np.log(np.linalg.norm(jj, axis=0)).sum() - 0.5 * np.linalg.slogdet(jj.T @ jj)[1]
        for jj in j_fd
    ]
    np.testing.assert_allclose(c_ima(fn, z).numpy(), ref, atol=1e-7)
    # the reference's quantity: contrast of the batch-mean Jacobian — a different number
    mean_j = c_ima_of_mean_jacobian(fn, z)
    assert mean_j == pytest.approx(_closed_form_linear(j_fd.mean(axis=0)), abs=1e-7)
    assert abs(mean_j - global_c_ima(fn, z)) > 1e-3


def test_invariances_and_hadamard_bound():
    j = torch.randn(50, 6, 4, generator=_gen(5), dtype=torch.float64)
    c = c_ima_from_jacobian(j)
    assert (c >= -1e-12).all()  # Hadamard's inequality
    q = _orthogonal(6, 6)
    d = torch.diag(torch.tensor([3.0, -0.2, 1.0, 9.0], dtype=torch.float64))
    torch.testing.assert_close(c_ima_from_jacobian(q @ j @ d), c, rtol=0, atol=1e-10)
    # square and tall paths agree: appending zero rows changes nothing
    sq = j[:, :4, :]
    tall = torch.cat([sq, torch.zeros(50, 3, 4, dtype=torch.float64)], dim=1)
    torch.testing.assert_close(
        c_ima_from_jacobian(tall), c_ima_from_jacobian(sq), rtol=0, atol=1e-10
    )


def test_singular_jacobian_gives_inf():
    j = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    assert torch.isinf(c_ima_from_jacobian(j))


def test_dtype_chunking_and_fallback_loop():
    fn, z = _mlp(), _z(n=10, seed=7)
    c64 = c_ima(fn, z)
    torch.testing.assert_close(c_ima(fn, z, chunk_size=3), c64, rtol=0, atol=1e-12)

    lin = torch.randn(3, 3, generator=_gen(8))
    assert c_ima(lambda v: v @ lin, z.float()).dtype == torch.float32

    def not_functorch(v):
        if float(v.detach().sum()) > -1e300:  # data-dependent control flow breaks vmap
            return fn(v)
        return v

    with pytest.warns(RuntimeWarning, match="falling back to a per-sample loop"):
        c_loop = c_ima(not_functorch, z)
    torch.testing.assert_close(c_loop, c64, rtol=0, atol=1e-12)


def test_gradient_flows_into_map_parameters():
    layer = torch.nn.Linear(3, 5).double()
    c = c_ima(lambda v: torch.tanh(layer(v)), _z(n=8, seed=9)).mean()
    c.backward()
    assert layer.weight.grad is not None and torch.isfinite(layer.weight.grad).all()
    assert layer.weight.grad.abs().sum() > 0


def test_errors_are_readable():
    with pytest.raises(ConfigError, match=r"needs m >= n >= 1"):
        c_ima_from_jacobian(torch.randn(2, 3))
    with pytest.raises(ConfigError, match=r"'z' must have shape \(N, n\)"):
        c_ima(lambda v: v, torch.randn(3))
    with pytest.raises(ConfigError, match="'chunk_size' must be a positive integer"):
        c_ima(lambda v: v, torch.randn(4, 3), chunk_size=0)
    with pytest.raises(ConfigError, match=r"'jacobian' must be a floating tensor"):
        c_ima_from_jacobian(torch.ones(3, dtype=torch.float64))
