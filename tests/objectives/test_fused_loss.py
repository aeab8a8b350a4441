"""The fused, chunked contrastive loss against the unfused path and a slow loop reference."""

import math

import pytest
import torch

from unmix.objectives import InfoNCE, LpInfoNCE, _chunked


def _feats(b, n, seed, sphere=False, dtype=torch.float64):
    x = torch.randn(b, n, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return x / x.norm(dim=-1, keepdim=True) if sphere else x


def _sim(kind, tau, p=2.0, q=2.0):
    if kind == "dot":
        return lambda a, b: sum(x * y for x, y in zip(a, b, strict=True)) / tau

    def s(a, b):
        return -(sum(abs(x - y) ** p for x, y in zip(a, b, strict=True)) ** (q / p)) / tau

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
    batch_too=False,
):
    """Per anchor a python loop over its candidates, −log softmax of the positive, in float64.
    ``neg`` replaces the in-batch candidates, or (``batch_too``: negatives='shared') joins them."""
    h, hp = h.double().tolist(), hp.double().tolist()
    neg = None if neg is None else neg.double()

    def one(a, b):
        total = 0.0
        for i in range(len(a)):
            pos = sim(a[i], b[i])
            cands = [pos]
            if neg is not None:
                for v in (neg if neg.ndim == 2 else neg[i]).tolist():
                    cands.append(sim(a[i], v))
            if neg is None or batch_too:
                for j in range(len(a)):
                    if j != i and cross:
                        cands.append(sim(a[i], b[j]))
                    if j != i and same:
                        cands.append(sim(a[i], a[j]))
                if self_pair:
                    cands.append(sim(a[i], a[i]))
            mx = max(cands)
            total += mx - pos + math.log(sum(math.exp(c - mx) for c in cands))
        return total / len(a)

    return 0.5 * (one(h, hp) + one(hp, h)) if symmetric else one(h, hp)


LAYOUTS = [
    dict(),
    dict(same_view_negatives=True),
    dict(cross_view_negatives=False, same_view_negatives=True),
    dict(cross_view_negatives=False, same_view_negatives=True, include_self=True),
    dict(same_view_negatives=True, include_self=True, symmetric=True),
    dict(symmetric=True),
]

# (p, q): the matmul form (2, 2), cdist-forward p = 1, and the difference blocks.
LP = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (1.5, 1.5), (2.0, 1.0), (1.5, 3.0), (1.0, 0.5)]


def _build(kind, pq, tau, rows, fused, **kw):
    if kind == "dot":
        fn = InfoNCE(tau=tau, fused=fused, **kw)
        fn.chunk_size = rows  # rows per block of the fused path (InfoNCE has no constructor knob)
        return fn
    p, q = pq
    return LpInfoNCE(p=p, q=q, tau=tau, chunk_size=rows, fused=fused, **kw)


def _loss_and_grads(fn, h, hp, neg=None):
    leaves = [t.clone().requires_grad_() for t in (h, hp) + (() if neg is None else (neg,))]
    loss = fn(*leaves)
    loss.backward()
    return loss.detach(), [t.grad for t in leaves]


def _ref_kwargs(kw):
    return dict(
        cross=kw.get("cross_view_negatives", True),
        same=kw.get("same_view_negatives", False),
        self_pair=kw.get("include_self", False),
        symmetric=kw.get("symmetric", False),
    )


def _check_against_unfused(kind, pq, tau, rows, h, hp, neg=None, rtol=1e-10, atol=1e-13, **kw):
    fused = _build(kind, pq, tau, rows, True, **kw)
    old = _build(kind, pq, tau, rows, False, **kw)
    loss, grads = _loss_and_grads(fused, h, hp, neg)
    ref_loss, ref_grads = _loss_and_grads(old, h, hp, neg)
    torch.testing.assert_close(loss, ref_loss, rtol=rtol, atol=atol)
    for g, r in zip(grads, ref_grads, strict=True):
        assert g is not None and torch.isfinite(g).all()
        torch.testing.assert_close(g, r, rtol=rtol, atol=atol)
    return float(loss)


@pytest.mark.parametrize("kw", LAYOUTS)
@pytest.mark.parametrize("b,n,rows", [(7, 3, None), (7, 3, 2), (64, 10, 9)])
@pytest.mark.parametrize("kind,pq", [("dot", None)] + [("lp", pq) for pq in LP])
def test_in_batch_matches_unfused_and_loop(kind, pq, b, n, rows, kw):
    tau = 0.5 if kind == "dot" else 1.3
    h, hp = _feats(b, n, 1, kind == "dot"), _feats(b, n, 2, kind == "dot")
    loss = _check_against_unfused(kind, pq, tau, rows, h, hp, **kw)
    if b <= 7 or kind == "dot" or pq in ((3.0, 3.0), (1.5, 3.0)):  # keep the loop's time low
        sim = _sim(kind, tau, *(pq or (2.0, 2.0)))
        assert loss == pytest.approx(_loop_loss(sim, h, hp, **_ref_kwargs(kw)), rel=1e-10)


@pytest.mark.parametrize("n", [15, 16, 63, 64])
@pytest.mark.parametrize("kind,pq", [("dot", None), ("lp", (2.0, 2.0))])
def test_feature_widths_either_side_of_the_thin_product_thresholds(kind, pq, n):
    """The matmul kernels' backward pads features below 16 and reshapes ``wᵀ @ x`` below 64;
    both sides of each threshold match the unfused loss (loss and gradients, both views)."""
    h, hp = _feats(40, n, 16, kind == "dot"), _feats(40, n, 17, kind == "dot")
    for rows in (None, 7):
        _check_against_unfused(kind, pq, 0.8, rows, h, hp, symmetric=True)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("b,rows", [(1, None), (7, 3), (64, None), (64, 5)])
@pytest.mark.parametrize("kind,pq", [("dot", None)] + [("lp", pq) for pq in LP[:5]])
def test_external_negatives_match_unfused_and_loop(kind, pq, b, rows, shared, symmetric):
    n, m, tau = 4, 6, 0.7
    sphere = kind == "dot"
    h, hp = _feats(b, n, 3, sphere), _feats(b, n, 4, sphere)
    neg = _feats(m, n, 5, sphere) if shared else _feats(b * m, n, 5, sphere).view(b, m, n)
    loss = _check_against_unfused(
        kind, pq, tau, rows, h, hp, neg, negatives="external", symmetric=symmetric
    )
    sim = _sim(kind, tau, *(pq or (2.0, 2.0)))
    ref = _loop_loss(sim, h, hp, neg=neg, symmetric=symmetric)
    assert loss == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("kw", [dict(), LAYOUTS[1], LAYOUTS[3], LAYOUTS[5]])
@pytest.mark.parametrize("b,rows", [(7, 3), (40, None)])
@pytest.mark.parametrize("kind,pq", [("dot", None)] + [("lp", pq) for pq in LP[:3]])
def test_shared_negatives_join_the_in_batch_candidates(kind, pq, b, rows, kw):
    """negatives='shared': every anchor's candidates are its in-batch ones plus the same M
    negatives; fused == unfused (loss and gradients, the negatives' too) == the loop."""
    n, m, tau = 4, 6, 0.7
    sphere = kind == "dot"
    h, hp, neg = _feats(b, n, 13, sphere), _feats(b, n, 14, sphere), _feats(m, n, 15, sphere)
    loss = _check_against_unfused(kind, pq, tau, rows, h, hp, neg, negatives="shared", **kw)
    sim = _sim(kind, tau, *(pq or (2.0, 2.0)))
    ref = _loop_loss(sim, h, hp, neg=neg, batch_too=True, **_ref_kwargs(kw))
    assert loss == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("kw", [dict(), LAYOUTS[3], LAYOUTS[4]])
@pytest.mark.parametrize("kind,pq", [("dot", None), ("lp", (2.0, 2.0)), ("lp", (3.0, 3.0))])
def test_batch_not_divisible_by_the_block_float64_and_float32(kind, pq, kw):
    """B = 300 in blocks of 64 rows (and automatic blocks); float32 to float32 rounding."""
    sphere = kind == "dot"
    for dtype, rtol, atol in ((torch.float64, 1e-10, 1e-14), (torch.float32, 2e-5, 1e-7)):
        h, hp = _feats(300, 10, 6, sphere, dtype), _feats(300, 10, 7, sphere, dtype)
        for rows in (64, None):
            _check_against_unfused(kind, pq, 1.0, rows, h, hp, rtol=rtol, atol=atol, **kw)


@pytest.mark.parametrize("pq", [(1.0, 1.0), (1.5, 1.5), (2.0, 1.0)])
def test_general_p_at_b_300_matches_unfused(pq):
    h, hp = _feats(300, 5, 8), _feats(300, 5, 9)
    _check_against_unfused("lp", pq, 1.0, 64, h, hp, same_view_negatives=True, symmetric=True)


@pytest.mark.parametrize("kind,pq", [("dot", None), ("lp", (2.0, 2.0)), ("lp", (3.0, 2.0))])
def test_fused_gradients_pass_gradcheck(kind, pq):
    h, hp = _feats(6, 3, 10, kind == "dot"), _feats(6, 3, 11, kind == "dot")
    for kw in (dict(same_view_negatives=True, include_self=True, symmetric=True), dict()):
        fn = _build(kind, pq, 0.8, 4, True, **kw)
        assert torch.autograd.gradcheck(fn, (h.requires_grad_(), hp.requires_grad_()))
    neg = _feats(18, 3, 12, kind == "dot")
    for shape in ((6, 3, 3), (18, 3)):
        fn = _build(kind, pq, 0.8, 4, True, negatives="external")
        args = (h, hp, neg.reshape(shape).clone().requires_grad_())
        assert torch.autograd.gradcheck(fn, args)


def test_far_below_max_terms_follow_the_floor_and_tiny_temperatures_stay_finite():
    """τ = 1e-3 on the sphere: most terms are far more than 80 nats below the row maximum."""
    h, hp = _feats(50, 4, 13, True), _feats(50, 4, 14, True)
    for kw in (dict(), dict(same_view_negatives=True), LAYOUTS[3]):
        loss = _check_against_unfused("dot", None, 1e-3, 16, h, hp, rtol=1e-10, atol=1e-10, **kw)
        assert math.isfinite(loss)
        ref = _loop_loss(_sim("dot", 1e-3), h, hp, **_ref_kwargs(kw))
        assert loss == pytest.approx(ref, rel=1e-10)


def test_exact_ties_match_unfused():
    h = _feats(5, 3, 15)
    h = torch.cat([h, h[:1]])  # a duplicated anchor: a zero distance off the diagonal
    for pq in ((1.0, 1.0), (1.0, 0.5), (2.0, 1.0), (0.5, 0.5), (3.0, 3.0)):
        _check_against_unfused("lp", pq, 1.0, 2, h, h + 0.1, same_view_negatives=True)


def _saved_bytes(fn, h, hp, neg=None):
    sizes = {}  # storage pointer -> bytes (a tensor saved twice is stored once)

    def pack(t):
        storage = t.untyped_storage()
        sizes[storage.data_ptr()] = storage.nbytes()
        return t

    leaves = [t.clone().requires_grad_() for t in (h, hp) + (() if neg is None else (neg,))]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn(*leaves)
    loss.backward()
    assert all(torch.isfinite(t.grad).all() for t in leaves)
    return sum(sizes.values()), max(sizes.values())


@pytest.mark.parametrize(
    "fn",
    [
        InfoNCE(same_view_negatives=True, symmetric=True),
        LpInfoNCE(p=2.0, same_view_negatives=True, include_self=True),
        LpInfoNCE(p=3.0, same_view_negatives=True),
        LpInfoNCE(p=1.0),
    ],
)
def test_autograd_saves_o_b_n_not_b_squared(fn):
    """Saved-tensor bytes grow linearly in B: at B = 1024 they are far below one B × B matrix, and
    doubling B doubles them (the unfused path saves several B × B tensors)."""
    n = 10
    totals = []
    for b in (512, 1024):
        h, hp = _feats(b, n, 16, dtype=torch.float32), _feats(b, n, 17, dtype=torch.float32)
        total, largest = _saved_bytes(fn, h, hp)
        assert largest <= 4 * b * n  # an input, never a (B, B) tensor
        assert total <= 4 * 16 * b * n  # a few (B, n) and (B,) tensors
        totals.append(total)
    assert totals[1] <= 2.2 * totals[0]
    b = 1024
    h, hp = _feats(b, n, 16, dtype=torch.float32), _feats(b, n, 17, dtype=torch.float32)
    fn.fused = False
    try:
        assert _saved_bytes(fn, h, hp)[0] >= 4 * b * b  # the old path, for contrast
    finally:
        fn.fused = True


def test_blocks_stay_bounded():
    """Rows per block: a (rows × N) logits block ≤ LOGIT_BLOCK_ELEMENTS, a (rows × N × n)
    difference block ≤ DIFF_BLOCK_ELEMENTS (at least one row)."""
    b, n = 6144, 10
    assert _chunked.DotKernel(1.0).max_rows(b, n, 0) * b <= _chunked.LOGIT_BLOCK_ELEMENTS
    assert _chunked.SqL2Kernel(1.0).max_rows(b, n, 0) * b <= _chunked.LOGIT_BLOCK_ELEMENTS
    kernel = _chunked.PowerKernel(3.0, 3.0, 1.0)
    assert kernel.max_rows(b, n, 0) * b * n <= _chunked.DIFF_BLOCK_ELEMENTS
    assert kernel.max_rows(10**6, n, 0) == 1
    assert _chunked.DotKernel(1.0).max_rows(b, n, 1000) * 1000 * n <= _chunked.DIFF_BLOCK_ELEMENTS


def test_fused_is_the_default_and_can_be_switched_off():
    assert InfoNCE().fused and LpInfoNCE(p=3).fused
    assert not InfoNCE(fused=False).fused and not LpInfoNCE(fused=False).fused


@pytest.mark.parametrize(
    "kernel",
    [
        _chunked.DotKernel(0.5),
        _chunked.SqL2Kernel(0.7),
        _chunked.PowerKernel(3.0, 3.0, 0.9),
        _chunked.PowerKernel(1.5, 1.0, 0.8),
        _chunked.PowerKernel(0.7, 0.7, 1.3),
    ],
    ids=["dot", "sql2", "p3", "p1.5-q1", "p0.7"],
)
@pytest.mark.parametrize("cross,same", [(True, False), (False, True)])
@pytest.mark.parametrize("rows", [None, 7])
def test_one_pass_gradients_equal_the_recomputing_backward(kernel, cross, same, rows):
    # one candidate set and a mean over anchors: the forward pass forms the gradients (weight 1
    # per row) and the backward scales them; the same inputs through the recomputing backward
    a0, b0 = _feats(45, 6, 1), _feats(45, 6, 2)
    extras0 = _feats(45, 2, 3)
    out = {}
    for grads in (True, False):
        a, b, ex = (t.clone().requires_grad_(True) for t in (a0, b0, extras0))
        lse = _chunked._ChunkedLSE.apply(a, b, None, ex, kernel, cross, same, rows, 80.0, grads)
        (lse.mean() * 3.0).backward()
        out[grads] = (lse.detach(), a.grad, b.grad, ex.grad)
    for x, y in zip(out[True], out[False], strict=True):
        if y is None:
            assert x is None
        else:
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
    # rows of unequal weight: the recomputing backward, the same numbers as without the one pass
    w = torch.linspace(0.5, 2.0, 45, dtype=torch.float64)
    res = {}
    for grads in (True, False):
        a, b, ex = (t.clone().requires_grad_(True) for t in (a0, b0, extras0))
        lse = _chunked._ChunkedLSE.apply(a, b, None, ex, kernel, cross, same, rows, 80.0, grads)
        (lse * w).sum().backward()
        res[grads] = (a.grad, b.grad, ex.grad)
    for x, y in zip(res[True], res[False], strict=True):
        if y is not None:
            assert torch.equal(x, y)
