"""SmoothLeakyMLP (paper 004, Sec. 4.1) and TriangularMLP (paper 004, Sec. 4.2 / Fig. 4).

References: numpy's ``logaddexp`` for the smooth leaky ReLU, autograd for its derivative, scipy's
``brentq`` root finder for its inverse, explicit per-layer loops, and structural properties
(orthogonality, triangularity, c_IMA > 0).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import optimize

from unmix.errors import ConfigError
from unmix.mixing import SmoothLeakyMLP, TriangularMLP, smooth_leaky_relu, smooth_leaky_relu_inverse
from unmix.mixing.ima_mlp import smooth_leaky_relu_derivative

F64 = torch.float64
GRID = torch.cat(
    [
        torch.linspace(-60.0, 60.0, 2001, dtype=F64),
        torch.tensor([-1e6, -1e3, -30.0, -1e-8, 0.0, 1e-8, 30.0, 1e3, 1e6], dtype=F64),
    ]
)


def test_smooth_leaky_relu_formula():
    x = GRID.numpy()
    ref = 0.2 * x + 0.8 * np.logaddexp(0.0, x)
    np.testing.assert_allclose(smooth_leaky_relu(GRID).numpy(), ref, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(
        smooth_leaky_relu(GRID, 0.5).numpy(),
        0.5 * x + 0.5 * np.logaddexp(0.0, x),
        rtol=1e-15,
        atol=1e-15,
    )


def test_smooth_leaky_relu_derivative_matches_autograd():
    x = GRID[:2001].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(smooth_leaky_relu(x).sum(), x)
    torch.testing.assert_close(smooth_leaky_relu_derivative(x.detach()), grad, rtol=1e-14, atol=0)
    d = smooth_leaky_relu_derivative(GRID)
    assert torch.all(d >= 0.2) and torch.all(d <= 1.0)  # increasing, slope in (0.2, 1)
    assert torch.all(torch.diff(smooth_leaky_relu(GRID[:2001])) > 0)


def test_smooth_leaky_relu_inverse_round_trip_and_brentq():
    y = smooth_leaky_relu(GRID)
    x = smooth_leaky_relu_inverse(y)
    assert ((x - GRID).abs() / GRID.abs().clamp(min=1.0)).max() <= 1e-10
    # forward(inverse(y)) = y on arbitrary y too
    y2 = torch.linspace(-1e4, 1e4, 5001, dtype=F64)
    assert (smooth_leaky_relu(smooth_leaky_relu_inverse(y2)) - y2).abs().max() <= 1e-10 * 1e4
    # an independent root finder
    for target in (-7.3, -0.4, 0.0, 0.3, 2.0, 25.0):
        ref = optimize.brentq(
            lambda t, v=target: 0.2 * t + 0.8 * np.logaddexp(0.0, t) - v, -100, 100, xtol=1e-14
        )
        got = float(smooth_leaky_relu_inverse(torch.tensor(target, dtype=F64)))
        assert got == pytest.approx(ref, abs=1e-10)


def test_smooth_leaky_relu_inverse_dtype_and_slopes():
    y = torch.tensor([-3.0, 0.0, 2.0])
    out = smooth_leaky_relu_inverse(y)
    assert out.dtype == torch.float32
    for slope in (0.01, 0.5, 1.0):
        x = smooth_leaky_relu_inverse(smooth_leaky_relu(GRID, slope), slope)
        assert ((x - GRID).abs() / GRID.abs().clamp(min=1.0)).max() <= 1e-10


def test_smooth_leaky_mlp_structure():
    m = SmoothLeakyMLP(5, seed=1, dtype=F64)
    assert len(m.weights) == 3
    for w in m.weights:
        torch.testing.assert_close(w.T @ w, torch.eye(5, dtype=F64), rtol=0, atol=1e-14)
    z = torch.randn(30, 5, generator=torch.Generator().manual_seed(0), dtype=F64)  # N(0, I)
    h = z
    for i, w in enumerate(m.weights):
        h = h @ w.T
        if i < 2:
            h = 0.2 * h + 0.8 * torch.nn.functional.softplus(h, threshold=50)
    torch.testing.assert_close(m(z), h, rtol=1e-13, atol=1e-13)
    # orthogonal layers: log|det J| is only the nonlinearities' log-slopes, all in (log 0.2, 0)
    lad = m.log_abs_det_jacobian(z)
    assert torch.all(lad < 0) and torch.all(lad > 2 * 5 * np.log(0.2))


def test_smooth_leaky_mlp_round_trip_wide_inputs():
    m = SmoothLeakyMLP(4, n_layers=5, seed=2, dtype=F64)
    z = 20 * torch.randn(500, 4, generator=torch.Generator().manual_seed(3), dtype=F64)
    assert (m.inverse(m(z)) - z).abs().max() <= 1e-10


def test_smooth_leaky_mlp_errors():
    with pytest.raises(
        ConfigError, match=r"'negative_slope' of SmoothLeakyMLP must lie in \(0, 1\]"
    ):
        SmoothLeakyMLP(3, negative_slope=1.5)
    with pytest.raises(ConfigError, match="'negative_slope' of SmoothLeakyMLP must be a positive"):
        SmoothLeakyMLP(3, negative_slope=0.0)


def test_triangular_weights_really_triangular():
    m = TriangularMLP(6, n_layers=4, seed=3, dtype=F64)
    assert len(m.weights) == 4
    for w in m.weights:
        assert torch.equal(torch.tril(w, diagonal=-1), torch.zeros(6, 6, dtype=F64))
        diag = torch.diagonal(w).abs()
        assert torch.all(diag >= 0.5) and torch.all(diag <= 1.5)
        upper = w[torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)]
        assert torch.all(upper.abs() <= 1.0) and torch.all(upper != 0)
    signs = torch.cat([torch.sign(torch.diagonal(w)) for w in m.weights])
    assert (signs > 0).any() and (signs < 0).any()  # random signs (24 draws)


def test_triangular_jacobian_and_outside_ima():
    m = TriangularMLP(4, seed=0, dtype=F64)
    z = torch.randn(40, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    jac = m.jacobian(z)
    assert torch.equal(torch.tril(jac, diagonal=-1), torch.zeros_like(jac))
    # log|det J| = sum of log|diagonal| of the triangular Jacobian
    torch.testing.assert_close(
        m.log_abs_det_jacobian(z), torch.diagonal(jac, dim1=-2, dim2=-1).abs().log().sum(-1)
    )
    # c_IMA = sum_k log ||J_k|| - log|det J| > 0: columns are not orthogonal (not in IMA class)
    c_ima = jac.norm(dim=-2).log().sum(-1) - torch.linalg.slogdet(jac).logabsdet
    assert torch.all(c_ima > 1e-2)


def test_triangular_leaky_relu_variant():
    m = TriangularMLP(3, nonlinearity="leaky_relu", negative_slope=0.1, seed=4, dtype=F64)
    z = torch.randn(20, 3, generator=torch.Generator().manual_seed(0), dtype=F64)
    h = z
    for i, w in enumerate(m.weights):
        h = h @ w.T
        if i < 2:
            h = torch.where(h > 0, h, 0.1 * h)
    torch.testing.assert_close(m(z), h, rtol=0, atol=1e-14)
    assert (m.inverse(m(z)) - z).abs().max() <= 1e-12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(nonlinearity="tanh"), r"'nonlinearity' of TriangularMLP must be one of"),
        (dict(diag_range=(0.0, 1.0)), r"'diag_range' of TriangularMLP must be \(low, high\)"),
        (dict(diag_range=(2.0, 1.0)), "'diag_range'"),
        (dict(diag_range=3.0), "'diag_range'"),
        (dict(negative_slope=2.0), r"'negative_slope' of TriangularMLP must lie in \(0, 1\]"),
        (dict(nonlinearity="leaky_relu", negative_slope=-1.0), "'negative_slope'"),
    ],
)
def test_triangular_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        TriangularMLP(3, **kwargs)
