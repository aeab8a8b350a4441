"""Hard-negative weighting (``hardness`` β) of the InfoNCE losses against a loop reference.

Reference (Robinson et al. 2021, the importance-weighted negative term without debiasing): for
anchor ``i`` with negatives' logits ``s_j`` (j = 1..M), weights ``w_j = M softmax(β s)_j`` held
constant, the loss is ``−s_pos + log(e^{s_pos} + Σ_j w_j e^{s_j})``; β = 0 is InfoNCE.
"""

import math

import pytest
import torch

from unmix.errors import ConfigError
from unmix.objectives import InfoNCE, LpInfoNCE
from unmix.registry import OBJECTIVES


def _sim(loss):
    if isinstance(loss, LpInfoNCE):
        return lambda a, b: -(((a - b).abs() ** loss.p).sum() ** (loss.q / loss.p)) / loss.tau
    return lambda a, b: (a * b).sum() / loss.tau


def _reference(loss, h, hp, neg, beta):
    """One anchor at a time: its negatives listed explicitly, the weights under no_grad."""
    s = _sim(loss)

    def one_way(a, b):
        total = 0.0
        for i in range(len(a)):
            if loss.negatives == "external":
                negs = [s(a[i], r) for r in (neg if neg.ndim == 2 else neg[i])]
            else:
                negs = []
                if loss.cross_view_negatives:
                    negs += [s(a[i], b[j]) for j in range(len(a)) if j != i]
                if loss.same_view_negatives:
                    negs += [s(a[i], a[j]) for j in range(len(a)) if j != i]
                if loss.include_self:  # δ(a, a) = 0 exactly: a constant logit for LpInfoNCE
                    lp = isinstance(loss, LpInfoNCE)
                    negs.append(a.new_zeros(()) if lp else s(a[i], a[i]))
                if loss.negatives == "shared":
                    negs += [s(a[i], r) for r in neg]
            logits = torch.stack(negs)
            with torch.no_grad():
                w = len(negs) * torch.softmax(beta * logits, dim=0)
            pos = s(a[i], b[i])
            total = total - pos + torch.log(pos.exp() + (w * logits.exp()).sum())
        return total / len(a)

    out = one_way(h, hp)
    return 0.5 * (out + one_way(hp, h)) if loss.symmetric else out


CANDIDATE_SETS = [
    ({}, None),
    ({"same_view_negatives": True, "symmetric": True}, None),
    ({"same_view_negatives": True, "include_self": True}, None),
    ({"cross_view_negatives": False, "same_view_negatives": True}, None),
    ({"negatives": "shared"}, (5, 3)),
    ({"negatives": "external"}, (5, 3)),
    ({"negatives": "external"}, (6, 4, 3)),
]
LOSSES = [
    (InfoNCE, {}),
    (LpInfoNCE, {"p": 2.0}),
    (LpInfoNCE, {"p": 1.0}),
    (LpInfoNCE, {"p": 3.0, "q": 1.5}),
]


@pytest.mark.parametrize("cls,kw", LOSSES)
@pytest.mark.parametrize("cands,neg_shape", CANDIDATE_SETS)
@pytest.mark.parametrize("fused", [True, False])
def test_value_and_gradient_match_the_loop_reference(cls, kw, cands, neg_shape, fused):
    beta = 1.7
    loss = cls(**kw, tau=0.7, fused=fused, hardness=beta, **cands)
    g = torch.Generator().manual_seed(3)
    h = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    hp = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    inputs = [h, hp]
    neg = None
    if neg_shape is not None:
        neg = torch.randn(*neg_shape, generator=g, dtype=torch.float64, requires_grad=True)
        inputs.append(neg)
    got = loss(h, hp, neg)
    want = _reference(loss, h, hp, neg, beta)
    assert got.item() == pytest.approx(want.item(), rel=1e-10, abs=1e-12)
    for a, b in zip(
        torch.autograd.grad(got, inputs), torch.autograd.grad(want, inputs), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("cls,kw", LOSSES[:2])
def test_zero_hardness_is_infonce_and_small_hardness_tends_to_it(cls, kw):
    g = torch.Generator().manual_seed(0)
    h, hp = torch.randn(2, 8, 4, generator=g, dtype=torch.float64)
    plain = cls(**kw, same_view_negatives=True)(h, hp).item()
    assert cls(**kw, same_view_negatives=True, hardness=0.0)(h, hp).item() == plain
    near = cls(**kw, same_view_negatives=True, hardness=1e-7)(h, hp).item()
    assert near == pytest.approx(plain, rel=1e-6)
    # and a larger β weighs the close negatives up: the loss rises with β
    values = [cls(**kw, same_view_negatives=True, hardness=b)(h, hp).item() for b in (0.5, 2, 8)]
    assert plain < values[0] < values[1] < values[2]


def test_large_hardness_puts_every_weight_on_the_closest_negative():
    # β → ∞: Σ_j w_j e^{s_j} → M e^{max_j s_j}
    g = torch.Generator().manual_seed(1)
    h, hp = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)
    loss = LpInfoNCE(p=2.0, hardness=500.0)
    cross = -torch.cdist(h, hp).pow(2)
    pos = cross.diagonal()
    top = cross.masked_fill(torch.eye(5, dtype=torch.bool), float("-inf")).amax(dim=1)
    want = (torch.logaddexp(pos, math.log(4) + top) - pos).mean()
    assert loss(h, hp).item() == pytest.approx(want.item(), rel=1e-3)


@pytest.mark.parametrize("fused", [True, False])
def test_collapsed_features_give_the_log_of_the_number_of_candidates(fused):
    h = torch.ones(7, 3)
    loss = LpInfoNCE(p=2.0, same_view_negatives=True, symmetric=True, hardness=2.0, fused=fused)
    assert loss(h, h.clone()).item() == pytest.approx(math.log(loss.n_candidates(7)), rel=1e-6)


def test_gradient_pushes_every_negative_away():
    # the weights are constants: every negative's logit gets a non-negative gradient of the loss
    # (the loss rises when any negative comes closer), concentrated on the closest ones
    g = torch.Generator().manual_seed(2)
    h, hp = torch.randn(2, 6, 3, generator=g, dtype=torch.float64)
    loss = LpInfoNCE(p=2.0, negatives="external", hardness=3.0)
    neg = torch.randn(6, 10, 3, generator=g, dtype=torch.float64)
    logits = -((h[:, None] - neg) ** 2).sum(-1)
    logits.requires_grad_(True)
    lse = torch.logaddexp(
        loss.pair_logits(h, hp),
        math.log(10)
        + torch.logsumexp(4 * logits, 1) / 4
        + (torch.logsumexp(4 * logits, 1) * 0.75 - torch.logsumexp(3 * logits, 1)).detach(),
    )
    (grad,) = torch.autograd.grad((lse - loss.pair_logits(h, hp)).mean(), logits)
    assert (grad >= 0).all()
    order = logits.detach().argsort(dim=1)
    ranked = grad.gather(1, order)
    assert (ranked[:, -1] > ranked[:, 0]).all()
    # and the loss module's own gradient with respect to the negatives equals this one's
    negt = neg.clone().requires_grad_(True)
    (g_mod,) = torch.autograd.grad(loss(h, hp, negt), negt)
    logits2 = -((h[:, None] - negt) ** 2).sum(-1)
    (g_ref,) = torch.autograd.grad(logits2, negt, grad_outputs=grad)
    torch.testing.assert_close(g_mod, g_ref)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "1"])
def test_bad_hardness_is_one_config_error(bad):
    with pytest.raises(ConfigError, match="'hardness'"):
        LpInfoNCE(p=2.0, hardness=bad)


def test_registered_kind_takes_hardness():
    spec = OBJECTIVES.validate({"kind": "lp_infonce", "p": 2.0, "hardness": 1.5})
    assert spec.hardness == 1.5
    obj = OBJECTIVES.build(spec)
    assert obj.loss.hardness == 1.5 and "hardness=1.5" in repr(obj.loss)
    with pytest.raises(ValueError, match="hardness"):
        OBJECTIVES.validate({"kind": "infonce", "hardness": -1})
