"""InfoNCE / LpInfoNCE against a slow loop over candidates, closed forms, Theorem 1, memory."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unmix.errors import ConfigError
from unmix.metrics import alignment_term, uniformity_term
from unmix.objectives import InfoNCE, LpInfoNCE
from unmix.objectives.infonce import _ContrastiveLoss


def _feats(b, n, seed, sphere=True):
    x = torch.randn(b, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True) if sphere else x


def _dot(tau):
    return lambda a, b: sum(x * y for x, y in zip(a.tolist(), b.tolist(), strict=True)) / tau


def _lp(p, q, tau):
    def s(a, b):
        total = sum(abs(x - y) ** p for x, y in zip(a.tolist(), b.tolist(), strict=True))
        return -(total ** (q / p)) / tau

    return s


def _loop_loss(
    sim,
    h,
    hp,
    neg=None,
    cross=True,
    same=False,
    self_pair=False,
    symmetric=False,
    dv=False,
    w=1.0,
    decoupled=False,
):
    """Slow reference: list every candidate of every anchor, take −log softmax of the positive
    (``dv``: log of the mean over anchors of Σ exp(candidates), minus the mean positive logit;
    ``w``: the positive logit's weight outside the logsumexp; ``decoupled``: the positive is not
    a candidate)."""

    def one(a, b):
        total, sums = 0.0, []
        for i in range(len(a)):
            pos = sim(a[i], b[i])
            cands = [] if decoupled else [pos]
            if neg is not None:
                negs = neg if neg.ndim == 2 else neg[i]
                cands += [sim(a[i], v) for v in negs]
            else:
                others = [j for j in range(len(a)) if j != i]
                if cross:
                    cands += [sim(a[i], b[j]) for j in others]
                if same:
                    cands += [sim(a[i], a[j]) for j in others]
                if self_pair:
                    cands.append(sim(a[i], a[i]))
            mx = max(cands)
            total += -w * pos + mx + math.log(sum(math.exp(c - mx) for c in cands))
            sums.append((pos, sum(math.exp(c) for c in cands)))
        if dv:
            return math.log(sum(z for _, z in sums) / len(a)) - w * sum(p for p, _ in sums) / len(a)
        return total / len(a)

    return 0.5 * (one(h, hp) + one(hp, h)) if symmetric else one(h, hp)


IN_BATCH_LAYOUTS = [
    dict(),
    dict(same_view_negatives=True),
    dict(cross_view_negatives=False, same_view_negatives=True),
    dict(cross_view_negatives=False, same_view_negatives=True, include_self=True),
    dict(same_view_negatives=True, symmetric=True),
    dict(symmetric=True),
]


def _ref_kwargs(kw):
    return dict(
        cross=kw.get("cross_view_negatives", True),
        same=kw.get("same_view_negatives", False),
        self_pair=kw.get("include_self", False),
        symmetric=kw.get("symmetric", False),
    )


@pytest.mark.parametrize("kw", IN_BATCH_LAYOUTS)
def test_infonce_in_batch_matches_loop(kw):
    h, hp, tau = _feats(9, 4, 0), _feats(9, 4, 1), 0.4
    loss = InfoNCE(tau=tau, **kw)(h, hp)
    assert float(loss) == pytest.approx(_loop_loss(_dot(tau), h, hp, **_ref_kwargs(kw)), rel=1e-12)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("symmetric", [False, True])
def test_infonce_external_matches_loop(shared, symmetric):
    h, hp, tau = _feats(7, 3, 2), _feats(7, 3, 3), 0.7
    neg = _feats(5, 3, 4) if shared else _feats(35, 3, 4).reshape(7, 5, 3)
    loss = InfoNCE(tau=tau, negatives="external", symmetric=symmetric)(h, hp, neg)
    ref = _loop_loss(_dot(tau), h, hp, neg=neg, symmetric=symmetric)
    assert float(loss) == pytest.approx(ref, rel=1e-12)


def test_default_in_batch_form_is_cross_entropy_of_the_similarity_matrix():
    h, hp = _feats(16, 5, 5), _feats(16, 5, 6)
    ref = F.cross_entropy(h @ hp.T / 0.3, torch.arange(16))
    torch.testing.assert_close(InfoNCE(tau=0.3)(h, hp), ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kw", [*IN_BATCH_LAYOUTS])
@pytest.mark.parametrize("cls", [InfoNCE, LpInfoNCE])
def test_collapsed_features_give_log_number_of_candidates(cls, kw):
    b = 6
    h = _feats(1, 3, 7).repeat(b, 1)
    loss_fn = cls(**kw)
    k = loss_fn.n_candidates(b)
    assert float(loss_fn(h, h.clone())) == pytest.approx(math.log(k), rel=1e-12)
    expected_k = 1 + (b - 1) * kw.get("cross_view_negatives", True)
    expected_k += (b - 1) * kw.get("same_view_negatives", False) + kw.get("include_self", False)
    assert k == expected_k


@pytest.mark.parametrize("cls", [InfoNCE, LpInfoNCE])
def test_collapsed_external_gives_log_m_plus_one(cls):
    h = _feats(1, 3, 8).repeat(4, 1)
    loss_fn = cls(negatives="external")
    assert float(loss_fn(h, h, h[:1].repeat(11, 1))) == pytest.approx(math.log(12), rel=1e-12)
    assert loss_fn.n_candidates(4, 11) == 12


def test_infonce_minus_log_m_is_bracketed_by_theorem_1_terms():
    """Per anchor, (L − log M) − (align + unif) = log(1 + e^{s_pos}/Σ_m e^{s_m}) — exactly, so with
    unit features 0 ≤ difference ≤ log(1 + e^{2/τ}/M) (Wang & Isola Thm. 1; paper Eq. 12–13)."""
    tau, m = 0.5, 4000
    h, hp, neg = _feats(64, 3, 9), _feats(64, 3, 10), _feats(m, 3, 11)
    lhs = float(InfoNCE(tau=tau, negatives="external")(h, hp, neg)) - math.log(m)
    rhs = float(alignment_term(h, hp, tau) + uniformity_term(h, tau, negatives=neg))
    assert 0.0 <= lhs - rhs <= math.log1p(math.exp(2 / tau) / m)


def test_numpy_scalars_are_accepted_as_parameters():
    h, hp = _feats(5, 3, 25), _feats(5, 3, 26)
    a = InfoNCE(tau=np.float32(0.5))(h, hp)
    torch.testing.assert_close(a, InfoNCE(tau=0.5)(h, hp))
    assert LpInfoNCE(p=np.int64(3)).p == 3.0


def test_infonce_is_stable_for_tiny_temperatures():
    h, hp = _feats(32, 4, 12).float(), _feats(32, 4, 13).float()
    loss = InfoNCE(tau=1e-3, same_view_negatives=True)(h, hp)
    assert torch.isfinite(loss)


@pytest.mark.parametrize(
    "p,q,kw",
    [
        (1.0, None, {}),
        (2.0, None, {}),
        (3.0, None, {}),  # odd p: needs |·|
        (2.0, 1.0, {}),
        (1.5, 3.0, dict(same_view_negatives=True)),
        (3.0, None, dict(cross_view_negatives=False, same_view_negatives=True, include_self=True)),
        (1.0, None, dict(symmetric=True, same_view_negatives=True)),
    ],
)
@pytest.mark.parametrize("chunk_size", [None, 2])
def test_lp_infonce_in_batch_matches_loop(p, q, kw, chunk_size):
    h, hp, tau = _feats(7, 3, 14, sphere=False), _feats(7, 3, 15, sphere=False), 1.3
    loss = LpInfoNCE(p=p, q=q, tau=tau, chunk_size=chunk_size, **kw)(h.requires_grad_(), hp)
    ref = _loop_loss(_lp(p, p if q is None else q, tau), h.detach(), hp, **_ref_kwargs(kw))
    assert float(loss.detach()) == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("shared", [True, False])
def test_lp_infonce_external_matches_loop(shared):
    h, hp = _feats(5, 3, 16, sphere=False), _feats(5, 3, 17, sphere=False)
    neg = (
        _feats(4, 3, 18, sphere=False) if shared else _feats(20, 3, 18, sphere=False).view(5, 4, 3)
    )
    loss = LpInfoNCE(p=3.0, q=1.0, negatives="external", chunk_size=1)(h, hp, neg)
    assert float(loss) == pytest.approx(_loop_loss(_lp(3.0, 1.0, 1.0), h, hp, neg=neg), rel=1e-10)


def test_lp_gradients_pass_gradcheck_and_chunking_changes_nothing():
    h, hp = _feats(6, 3, 19, sphere=False), _feats(6, 3, 20, sphere=False)
    for p, chunk in [(3.0, 2), (1.5, None), (2.0, None)]:
        fn = LpInfoNCE(p=p, chunk_size=chunk, same_view_negatives=True)
        assert torch.autograd.gradcheck(
            fn, (h.clone().requires_grad_(), hp.clone().requires_grad_())
        )
    assert torch.autograd.gradcheck(
        InfoNCE(tau=0.5, same_view_negatives=True, symmetric=True),
        (h.clone().requires_grad_(), hp.clone().requires_grad_()),
    )
    grads = []
    for chunk in (None, 1, 4):
        x = h.clone().requires_grad_()
        LpInfoNCE(p=3.0, chunk_size=chunk, same_view_negatives=True)(x, hp).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grads[2], grads[0], rtol=1e-12, atol=1e-14)


def test_lp_exact_ties_have_finite_gradients():
    h = _feats(5, 3, 21, sphere=False)
    h = torch.cat([h, h[:1]])  # a duplicated anchor: a zero distance off the diagonal
    for p, q in [(0.5, None), (1.0, 0.5), (2.0, 1.0), (1.0, None)]:
        x = h.clone().requires_grad_()
        LpInfoNCE(p=p, q=q, same_view_negatives=True, chunk_size=2)(x, x + 0.1).backward()
        assert torch.isfinite(x.grad).all(), (p, q)


def test_lp_general_path_never_saves_a_b_by_b_by_n_tensor():
    """Autograd keeps no (rows × B × n) block (the custom function recomputes blocks in backward):
    checked by recording every tensor autograd saves."""
    b, n = 48, 32

    def total_saved(chunk_size):
        sizes = {}  # storage pointer -> elements (a tensor saved twice is stored once)

        def pack(t):
            storage = t.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes() // t.element_size()
            return t

        h = _feats(b, n, 22, sphere=False).requires_grad_()
        hp = _feats(b, n, 23, sphere=False)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = LpInfoNCE(p=3.0, chunk_size=chunk_size, same_view_negatives=True)(h, hp)
        loss.backward()
        assert torch.isfinite(h.grad).all()
        return sum(sizes.values()), max(sizes.values())

    for chunk_size in (b, 4):  # one block or many: autograd keeps O(B²) in all, independent of n
        total, largest = total_saved(chunk_size)
        assert largest <= b * (2 * b + 1) and total < 0.5 * b * b * n


def test_configuration_errors_are_readable():
    with pytest.raises(ConfigError, match="'tau' must be a positive finite number"):
        InfoNCE(tau=0)
    with pytest.raises(
        ConfigError, match="'negatives' of InfoNCE must be 'in_batch', 'external' or 'shared'"
    ):
        InfoNCE(negatives="memory_bank")
    with pytest.raises(ConfigError, match="cannot be changed with negatives='external'"):
        InfoNCE(negatives="external", same_view_negatives=True)
    with pytest.raises(ConfigError, match="otherwise there are no negatives"):
        InfoNCE(cross_view_negatives=False)
    with pytest.raises(ConfigError, match="set same_view_negatives=True"):
        LpInfoNCE(include_self=True)
    with pytest.raises(ConfigError, match="'p' of LpInfoNCE must be a positive finite number"):
        LpInfoNCE(p=0)
    with pytest.raises(ConfigError, match="'q' of LpInfoNCE must be a positive finite number"):
        LpInfoNCE(q=-1.0)
    with pytest.raises(ConfigError, match="'chunk_size' of LpInfoNCE must be a positive integer"):
        LpInfoNCE(chunk_size=0)
    with pytest.raises(ConfigError, match="pass n_negatives"):
        InfoNCE(negatives="external").n_candidates(4)


def test_call_errors_are_readable():
    h = _feats(4, 3, 24)
    with pytest.raises(ConfigError, match="'h' and 'h_pos' must have the same shape"):
        InfoNCE()(h, h[:3])
    with pytest.raises(ConfigError, match="takes no 'h_neg'"):
        InfoNCE()(h, h, h)
    with pytest.raises(ConfigError, match="pass h_neg of shape"):
        LpInfoNCE(negatives="external")(h, h)
    with pytest.raises(ConfigError, match=r"'h_neg' must have shape \(4, M, 3\) or \(M, 3\)"):
        InfoNCE(negatives="external")(h, h, torch.ones(5, 2, 3, dtype=torch.float64))
    with pytest.raises(ConfigError, match="batch of at least 2"):
        InfoNCE()(h[:1], h[:1])
    with pytest.raises(ConfigError, match=r"'h' must be a floating tensor of shape \(B, n\)"):
        InfoNCE()(h[0], h[0])


def test_modules_are_documented_nn_modules():
    for cls in (InfoNCE, LpInfoNCE):
        assert issubclass(cls, _ContrastiveLoss) and issubclass(cls, torch.nn.Module)
        assert "Eq." in cls.__doc__
    assert "p=3.0" in repr(LpInfoNCE(p=3))


def test_shared_negatives_count_and_shape_errors():
    fn = InfoNCE(negatives="shared")
    assert fn.n_candidates(8, 5) == 1 + 7 + 5
    h = _feats(8, 3, 20)
    with pytest.raises(ConfigError, match=r"negatives='shared': pass h_neg of shape \(M, 3\)"):
        fn(h, h)
    with pytest.raises(ConfigError, match=r"negatives='shared': pass h_neg of shape \(M, 3\)"):
        fn(h, h, _feats(16, 3, 21).reshape(8, 2, 3))
    with pytest.raises(ConfigError, match="pass n_negatives"):
        fn.n_candidates(8)
    # collapsed features: log(number of candidates)
    ones = torch.ones(8, 3, dtype=torch.float64) / math.sqrt(3)
    assert float(fn(ones, ones, ones[:5])) == pytest.approx(math.log(1 + 7 + 5), rel=1e-12)


# --- the Donsker–Varadhan estimator (estimator="dv") ------------------------------------------
@pytest.mark.parametrize("kw", IN_BATCH_LAYOUTS)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("estimator", ["dv", "decoupled"])
def test_estimator_matches_loop(kw, fused, estimator):
    # dv: one log-mean-exp over the batch; decoupled: the positive out of the denominator
    h, hp, tau = _feats(9, 4, 10), _feats(9, 4, 11), 0.4
    flags = {estimator: True, **_ref_kwargs(kw)}
    loss = InfoNCE(tau=tau, estimator=estimator, fused=fused, **kw)(h, hp)
    assert float(loss) == pytest.approx(_loop_loss(_dot(tau), h, hp, **flags), rel=1e-12)
    for p in (1.0, 2.0, 3.0):
        lp = LpInfoNCE(p=p, tau=tau, estimator=estimator, fused=fused, **kw)(h, hp)
        ref = _loop_loss(_lp(p, p, tau), h, hp, **flags)
        assert float(lp) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("mode", ["external", "shared"])
def test_dv_estimator_with_separate_negatives_matches_loop(mode):
    h, hp, tau = _feats(7, 3, 12), _feats(7, 3, 13), 0.7
    neg = _feats(5, 3, 14)
    loss = InfoNCE(tau=tau, negatives=mode, estimator="dv")(h, hp, neg)
    if mode == "external":
        ref = _loop_loss(_dot(tau), h, hp, neg=neg, dv=True)
    else:  # in-batch candidates plus the shared ones: list them per anchor
        per_anchor = torch.stack(
            [torch.cat([hp[[j for j in range(7) if j != i]], neg]) for i in range(7)]
        )
        ref = _loop_loss(_dot(tau), h, hp, neg=per_anchor, dv=True)
    assert float(loss) == pytest.approx(ref, rel=1e-12)


def test_dv_is_an_upper_bound_of_infonce_with_equality_when_every_anchor_sums_alike():
    # log-mean-exp ≥ mean (Jensen), equal iff every anchor's candidate sum is the same.
    for seed in range(5):
        h, hp = _feats(12, 5, 20 + seed), _feats(12, 5, 40 + seed)
        assert float(InfoNCE(estimator="dv")(h, hp)) >= float(InfoNCE()(h, hp)) - 1e-12
    h = _feats(1, 3, 7).repeat(6, 1)
    for cls in (InfoNCE, LpInfoNCE):
        loss_fn = cls(estimator="dv")
        assert float(loss_fn(h, h.clone())) == pytest.approx(math.log(loss_fn.n_candidates(6)))


@pytest.mark.parametrize("estimator", ["dv", "decoupled"])
def test_estimator_gradients_of_the_fused_path_equal_the_unfused_ones(estimator):
    h0, hp0 = _feats(33, 6, 50).float(), _feats(33, 6, 51).float()
    for make in (
        lambda f: InfoNCE(tau=0.3, estimator=estimator, fused=f, symmetric=True),
        lambda f: LpInfoNCE(p=3.0, tau=0.3, estimator=estimator, fused=f),
    ):
        grads = []
        for fused in (True, False):
            h, hp = h0.clone().requires_grad_(), hp0.clone().requires_grad_()
            make(fused)(h, hp).backward()
            grads.append((h.grad, hp.grad))
        torch.testing.assert_close(grads[0][0], grads[1][0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)


def test_dv_estimator_is_validated_with_one_line():
    with pytest.raises(ConfigError, match="'estimator'"):
        InfoNCE(estimator="nwj")


# --- the decoupled estimator (estimator="decoupled": the positive out of the denominator) ------
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("fused", [True, False])
def test_decoupled_estimator_with_external_negatives_matches_loop(shared, fused):
    h, hp, tau = _feats(7, 3, 72), _feats(7, 3, 73), 0.7
    neg = _feats(5, 3, 74) if shared else _feats(35, 3, 74).reshape(7, 5, 3)
    kw = dict(tau=tau, negatives="external", estimator="decoupled", fused=fused)
    ref = _loop_loss(_dot(tau), h, hp, neg=neg, decoupled=True)
    assert float(InfoNCE(**kw)(h, hp, neg)) == pytest.approx(ref, rel=1e-12)
    ref = _loop_loss(_lp(2.0, 2.0, tau), h, hp, neg=neg, decoupled=True)
    assert float(LpInfoNCE(p=2.0, **kw)(h, hp, neg)) == pytest.approx(ref, rel=1e-12)


def test_decoupled_and_infonce_differ_by_a_softplus_per_anchor():
    # With N_i the sum over anchor i's negatives: InfoNCE_i = log(e^{s_ii} + N_i) − s_ii and
    # decoupled_i = log N_i − s_ii, so InfoNCE_i = decoupled_i + softplus(−decoupled_i). At B = 2
    # each anchor has one negative, so decoupled_i is the logit difference s_ij − s_ii.
    h, hp, tau = _feats(2, 3, 75), _feats(2, 3, 76), 0.5
    s = h @ hp.T / tau
    dec_i = torch.stack([s[0, 1] - s[0, 0], s[1, 0] - s[1, 1]])
    dcl = InfoNCE(tau=tau, estimator="decoupled")(h, hp)
    assert float(dcl) == pytest.approx(float(dec_i.mean()), rel=1e-12)
    info_i = dec_i + F.softplus(-dec_i)
    assert float(InfoNCE(tau=tau)(h, hp)) == pytest.approx(float(info_i.mean()), rel=1e-12)


def test_decoupled_collapsed_features_give_log_number_of_negatives():
    h = _feats(1, 3, 79).repeat(6, 1)
    for cls in (InfoNCE, LpInfoNCE):
        fn = cls(estimator="decoupled", same_view_negatives=True)
        assert fn.n_candidates(6) == 10  # 5 cross-view + 5 same-view negatives, no positive
        assert float(fn(h, h.clone())) == pytest.approx(math.log(10), rel=1e-12)


# --- alignment warm-up (align_weight; align_start / align_warmup of the registered kinds) -----
@pytest.mark.parametrize("kw", IN_BATCH_LAYOUTS)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dv", [False, True])
def test_align_weight_matches_loop(kw, fused, dv):
    h, hp, tau, w = _feats(9, 4, 60), _feats(9, 4, 61), 0.4, 0.35
    est = "dv" if dv else "infonce"
    loss = InfoNCE(tau=tau, align_weight=w, fused=fused, estimator=est, **kw)(h, hp)
    ref = _loop_loss(_dot(tau), h, hp, dv=dv, w=w, **_ref_kwargs(kw))
    assert float(loss) == pytest.approx(ref, rel=1e-12)
    lp = LpInfoNCE(p=1.0, tau=tau, align_weight=w, fused=fused, estimator=est, **kw)(h, hp)
    ref = _loop_loss(_lp(1.0, 1.0, tau), h, hp, dv=dv, w=w, **_ref_kwargs(kw))
    assert float(lp) == pytest.approx(ref, rel=1e-12)


def test_align_weight_with_external_negatives_matches_loop():
    h, hp, neg = _feats(7, 3, 62), _feats(7, 3, 63), _feats(35, 3, 64).reshape(7, 5, 3)
    loss = InfoNCE(tau=0.7, negatives="external", align_weight=0.5)(h, hp, neg)
    assert float(loss) == pytest.approx(_loop_loss(_dot(0.7), h, hp, neg=neg, w=0.5), rel=1e-12)


def test_align_weight_scales_only_the_positive_terms_gradient():
    # d/dh_pos of (lse - w·s_pos): the positive enters the lse at full weight, so the gradient is
    # softmax_pos·∇s - w·∇s; at w = 1 this is InfoNCE's.
    h0, hp0 = _feats(16, 5, 65).float(), _feats(16, 5, 66).float()
    grads = {}
    for w in (1.0, 0.5, 0.0001):
        for fused in (True, False):
            h, hp = h0.clone().requires_grad_(), hp0.clone().requires_grad_()
            InfoNCE(tau=0.5, align_weight=w, fused=fused)(h, hp).backward()
            grads[w, fused] = hp.grad
        torch.testing.assert_close(grads[w, True], grads[w, False], rtol=1e-5, atol=1e-6)
    # linear in w: g(0.5) is the midpoint of g(1) and g(~0)
    mid = 0.5 * (grads[1.0, False] + grads[0.0001, False])
    torch.testing.assert_close(grads[0.5, False], mid, rtol=1e-3, atol=1e-5)
    assert float(InfoNCE(align_weight=1.0)(h0, hp0)) == float(InfoNCE()(h0, hp0))


def test_align_weight_is_validated_with_one_line():
    for bad in (0.0, -1.0, float("nan"), True):
        with pytest.raises(ConfigError, match="'align_weight'"):
            InfoNCE(align_weight=bad)
