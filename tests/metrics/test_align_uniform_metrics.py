"""Alignment/uniformity losses and Theorem 1's terms against slow double loops over pairs."""

import math

import pytest
import torch

from unmix.errors import ConfigError
from unmix.metrics import align_loss, alignment_term, uniform_loss, uniformity_term


def _sphere(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


def _align_loop(x, y, alpha):
    return sum(math.dist(a.tolist(), b.tolist()) ** alpha for a, b in zip(x, y, strict=True)) / len(
        x
    )


def _uniform_loop(x, t):
    pairs = [
        math.exp(-t * math.dist(x[i].tolist(), x[j].tolist()) ** 2)
        for i in range(len(x))
        for j in range(i + 1, len(x))
    ]
    return math.log(sum(pairs) / len(pairs))


@pytest.mark.parametrize("alpha", [2.0, 1.0, 0.5, 3.0])
def test_align_loss_matches_loop(alpha):
    x, y = _sphere(40, 5, 0), _sphere(40, 5, 1)
    assert float(align_loss(x, y, alpha)) == pytest.approx(_align_loop(x, y, alpha), rel=1e-12)


@pytest.mark.parametrize("t", [2.0, 0.5, 7.0])
def test_uniform_loss_matches_loop_over_distinct_pairs(t):
    x = _sphere(30, 4, 2)
    assert float(uniform_loss(x, t)) == pytest.approx(_uniform_loop(x, t), rel=1e-12)


def test_uniform_loss_is_nonpositive_and_zero_when_collapsed():
    for seed in range(5):
        assert float(uniform_loss(_sphere(20, 3, seed))) <= 0.0
    collapsed = _sphere(1, 3, 0).repeat(10, 1)
    assert float(uniform_loss(collapsed)) == pytest.approx(0.0, abs=1e-15)
    # two antipodal points: log e^{-t·4}
    x = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    assert float(uniform_loss(x, t=2.0)) == pytest.approx(-8.0, abs=1e-12)


def test_losses_are_differentiable_with_finite_gradients_at_ties():
    x = _sphere(6, 3, 3)
    x = torch.cat([x, x[:2]]).requires_grad_()  # duplicated points: zero pairwise distances
    y = x.detach().clone()
    for alpha in (2.0, 1.0, 0.5):  # alpha < 1: the slope of d^alpha is infinite at d = 0
        x.grad = None
        (uniform_loss(x) + align_loss(x, y, alpha)).backward()
        assert torch.isfinite(x.grad).all(), alpha


def test_alignment_term_matches_loop():
    x, y = _sphere(25, 4, 4), _sphere(25, 4, 5)
    tau = 0.3
    ref = -sum(float(a @ b) for a, b in zip(x, y, strict=True)) / (tau * 25)
    assert float(alignment_term(x, y, tau)) == pytest.approx(ref, rel=1e-12)


def _uniformity_loop(x, tau, negs):
    total = 0.0
    for i, xi in enumerate(x):
        cand = negs(i)
        total += math.log(sum(math.exp(float(c @ xi) / tau) for c in cand) / len(cand))
    return total / len(x)


def test_uniformity_term_matches_loop_for_all_negative_layouts():
    x, tau = _sphere(12, 3, 6), 0.5
    in_batch = _uniformity_loop(x, tau, lambda i: [x[j] for j in range(len(x)) if j != i])
    assert float(uniformity_term(x, tau)) == pytest.approx(in_batch, rel=1e-12)

    shared = _sphere(7, 3, 7)
    ref = _uniformity_loop(x, tau, lambda i: list(shared))
    assert float(uniformity_term(x, tau, negatives=shared)) == pytest.approx(ref, rel=1e-12)

    per = torch.stack([_sphere(5, 3, 100 + i) for i in range(12)])
    ref = _uniformity_loop(x, tau, lambda i: list(per[i]))
    assert float(uniformity_term(x, tau, negatives=per)) == pytest.approx(ref, rel=1e-12)


def test_uniformity_term_gradient_flows():
    x = _sphere(8, 3, 8).requires_grad_()
    uniformity_term(x, 1.0).backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_normalisation_is_checked_with_a_readable_message():
    x = _sphere(10, 3, 9) * 1.01
    with pytest.raises(ConfigError, match=r"'x' must be L2-normalised .* deviation"):
        uniform_loss(x)
    with pytest.raises(ConfigError, match="'y' must be L2-normalised"):
        align_loss(_sphere(10, 3, 9), x)
    # opting out evaluates the formula anyway
    assert torch.isfinite(uniform_loss(x, check_normalized=False))
    assert torch.isfinite(align_loss(x, x, check_normalized=False))
    # float32 normalisation error is far below the tolerance
    x32 = _sphere(100, 10, 10).float()
    uniform_loss(x32 / x32.norm(dim=-1, keepdim=True))
    with pytest.raises(ConfigError, match="'negatives' must be L2-normalised"):
        uniformity_term(_sphere(4, 3, 0), negatives=x, check_normalized=True)


def test_other_errors():
    x = _sphere(10, 3, 0)
    with pytest.raises(ConfigError, match="same shape"):
        align_loss(x, x[:5])
    with pytest.raises(ConfigError, match="'alpha' must be positive"):
        align_loss(x, x, alpha=0)
    with pytest.raises(ConfigError, match="'t' must be positive"):
        uniform_loss(x, t=-1.0)
    with pytest.raises(ConfigError, match="at least 2 samples"):
        uniform_loss(x[:1])
    with pytest.raises(ConfigError, match="'tau' must be a positive finite number"):
        alignment_term(x, x, tau=0.0)
    with pytest.raises(ConfigError, match=r"'negatives' must be a tensor of shape \(M, 3\)"):
        uniformity_term(x, negatives=torch.ones(4, 2))
    with pytest.raises(ConfigError, match=r"must have shape \(N, n\)"):
        uniform_loss(x[0])


@pytest.mark.parametrize("p", [1.0, 1.5, 3.0])
def test_lp_forms_match_scipy_minkowski(p):
    # align: mean ‖x_i − y_i‖_p^α; uniform: log of the mean over distinct pairs of e^{−t‖·‖_p^p}
    from scipy.spatial.distance import cdist, pdist

    g = torch.Generator().manual_seed(11)
    x, y = torch.rand(13, 4, generator=g, dtype=torch.float64), torch.rand(13, 4, generator=g)
    y = y.double()
    pair = cdist(x.numpy(), y.numpy(), "minkowski", p=p).diagonal()
    for alpha in (p, 2.0, 0.5):
        got = float(align_loss(x, y, alpha, check_normalized=False, p=p))
        assert got == pytest.approx(float((pair**alpha).mean()), rel=1e-12)
    d = pdist(x.numpy(), "minkowski", p=p) ** p
    want = math.log(float(torch.tensor(-0.7 * d).exp().mean()))
    assert float(uniform_loss(x, 0.7, check_normalized=False, p=p)) == pytest.approx(
        want, rel=1e-12
    )


def test_p_2_is_wang_and_isola_and_other_norms_are_validated():
    x, y = _sphere(9, 3, 12), _sphere(9, 3, 13)
    assert float(align_loss(x, y, p=2.0)) == pytest.approx(_align_loop(x, y, 2.0), rel=1e-12)
    assert float(uniform_loss(x, 2.0, p=2.0)) == pytest.approx(_uniform_loop(x, 2.0), rel=1e-12)
    for bad in (0.5, float("inf")):
        with pytest.raises(ConfigError, match="'p'"):
            align_loss(x, y, p=bad)
        with pytest.raises(ConfigError, match="'p'"):
            uniform_loss(x, p=bad)
