r"""Fused, chunked ``logsumexp`` over the candidates of a contrastive loss (one direction).

For anchors ``a`` ``(B, n)`` the function :func:`chunked_lse` returns, per anchor ``i``,

.. math::

    \mathrm{lse}_i = \log\Bigl(\sum_e e^{x_{ie}}
        + [\text{cross}] \sum_{j \ne i} e^{s(a_i, b_j)}
        + [\text{same}] \sum_{j \ne i} e^{s(a_i, a_j)}
        + \sum_m e^{s(a_i, \nu_m)}\Bigr),

where ``x`` ``(B, E)`` are per-anchor extra logits computed by the caller with ordinary autograd
(the positive's exact logit, or ``-inf`` for no term, and, optionally, the self pair's), ``b`` ``(B, n)`` the positives and
``ν`` the external negatives, shared ``(M, n)`` or per anchor ``(B, M, n)``.

Anchors are processed in blocks of rows. Each block's logits against one candidate set are formed
(a matmul for the dot product and ``‖·‖₂²``, explicit ``(rows, N, n)`` differences otherwise),
folded into a streaming max + sum, and discarded. The backward pass recomputes every block's
logits from the saved inputs and the saved ``lse`` (softmax weights ``e^{s - lse}``) and
accumulates the gradients of anchors, positives, negatives and extras. Autograd therefore holds
``O(B·n)`` (the inputs and ``lse``), never a ``B × B`` tensor.

The general-p blocks run on compiled, fused loops where :mod:`unmix.objectives._compiled` says
so (``train.loss_kernels``; :class:`CompiledPowerKernel`): no ``(rows, N, n)`` tensor is formed.

One pass (the matmul kernels, the eager general-p kernel for p ≠ 1 and the compiled one for any
p; one candidate set, gradients wanted): each row block's ``lse`` is final
after its one block, so the forward pass turns the block into softmax weights at once and
accumulates the gradients of ``Σ_i lse_i`` (``O(B·n)`` more). A backward whose incoming weights
are equal for every anchor (a mean over anchors, the losses' case) scales those; any other
backward recomputes as above.

Terms more than ``floor`` nats below the running row maximum are clamped to ``e^{-floor}`` relative
to it before ``exp`` (as ``_logsumexp`` of :mod:`unmix.objectives.infonce` does); their softmax
weights in the backward are clamped the same way (at most ``e^{-floor}`` instead of their exact,
smaller value). The masked diagonals (``j = i``) contribute exactly 0.
"""

from __future__ import annotations

import torch

from unmix.objectives import _compiled

#: Bound on the elements of one ``(rows, N)`` logits block of the matmul kernels. A block of this
#: size stays in the CPU cache while it is shifted, exponentiated and summed.
LOGIT_BLOCK_ELEMENTS = 2**18

#: Bound on the elements of one ``(rows, N, n)`` difference block of the general-``p`` kernel.
DIFF_BLOCK_ELEMENTS = 2**19


def _abs_pow(d: torch.Tensor, p: float) -> torch.Tensor:
    """``|d|^p`` (``|d|`` kept ≥ tiny for ``p < 1``, whose slope is infinite at 0)."""
    if p == 2.0:
        return d * d
    ad = d.abs()
    if p == 1.0:
        return ad
    if p == 3.0:
        return ad.mul_(d).mul_(d)
    if p < 1:
        ad.clamp_min_(torch.finfo(d.dtype).tiny)
    return ad.pow_(p)


#: Thin products (CPU BLAS is several times slower on ``n = 10`` columns than on 16): below
#: ``_PAD`` features ``w @ c`` is formed against ``c`` zero-padded to ``_PAD`` columns (the zeros
#: change no sum); below ``_THIN`` features ``wᵀ @ x`` is formed as ``(xᵀ @ w)ᵀ``, a short wide
#: product instead of a transposed thin one. Measured per ``(256, 1024)`` block at one thread:
#: n = 10, 126 vs 375 µs and 118 vs 825 µs (``benchmarks/thin_products.py``, docs/performance.md).
_PAD = 16
_THIN = 64


def _padded(c: torch.Tensor) -> torch.Tensor:
    """``c`` ``(N, n)`` zero-padded to ``_PAD`` columns when ``n < _PAD`` (else ``c`` itself);
    formed once per candidate set and backward pass, not per block."""
    n = c.shape[1]
    if n >= _PAD:
        return c
    out = c.new_zeros(c.shape[0], _PAD)
    out[:, :n] = c
    return out


def _acc_w_c(out: torch.Tensor, w: torch.Tensor, padded: torch.Tensor, alpha: float) -> None:
    """In place: ``out += alpha · w @ c`` for ``w`` ``(rows, N)`` and ``padded = _padded(c)``."""
    n = out.shape[1]
    if padded.shape[1] == n:
        out.addmm_(w, padded, alpha=alpha)
        return
    out.add_(torch.mm(w, padded)[:, :n], alpha=alpha)


def _acc_wT_x(out: torch.Tensor, w: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
    """In place: ``out += alpha · wᵀ @ x`` for ``w`` ``(rows, N)``, ``x`` ``(rows, n)``."""
    if x.shape[1] >= _THIN:
        out.addmm_(w.T, x, alpha=alpha)
        return
    out.add_(torch.mm(x.T, w).T, alpha=alpha)


def _weights_(x: torch.Tensor, lse: torch.Tensor, g: torch.Tensor, floor: float, diag) -> None:
    """In place: ``x ← g · e^{max(x − lse, −floor)}`` with the diagonal at offset ``diag`` → 0."""
    x.sub_(lse.unsqueeze(1)).clamp_min_(-floor).exp_().mul_(g.unsqueeze(1))
    if diag is not None:
        x.diagonal(diag).zero_()


class DotKernel:
    """``s(a, c) = aᵀc / τ``."""

    def __init__(self, tau: float) -> None:
        self.tau = tau

    def max_rows(self, n_cols: int, n: int, m_per_anchor: int) -> int:
        rows = LOGIT_BLOCK_ELEMENTS // max(1, n_cols)
        if m_per_anchor:
            rows = min(rows, DIFF_BLOCK_ELEMENTS // max(1, m_per_anchor * n))
        return max(1, rows)

    def prepare(self, c: torch.Tensor):
        return None

    def logits(self, x, c, aux):
        return torch.mm(x, c.T).div_(self.tau)

    def backward_aux(self, c: torch.Tensor) -> torch.Tensor:
        """What :meth:`backward_block` takes besides ``c``, formed once per backward pass."""
        return _padded(c)

    def backward_block(self, x, c, aux, lse, g, floor, diag, gx, gc, padded) -> None:
        w = self.logits(x, c, aux)
        _weights_(w, lse, g, floor, diag)
        self.accumulate(x, c, w, gx, gc, padded)

    def accumulate(self, x, c, w, gx, gc, padded) -> None:
        """In place: the gradients of ``Σ w ⊙ s(x, c)`` for fixed weights ``w``, added to ``gx``
        (and ``gc``, when given)."""
        _acc_w_c(gx, w, padded, 1.0 / self.tau)
        if gc is not None:
            _acc_wT_x(gc, w, x, 1.0 / self.tau)

    def logits_per_anchor(self, x, neg):
        return torch.bmm(neg, x.unsqueeze(2)).squeeze(2).div_(self.tau)

    def backward_per_anchor(self, x, neg, lse, g, floor, gx, gneg) -> None:
        w = self.logits_per_anchor(x, neg)
        _weights_(w, lse, g, floor, None)
        w.div_(self.tau)
        gx.add_(torch.bmm(w.unsqueeze(1), neg).squeeze(1))
        if gneg is not None:
            gneg.copy_(w.unsqueeze(2) * x.unsqueeze(1))


class PowerKernel:
    r"""``s(a, c) = −(Σ_k |a_k − c_k|^p)^{q/p} / τ`` from explicit difference blocks.

    A block against ``N`` candidates is laid out ``(rows, n, N)`` (candidates innermost: the sums
    over the ``n`` features and over the candidates then run along contiguous rows); per-anchor
    negatives ``(rows, M, n)``, as given."""

    def __init__(self, p: float, q: float, tau: float) -> None:
        self.p, self.q, self.tau = p, q, tau

    def max_rows(self, n_cols: int, n: int, m_per_anchor: int) -> int:
        return max(1, DIFF_BLOCK_ELEMENTS // max(1, max(n_cols, m_per_anchor) * n))

    def prepare(self, c: torch.Tensor):
        return c.T.contiguous()  # (n, N)

    def _finish_(self, s: torch.Tensor) -> torch.Tensor:
        """In place: ``−s^{q/p}/τ`` (``s`` kept ≥ tiny first when ``q < p``)."""
        if self.q != self.p:
            if self.q < self.p:
                s.clamp_min_(torch.finfo(s.dtype).tiny)
            s.pow_(self.q / self.p)
        return s.mul_(-1.0 / self.tau)

    def _sum_and_slope_(self, d: torch.Tensor, kdim: int, s=None):
        """``S = Σ_k |d_k|^p`` (summed over ``kdim``; given as ``s`` if already known) and the
        slope ``p·sign(d)|d|^(p-1)``, reusing ``d``'s memory."""
        p = self.p
        if p == 1.0:
            return (d.abs().sum(dim=kdim) if s is None else s), d.sign_()
        if p == 2.0:
            return (d * d).sum(dim=kdim), d.mul_(2.0)
        if p == 3.0:
            u = d.abs().mul_(d)  # d|d|
            return (u * d).sum(dim=kdim), u.mul_(3.0)  # |d|³ summed; 3d|d|
        ad = d.abs()
        if p < 1:  # |d|^p has an infinite slope at 0 for p < 1: keep |d| away from exact 0.
            ad.clamp_min_(torch.finfo(d.dtype).tiny)
        s = ad.pow(p).sum(dim=kdim)
        return s, ad.pow_(p - 1.0).mul_(d.sign_()).mul_(p)

    def _block_weights(self, d, kdim, lse, g, floor, diag, s=None):
        """``g·softmax·∂s/∂S`` of the difference block ``d`` (destroyed) times the slope of
        ``|d|^p``: the block whose sums give the gradients."""
        s, slope = self._sum_and_slope_(d, kdim, s)
        w = self._finish_(s.clone())
        _weights_(w, lse, g, floor, diag)
        return slope.mul_(self._chain_(w, s).unsqueeze(kdim))

    def _chain_(self, w: torch.Tensor, big_s: torch.Tensor) -> torch.Tensor:
        """In place: ``w · ∂s/∂S`` for ``s = −S^{q/p}/τ`` (the clamp at tiny where ``q < p``:
        no gradient through exact ties)."""
        if self.q == self.p:
            return w.mul_(-1.0 / self.tau)
        tiny = torch.finfo(big_s.dtype).tiny
        factor = big_s.clamp_min(tiny).pow_(self.q / self.p - 1.0)
        factor.mul_(-self.q / self.p / self.tau)
        if self.q < self.p:
            factor.masked_fill_(big_s < tiny, 0.0)
        return w.mul_(factor)

    def forward_grad_block(self, x, c, aux, ex, floor, diag, gx, gc) -> torch.Tensor:
        """One row block of the one-pass forward (:func:`_forward_with_grads`): the rows' ``lse``
        over the extras ``ex`` and the candidates ``c``, and, added to ``gx`` (and ``gc``), the
        gradients of their sum — from one difference block, which the recomputing path forms twice."""
        d = x.unsqueeze(2) - aux.unsqueeze(0)  # (rows, n, N)
        big_s, slope = self._sum_and_slope_(d, 1)
        w = self._finish_(big_s.clone())
        lse = _softmax_block_(w, ex, floor, diag)  # w: the softmax weights e^{s − lse}
        ws = slope.mul_(self._chain_(w, big_s).unsqueeze(1))
        gx.add_(ws.sum(dim=2))
        if gc is not None:
            gc.sub_(ws.sum(dim=0).T)
        return lse

    def logits(self, x, c, aux):
        if self.p == 1.0:
            # torch.cdist fuses difference, abs and sum for p = 1 (no (rows, N, n) buffer).
            s = torch.cdist(x, c, p=1.0)
        else:
            s = _abs_pow(x.unsqueeze(2) - aux.unsqueeze(0), self.p).sum(dim=1)
        return self._finish_(s)

    def backward_aux(self, c: torch.Tensor) -> None:
        return None

    def backward_block(self, x, c, aux, lse, g, floor, diag, gx, gc, bwd_aux) -> None:
        s = torch.cdist(x, c, p=1.0) if self.p == 1.0 else None  # as in the forward
        ws = self._block_weights(x.unsqueeze(2) - aux.unsqueeze(0), 1, lse, g, floor, diag, s)
        gx.add_(ws.sum(dim=2))
        if gc is not None:
            gc.sub_(ws.sum(dim=0).T)

    def logits_per_anchor(self, x, neg):
        return self._finish_(_abs_pow(x.unsqueeze(1) - neg, self.p).sum(dim=2))

    def backward_per_anchor(self, x, neg, lse, g, floor, gx, gneg) -> None:
        ws = self._block_weights(x.unsqueeze(1) - neg, 2, lse, g, floor, None)
        gx.add_(ws.sum(dim=1))
        if gneg is not None:
            torch.neg(ws, out=gneg)


class CompiledPowerKernel(PowerKernel):
    r""":class:`PowerKernel` whose in-batch blocks run on the fused, compiled loops of
    :mod:`unmix.objectives._compiled` (``S`` and the weighted slopes; no ``(rows, n, N)`` tensor).
    A block then holds ``(rows, N)`` matrices only, so its rows are bounded like the matmul
    kernels'. Per-anchor negatives keep the eager differences."""

    def __init__(self, p: float, q: float, tau: float) -> None:
        super().__init__(p, q, tau)
        self._sums, self._slopes = _compiled.block_fns(p)
        self._full: dict[int, int] = {}  # candidates N → rows of the first (full) block

    def max_rows(self, n_cols: int, n: int, m_per_anchor: int) -> int:
        return DotKernel.max_rows(self, n_cols, n, m_per_anchor)  # type: ignore[arg-type]

    def _rows_of(self, x: torch.Tensor, aux: torch.Tensor) -> int:
        # blocks run first to last, the first the largest: the shorter last one is padded to it
        return self._full.setdefault(aux.shape[1], x.shape[0])

    def _big_s(self, x, aux) -> torch.Tensor:
        return self._sums(x, aux, self._rows_of(x, aux))

    def logits(self, x, c, aux):
        return self._finish_(self._big_s(x, aux))

    def _add_slopes(self, x, aux, w, gx, gc) -> None:
        g_x, g_cT = self._slopes(x, aux, w, self._rows_of(x, aux))
        gx.add_(g_x)
        if gc is not None:
            gc.sub_(g_cT.T)

    def forward_grad_block(self, x, c, aux, ex, floor, diag, gx, gc) -> torch.Tensor:
        big_s = self._big_s(x, aux)
        w = self._finish_(big_s.clone())
        lse = _softmax_block_(w, ex, floor, diag)
        self._add_slopes(x, aux, self._chain_(w, big_s), gx, gc)
        return lse

    def backward_block(self, x, c, aux, lse, g, floor, diag, gx, gc, bwd_aux) -> None:
        big_s = self._big_s(x, aux)
        w = self._finish_(big_s.clone())
        _weights_(w, lse, g, floor, diag)
        self._add_slopes(x, aux, self._chain_(w, big_s), gx, gc)


class SqL2Kernel(PowerKernel):
    r"""``s(a, c) = −‖a − c‖₂² / τ`` by the matmul form ``‖a‖² + ‖c‖² − 2aᵀc`` (clamped at 0).

    Per-anchor negatives (a block as large as the given negatives) use exact differences."""

    def __init__(self, tau: float) -> None:
        super().__init__(2.0, 2.0, tau)

    def max_rows(self, n_cols: int, n: int, m_per_anchor: int) -> int:
        return DotKernel.max_rows(self, n_cols, n, m_per_anchor)  # type: ignore[arg-type]

    def prepare(self, c: torch.Tensor):
        return c.pow(2).sum(dim=-1).unsqueeze(0)

    def logits(self, x, c, aux):
        sq = torch.addmm(aux, x, c.T, alpha=-2.0)
        sq.add_(x.pow(2).sum(dim=-1, keepdim=True)).clamp_min_(0.0)
        return sq.mul_(-1.0 / self.tau)

    def backward_aux(self, c: torch.Tensor) -> torch.Tensor:
        return _padded(c)

    def backward_block(self, x, c, aux, lse, g, floor, diag, gx, gc, padded) -> None:
        w = self.logits(x, c, aux)
        _weights_(w, lse, g, floor, diag)
        self.accumulate(x, c, w, gx, gc, padded)

    def accumulate(self, x, c, w, gx, gc, padded) -> None:
        """As :meth:`DotKernel.accumulate`. ∂s/∂a_i = −2(a_i − c_j)/τ, ∂s/∂c_j = −2(c_j − a_i)/τ."""
        k = 2.0 / self.tau
        _acc_w_c(gx, w, padded, k)
        gx.addcmul_(w.sum(dim=1, keepdim=True), x, value=-k)
        if gc is not None:
            _acc_wT_x(gc, w, x, k)
            gc.addcmul_(w.sum(dim=0).unsqueeze(1), c, value=-k)


class _ChunkedLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, neg, extras, kernel, cross, same, rows, floor, grads):  # type: ignore[override]
        ctx.kernel, ctx.cross, ctx.same, ctx.rows, ctx.floor = kernel, cross, same, rows, floor
        ctx.pre = None
        with torch.no_grad():
            if grads and _one_pass(kernel, a, b, neg, cross, same):
                lse, ctx.pre = _forward_with_grads(
                    kernel, a, b, neg, extras, cross, same, rows, floor, ctx.needs_input_grad
                )
            else:
                lse = _forward(kernel, a, b, neg, extras, cross, same, rows, floor)
        ctx.save_for_backward(a, b, neg, extras, lse)
        return lse

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        a, b, neg, extras, lse = ctx.saved_tensors
        need = ctx.needs_input_grad
        tail = (None, None, None, None, None, None)
        if ctx.pre is not None and bool((g == g[0]).all()):
            # the common case, a mean over anchors: every row's weight is the same, so the
            # gradients formed in the forward pass (for weight 1) only need scaling
            g_ex = _extras_grad(extras, lse, g) if need[3] else None
            grads = tuple(None if t is None else t * g[0] for t in ctx.pre)
            return (*grads, g_ex, *tail)
        with torch.no_grad():
            grads = _backward(
                ctx.kernel, a, b, neg, extras, lse, g.contiguous(), ctx.cross, ctx.same,
                ctx.rows, ctx.floor, need,
            )  # fmt: skip
        return (*grads, *tail)


def _blocks(a, b, neg, cross, same):
    """The candidate sets ``(name, tensor, masked diagonal?)`` scored by a matmul-like kernel."""
    out = []
    if cross:
        out.append(("b", b, True))
    if same:
        out.append(("a", a, True))
    if neg is not None and neg.ndim == 2:
        out.append(("neg", neg, False))
    return out


def _rows(kernel, a, b, neg, cross, same, rows):
    if rows is not None:
        return rows
    n_cols = max([t.shape[0] for _, t, _ in _blocks(a, b, neg, cross, same)], default=1)
    m = neg.shape[1] if neg is not None and neg.ndim == 3 else 0
    return kernel.max_rows(n_cols, a.shape[1], m)


def _block_logits(kernel, x, r0, blocks, per_anchor, rows):
    """One row block's logits against each candidate set in turn (one block alive at a time)."""
    for t, aux, diag in blocks:
        yield kernel.logits(x, t, aux), (r0 if diag else None)
    if per_anchor is not None:
        yield kernel.logits_per_anchor(x, per_anchor[r0 : r0 + rows]), None


def _forward(kernel, a, b, neg, extras, cross, same, rows, floor):
    blocks = [(t, kernel.prepare(t), diag) for _, t, diag in _blocks(a, b, neg, cross, same)]
    per_anchor = neg if neg is not None and neg.ndim == 3 else None
    rows = _rows(kernel, a, b, neg, cross, same, rows)
    lse = a.new_empty(a.shape[0])
    for r0 in range(0, a.shape[0], rows):
        x = a[r0 : r0 + rows]
        ex = extras[r0 : r0 + rows]
        m = ex.amax(dim=1)
        # the extras exactly, as logaddexp (a row whose extras are all -inf, no term: 0, not NaN)
        total = (ex - m.unsqueeze(1)).exp().sum(dim=1).nan_to_num_(0.0)
        for s, diag in _block_logits(kernel, x, r0, blocks, per_anchor, rows):
            if diag is not None:
                s.diagonal(diag).fill_(float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=1))
            total.mul_((m - m_new).exp_())
            s.sub_(m_new.unsqueeze(1)).clamp_min_(-floor).exp_()
            if diag is not None:
                s.diagonal(diag).zero_()
            total.add_(s.sum(dim=1))
            m = m_new
        lse[r0 : r0 + rows] = total.log_().add_(m)
    return lse


def _softmax_block_(s: torch.Tensor, ex: torch.Tensor, floor: float, diag) -> torch.Tensor:
    """A block's rows' ``lse`` over the extras ``ex`` and the logits ``s`` (the whole candidate
    set, the diagonal at offset ``diag`` masked); in place, ``s`` becomes the softmax weights
    ``e^{max(s − m, −floor)}/Σ`` (``m`` the row maximum, as :func:`_forward` clamps)."""
    if diag is not None:
        s.diagonal(diag).fill_(float("-inf"))
    m = torch.maximum(ex.amax(dim=1), s.amax(dim=1))
    total = (ex - m.unsqueeze(1)).exp().sum(dim=1)
    s.sub_(m.unsqueeze(1)).clamp_min_(-floor).exp_()
    if diag is not None:
        s.diagonal(diag).zero_()
    total.add_(s.sum(dim=1))
    s.div_(total.unsqueeze(1))
    return total.log_().add_(m)


def _extras_grad(extras: torch.Tensor, lse: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """∂(Σ_i g_i lse_i)/∂extras = g_i e^{x_ie − lse_i}."""
    return (extras - lse.unsqueeze(1)).exp_().mul_(g.unsqueeze(1))


def _one_pass(kernel, a, b, neg, cross, same) -> bool:
    """Whether the forward pass can form the gradients too: a matmul kernel, the compiled
    general-p one, or the eager one for p ≠ 1, and one candidate set (each row block's
    logsumexp is then final after its one block)."""
    one_block = isinstance(kernel, DotKernel | SqL2Kernel | CompiledPowerKernel) or (
        isinstance(kernel, PowerKernel) and kernel.p != 1.0  # eager p = 1: cdist forms its logits
    )
    return (
        one_block and len(_blocks(a, b, neg, cross, same)) == 1 and (neg is None or neg.ndim == 2)
    )


def _forward_with_grads(
    kernel, a, b, neg, extras, cross, same, rows, floor, need, anchor_side_only=False
):
    """:func:`_forward` for one candidate set, which also accumulates the gradients of
    ``Σ_i lse_i`` (every row's weight 1) from each block's softmax weights while the block is alive:
    the backward pass then scales them instead of recomputing every block (:class:`_ChunkedLSE`).
    ``anchor_side_only``: only the anchors' own side of ``∂s(a_i, t_j)`` is accumulated, none for
    the candidates (:func:`chunked_pair_lse`, whose candidates are the anchors themselves)."""
    ((name, t, diag),) = _blocks(a, b, neg, cross, same)
    aux, padded = kernel.prepare(t), kernel.backward_aux(t)
    rows = _rows(kernel, a, b, neg, cross, same, rows)
    ga = torch.zeros_like(a) if need[0] else None
    gt = None
    if not anchor_side_only:
        if name == "a":
            gt = ga
        elif (name == "b" and need[1]) or (name == "neg" and need[2]):
            gt = torch.zeros_like(t)
    lse = a.new_empty(a.shape[0])
    for r0 in range(0, a.shape[0], rows):
        x = a[r0 : r0 + rows]
        ex = extras[r0 : r0 + rows]
        gx = ga[r0 : r0 + rows] if ga is not None else torch.zeros_like(x)  # discarded
        if isinstance(kernel, PowerKernel) and not isinstance(kernel, SqL2Kernel):
            lse[r0 : r0 + rows] = kernel.forward_grad_block(
                x, t, aux, ex, floor, r0 if diag else None, gx, gt
            )
            continue
        w = kernel.logits(x, t, aux)
        lse[r0 : r0 + rows] = _softmax_block_(w, ex, floor, r0 if diag else None)
        kernel.accumulate(x, t, w, gx, gt, padded)
    gb = gt if name == "b" else None
    gneg = gt if name == "neg" else None
    return lse, (ga, gb, gneg)


def _backward(kernel, a, b, neg, extras, lse, g, cross, same, rows, floor, need):
    need_a, need_b, need_neg, need_ex = need[:4]
    ga = torch.zeros_like(a)
    gb = torch.zeros_like(b) if cross and need_b else None
    gneg = torch.zeros_like(neg) if neg is not None and need_neg else None
    per_anchor = neg if neg is not None and neg.ndim == 3 else None
    blocks = []
    for name, t, diag in _blocks(a, b, neg, cross, same):
        target = {"a": ga if need_a else None, "b": gb, "neg": gneg}[name]
        blocks.append((t, kernel.prepare(t), diag, target, kernel.backward_aux(t)))
    rows = _rows(kernel, a, b, neg, cross, same, rows)
    g_ex = _extras_grad(extras, lse, g) if need_ex else None
    for r0 in range(0, a.shape[0], rows):
        x = a[r0 : r0 + rows]
        lr, gr, gx = lse[r0 : r0 + rows], g[r0 : r0 + rows], ga[r0 : r0 + rows]
        for t, aux, diag, target, bwd_aux in blocks:
            kernel.backward_block(
                x, t, aux, lr, gr, floor, r0 if diag else None, gx, target, bwd_aux
            )
        if per_anchor is not None:
            kernel.backward_per_anchor(
                x, per_anchor[r0 : r0 + rows], lr, gr, floor, gx,
                None if gneg is None else gneg[r0 : r0 + rows],
            )  # fmt: skip
    return (ga if need_a else None), gb, gneg, g_ex


class _PairLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, kernel, rows, floor):  # type: ignore[override]
        # (an autograd.Function's forward already runs with grad mode off)
        lse, side = _pair_rows(kernel, x, rows, floor, ctx.needs_input_grad[0])
        total = torch.logsumexp(lse, dim=0)
        ctx.save_for_backward(lse, total, side)
        return total

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        lse, total, side = ctx.saved_tensors
        # symmetric s and a symmetric global softmax P_ij = e^{s_ij − L}: both arguments of s
        # give the same sum, so ∂L/∂x_k = 2 Σ_j P_kj ∂₁s_kj = 2 e^{lse_k − L} · side_k
        w = (lse - total).exp_().mul_(2.0 * g)
        return side * w.unsqueeze(1), None, None, None


def _pair_rows(kernel, x, rows, floor, grads):
    """Per row ``i``: ``lse_i = log Σ_{j≠i} e^{s(x_i, x_j)}`` and, if ``grads``, the first-argument
    side of its gradient with the row's softmax weights, ``Σ_j e^{s_ij − lse_i} ∂₁s(x_i, x_j)``:
    the one-pass forward over the same view (:func:`_forward_with_grads`), anchors' side only."""
    none = x.new_full((x.shape[0], 1), float("-inf"))  # no extra candidate per row
    need = (grads, False, False, False)
    lse, (side, _, _) = _forward_with_grads(
        kernel, x, x, None, none, False, True, rows, floor, need, anchor_side_only=True
    )
    return lse, (side if side is not None else x.new_zeros(0))


def chunked_pair_lse(
    kernel, x: torch.Tensor, *, rows: int | None = None, floor: float = 80.0
) -> torch.Tensor:
    r"""``log Σ_{i ≠ j} e^{s(x_i, x_j)}`` over the ordered pairs of ``x`` ``(N, n)``, a 0-dim
    tensor, for a **symmetric** kernel (:class:`SqL2Kernel`, :class:`PowerKernel` with ``p = q``;
    the uniformity term of :class:`unmix.objectives.AlignUniform`).

    One pass over row blocks forms each row's ``lse_i`` and the first-argument side of its
    gradient; since ``s`` and the pairs' global softmax are symmetric, the second argument's side
    equals the first's, so the backward only scales those rows by ``2 e^{lse_i − L}`` — no block
    is recomputed and no ``N × N`` tensor is held (``O(N·n)`` saved). Equal to
    :func:`chunked_lse` with ``same=True`` followed by a ``logsumexp`` over the rows, to float
    rounding (terms below ``floor`` nats under their row's maximum clamped alike).
    """
    if isinstance(kernel, DotKernel) or (isinstance(kernel, PowerKernel) and kernel.p != kernel.q):
        raise ValueError("chunked_pair_lse needs a symmetric kernel: SqL2Kernel or p = q.")
    if type(kernel) is PowerKernel and _compiled.use_compiled(x.device, x.shape[0]):
        kernel = CompiledPowerKernel(kernel.p, kernel.q, kernel.tau)
    return _PairLSE.apply(x.contiguous(), kernel, rows, float(floor))


def chunked_lse(
    kernel,
    a: torch.Tensor,
    b: torch.Tensor,
    neg: torch.Tensor | None,
    extras: torch.Tensor,
    *,
    cross: bool,
    same: bool,
    rows: int | None = None,
    floor: float = 80.0,
) -> torch.Tensor:
    """Per-anchor ``logsumexp`` over the candidates described in the module docstring; ``(B,)``.

    ``kernel`` is a :class:`DotKernel`, :class:`SqL2Kernel` or :class:`PowerKernel` (run as a
    :class:`CompiledPowerKernel` where :func:`unmix.objectives._compiled.use_compiled` says so); ``rows`` the
    anchors per block (``None``: automatic, bounded by :data:`LOGIT_BLOCK_ELEMENTS` /
    :data:`DIFF_BLOCK_ELEMENTS`).
    """
    inputs = (a, b, extras) if neg is None else (a, b, neg, extras)
    grads = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
    if type(kernel) is PowerKernel:
        n_cand = max([t.shape[0] for _, t, _ in _blocks(a, b, neg, cross, same)], default=0)
        if n_cand and _compiled.use_compiled(a.device, n_cand):
            kernel = CompiledPowerKernel(kernel.p, kernel.q, kernel.tau)
    return _ChunkedLSE.apply(
        a, b, neg, extras.contiguous(), kernel, bool(cross), bool(same), rows, float(floor), grads
    )
