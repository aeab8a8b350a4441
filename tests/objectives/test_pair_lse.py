"""chunked_pair_lse: the one-pass logsumexp over all ordered pairs of one set (the uniformity
term), against a dense float64 reference, the two-step chunked path, and its refusals."""

import math

import pytest
import torch

from unmix.objectives import _chunked, _compiled
from unmix.objectives._chunked import (
    DotKernel,
    PowerKernel,
    SqL2Kernel,
    chunked_lse,
    chunked_pair_lse,
)


def _x(n, d, seed, dtype=torch.float64):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _dense(x, p, tau):
    """log Σ_{i≠j} e^{−Σ_k |x_ik − x_jk|^p / τ}, autograd through an explicit N × N × n tensor."""
    s = -(x.unsqueeze(1) - x.unsqueeze(0)).abs().pow(p).sum(-1) / tau
    s = s.masked_fill(torch.eye(x.shape[0], dtype=torch.bool), float("-inf"))
    return torch.logsumexp(s.flatten(), dim=0)


def _kernel(p, tau):
    return SqL2Kernel(tau) if p == 2 else PowerKernel(p, p, tau)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5])
@pytest.mark.parametrize("rows", [None, 7, 64])
def test_value_and_gradient_equal_a_dense_reference(p, rows):
    x = _x(50, 4, 3)
    a = x.clone().requires_grad_()
    got = chunked_pair_lse(_kernel(p, 0.7), a, rows=rows)
    (g_got,) = torch.autograd.grad(3.0 * got, a)  # an incoming weight other than 1
    b = x.clone().requires_grad_()
    ref = _dense(b, p, 0.7)
    (g_ref,) = torch.autograd.grad(3.0 * ref, b)
    assert float(got.detach()) == pytest.approx(float(ref.detach()), rel=1e-12)
    torch.testing.assert_close(g_got, g_ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_equals_the_two_step_chunked_path_in_float32(p):
    """The same sum as chunked_lse over the same view followed by a logsumexp over the rows (the
    previous form of the uniformity term), which recomputes every block in its backward."""
    x = _x(300, 10, 5, torch.float32)
    a = x.clone().requires_grad_()
    one = chunked_pair_lse(_kernel(p, 0.1), a, rows=32)
    (g_one,) = torch.autograd.grad(one, a)
    b = x.clone().requires_grad_()
    none = b.new_full((300, 1), float("-inf"))
    two = torch.logsumexp(
        chunked_lse(_kernel(p, 0.1), b, b, None, none, cross=False, same=True, rows=32), dim=0
    )
    (g_two,) = torch.autograd.grad(two, b)
    assert float(one.detach()) == pytest.approx(float(two.detach()), rel=1e-5)
    torch.testing.assert_close(g_one, g_two, rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(
    not _compiled.compiler_available("cpu"), reason="torch.compile cannot build CPU kernels here"
)
def test_compiled_kernel_path_equals_the_eager_one():
    n = _compiled.AUTO_MIN_CANDIDATES
    x = _x(n, 3, 9)
    assert _compiled.use_compiled(x.device, n)
    a = x.clone().requires_grad_()
    got = chunked_pair_lse(PowerKernel(3.0, 3.0, 0.5), a)  # run as CompiledPowerKernel
    (g_got,) = torch.autograd.grad(got, a)
    with _compiled.loss_kernels("eager", "cpu"):
        b = x.clone().requires_grad_()
        ref = chunked_pair_lse(PowerKernel(3.0, 3.0, 0.5), b)
        (g_ref,) = torch.autograd.grad(ref, b)
    assert float(got.detach()) == pytest.approx(float(ref.detach()), rel=1e-10)
    torch.testing.assert_close(g_got, g_ref, rtol=1e-8, atol=1e-12)


def test_no_gradient_wanted_gives_the_value_only():
    x = _x(40, 3, 1)
    with torch.no_grad():
        got = chunked_pair_lse(SqL2Kernel(1.0), x, rows=9)
    assert float(got) == pytest.approx(float(_dense(x, 2.0, 1.0)), rel=1e-12)
    assert not got.requires_grad


@pytest.mark.parametrize("kernel", [DotKernel(1.0), PowerKernel(2.0, 1.0, 1.0)])
def test_an_asymmetric_kernel_is_refused(kernel):
    with pytest.raises(ValueError, match="symmetric"):
        chunked_pair_lse(kernel, _x(8, 2, 0))


def test_saves_only_per_row_tensors():
    """Autograd holds O(N·n): the rows' lse, the total and the rows' gradient side."""
    x = _x(2048, 10, 2, torch.float32).requires_grad_()
    out = chunked_pair_lse(SqL2Kernel(0.5), x)
    saved = out.grad_fn.saved_tensors
    assert max(t.numel() for t in saved) <= 2048 * 10
    assert math.isfinite(float(out.detach()))
    assert _chunked.LOGIT_BLOCK_ELEMENTS < 2048 * 2048  # the blocks really are chunked
