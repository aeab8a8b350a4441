"""AlignUniform objective: Wang & Isola's combination, against loops over pairs."""

import math

import pytest
import torch

from unmix.errors import ConfigError
from unmix.objectives import AlignUniform


def _sphere(n, d, seed):
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


def _align(x, y, alpha):
    return sum(math.dist(a.tolist(), b.tolist()) ** alpha for a, b in zip(x, y, strict=True)) / len(
        x
    )


def _uniform(x, t):
    vals = [
        math.exp(-t * math.dist(x[i].tolist(), x[j].tolist()) ** 2)
        for i in range(len(x))
        for j in range(i + 1, len(x))
    ]
    return math.log(sum(vals) / len(vals))


@pytest.mark.parametrize("wa,wu,alpha,t", [(1, 1, 2, 2), (0.5, 3.0, 1.0, 0.7), (0, 1, 2, 2)])
def test_matches_loop_reference_with_uniformity_averaged_over_views(wa, wu, alpha, t):
    h, hp = _sphere(20, 4, 0), _sphere(20, 4, 1)
    loss = AlignUniform(align_weight=wa, uniform_weight=wu, alpha=alpha, t=t)(h, hp)
    ref = wa * _align(h, hp, alpha) + wu * 0.5 * (_uniform(h, t) + _uniform(hp, t))
    assert float(loss) == pytest.approx(ref, rel=1e-12)


def test_collapsed_aligned_features_give_zero_and_gradients_flow():
    h = _sphere(1, 3, 2).repeat(8, 1)
    assert float(AlignUniform()(h, h.clone())) == pytest.approx(0.0, abs=1e-15)
    x = _sphere(16, 3, 3).requires_grad_()
    AlignUniform()(x, _sphere(16, 3, 4)).backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_errors_are_readable():
    h = _sphere(8, 3, 5)
    with pytest.raises(ConfigError, match="'h_pos' must be L2-normalised"):
        AlignUniform()(h, 2 * h)
    assert torch.isfinite(AlignUniform(check_normalized=False)(h, 2 * h))
    with pytest.raises(ConfigError, match="takes no separately drawn negatives"):
        AlignUniform()(h, h, h)
    with pytest.raises(ConfigError, match="both 0"):
        AlignUniform(align_weight=0, uniform_weight=0)
    with pytest.raises(ConfigError, match="'t' of AlignUniform must be a finite number > 0"):
        AlignUniform(t=0)
    with pytest.raises(ConfigError, match="'align_weight' of AlignUniform must be a finite number"):
        AlignUniform(align_weight=-1)


@pytest.mark.parametrize("p", [1.0, 3.0])
def test_lp_form_matches_loop_on_box_features(p):
    g = torch.Generator().manual_seed(5)
    h, hp = torch.rand(15, 3, generator=g, dtype=torch.float64), torch.rand(15, 3, generator=g)
    hp = hp.double()

    def dist(a, b):
        return sum(abs(u - v) ** p for u, v in zip(a.tolist(), b.tolist(), strict=True)) ** (1 / p)

    align = sum(dist(a, b) ** p for a, b in zip(h, hp, strict=True)) / 15

    def uniform(x, t):
        vals = [math.exp(-t * dist(x[i], x[j]) ** p) for i in range(15) for j in range(i + 1, 15)]
        return math.log(sum(vals) / len(vals))

    fn = AlignUniform(align_weight=4.0, alpha=p, t=3.0, p=p, check_normalized=False)
    ref = 4.0 * align + 0.5 * (uniform(h, 3.0) + uniform(hp, 3.0))
    assert float(fn(h, hp)) == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ConfigError, match="'p'"):
        AlignUniform(p=0.5)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_the_chunked_uniformity_term_equals_the_metric_with_its_gradients(p):
    # the objective forms the uniformity term as a chunked logsumexp (no N × N tensor); value
    # and gradient equal unmix.metrics.uniform_loss (torch.pdist) in float64
    from unmix.metrics import uniform_loss

    x = torch.rand(300, 5, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    x.requires_grad_()
    fused = AlignUniform(t=6.0, p=p, check_normalized=False)._uniform(x)
    (g_fused,) = torch.autograd.grad(fused, x)
    ref = uniform_loss(x, 6.0, check_normalized=False, p=p)
    (g_ref,) = torch.autograd.grad(ref, x)
    assert float(fused.detach()) == pytest.approx(float(ref.detach()), rel=1e-12)
    torch.testing.assert_close(g_fused, g_ref, rtol=1e-9, atol=1e-12)
