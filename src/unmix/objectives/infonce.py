r"""Contrastive objectives of the InfoNCE family (Zimmermann et al., 2021, Eq. 1 and Eq. 6).

For an anchor feature :math:`h = f(x)`, its positive :math:`\tilde h = f(\tilde x)` and a set of
negative features :math:`\{h^-_i\}`, both losses are the cross-entropy of picking the positive among
the candidates,

.. math::

    \mathcal{L} = \mathbb{E}\Bigl[-\log\frac{e^{s(h,\tilde h)}}
        {e^{s(h,\tilde h)} + \sum_{i} e^{s(h, h^-_i)}}\Bigr],

computed with ``logsumexp``. The positive is always a candidate (it is in the denominator, as in
Eq. 1). The similarity is

* :class:`InfoNCE` (Eq. 1): :math:`s(a, b) = a^\top b / \tau` (features usually on a sphere);
* :class:`LpInfoNCE` (Eq. 6): :math:`s(a, b) = -\delta(a, b)/\tau` with
  :math:`\delta(a, b) = \|a - b\|_p^q = (\sum_k |a_k - b_k|^p)^{q/p}` (default :math:`q = p`, i.e.
  :math:`\|\cdot\|_p^p`; :math:`p = 1` matches a Laplace conditional, :math:`p = q = 2` a normal
  one, :math:`p = \beta` a generalised normal).

**Where the negatives come from** (``negatives=``):

``"in_batch"`` (default) — the other samples of the batch ``h, h_pos`` of size ``B``. Anchor ``i``'s
candidates are its positive ``h_pos[i]`` plus the blocks switched on below:

* ``cross_view_negatives=True`` (default): ``h_pos[j]`` for every ``j != i``. With only this block
  the logits are row ``i`` of the ``B × B`` matrix :math:`s(h_i, \tilde h_j)` with target ``i``
  (the CPC/CLIP form); ``B`` candidates.
* ``same_view_negatives=False``: ``h[j]`` for every ``j != i`` — the other anchors (SimCLR's extra
  negatives). Both blocks on gives SimCLR's ``2B - 1`` candidates.
* ``include_self=False``: also the anchor's pair with itself, :math:`s(h_i, h_i)` (requires
  ``same_view_negatives``). This term is :math:`\|h_i\|^2/\tau` (InfoNCE; a constant on a sphere of
  fixed radius) or 0 (LpInfoNCE): it is not a sample from :math:`p_{\text{data}}` and only shifts
  the loss. The reference code of Zimmermann et al. used ``cross_view_negatives=False,
  same_view_negatives=True, include_self=True`` (positive + all ``B`` anchors, self included); use
  that setting only to reproduce its loss values.

Every in-batch negative is a draw from :math:`p_{\text{data}}` independent of the anchor's pair
(the other positives by the matching-marginal property): one block is exactly Eq. 1 with
:math:`M = B - 1` i.i.d. negatives; with both blocks the :math:`2B - 2` negatives are identically
distributed but come in dependent pairs :math:`(h_j, \tilde h_j)`.

``"external"`` — separately drawn negatives ``h_neg`` passed to ``forward``: shape ``(B, M, n)``
(``M`` per anchor) or ``(M, n)`` (shared by all anchors); ``M + 1`` candidates.

``"shared"`` — the in-batch candidates above *plus* ``M`` separately drawn negatives ``h_neg``
``(M, n)`` shared by every anchor (``M = 0`` adds none): a larger negative set at the cost of encoding ``M`` more
samples once per step (not ``B·M``), and a ``B × (B + M)`` rather than ``(B + M)²`` logit matrix —
the cheap way to more negatives when positives are not the bottleneck. Every shared negative is an
i.i.d. draw from :math:`p_{\text{data}}` independent of the pairs, so each anchor's candidates are
still its positive and i.i.d. negatives (Eq. 1 with :math:`M' = B - 1 + M`).

``"queue"`` (the registered kinds only, ``objective.negatives: queue``, ``n_negatives: K``) — the
in-batch candidates plus the features of the last ``K`` images of earlier steps (anchors and
positives), kept by :class:`unmix.objectives.base.Contrastive` as a first-in-first-out queue and
passed to the loss as ``"shared"`` negatives, detached (a memory bank; Wu et al. 2018, He et al.
2020, MoCo, without its momentum encoder). More negatives for almost no compute: the queue's
``B × K`` logits, no encoder pass. Each queued feature is a draw from :math:`p_{\text{data}}`
independent of the current pairs, but encoded by the network of up to ``K / 2B`` steps earlier; the
first step has no queue (in-batch candidates only; ``queue_warmup`` keeps it out for a fraction
of the run), and the queue is part of a checkpoint, so a resumed run continues exactly.
**Measured: it collapses Table 4 row 1** (box model, Lp distance; K = 256 or 1,024 against 127
in-batch negatives; docs/images.md, "Cheaper routes to more negatives"): from the first steps,
and again when it joins at 20 % of the run, every image ends on one feature (the loss exactly
log(1 + 127 + K)). Stale negatives reward moving every feature away from where the network
was, a move the in-batch candidates do not see; MoCo's momentum encoder, which keeps the queued
features consistent, is not implemented. Treat it as an experiment's switch, not a recipe.

``symmetric=True`` averages the loss with the one in which ``h`` and ``h_pos`` swap roles.

**How the anchors are combined** (``estimator=``): ``"infonce"`` (default) averages the per-anchor
cross-entropies, :math:`\frac1B\sum_i(\mathrm{lse}_i - s_{ii})`; ``"dv"`` takes one
log-mean-exp over every candidate pair of the batch,
:math:`\log\frac1B\sum_i e^{\mathrm{lse}_i} - \frac1B\sum_i s_{ii}` — the Donsker–Varadhan
bound on the mutual information with the same critic (Belghazi et al. 2018, MINE; Poole et al.
2019, Sec. 2), the aggregation of Wang & Isola's uniformity term. By Jensen it is ≥ the InfoNCE
value, with equality when every anchor's candidate sum is the same. As the number of candidates
grows (minus its log) it tends to :math:`-\mathbb{E}[s(h, \tilde h)] + \log \mathbb{E}_{x, x'}
e^{s(f(x), f(x'))}`, whose minimisers are the critics equal to the log density ratio up to a
constant — the same condition InfoNCE's limit imposes, so the matched critic is its minimiser too.
``"decoupled"`` (Yeh et al. 2022, decoupled contrastive learning) leaves the positive out of each
anchor's denominator, :math:`\frac1B\sum_i(\log\sum_{j \ne i} e^{s_{ij}} - s_{ii})`; per anchor
InfoNCE is decoupled + softplus(−decoupled), so the two share their many-negative limit (minus
:math:`\log M`), but the negatives' softmax weights no longer vanish once the positive dominates
(a saturated task keeps its repulsion). Its loss falls without bound on features of free scale,
so a setting refuses it there (:class:`unmix.settings.Setting`).

**Hard-negative weighting** (``hardness`` β ≥ 0; Robinson et al. 2021, "Contrastive learning
with hard negative samples", their importance-weighted estimator without the debiasing term):
each anchor's negatives enter its denominator with weights :math:`w_j = M\,
\mathrm{softmax}_j(\beta\,s_j)`, held constant (no gradient flows through them),

.. math::

    \mathrm{lse}_i = \log\Bigl(e^{s_{ii}} + \sum_{j=1}^{M} w_j\,e^{s_{ij}}\Bigr), \qquad
    \log\sum_j w_j e^{s_{ij}} = \log M + \mathrm{lse}_j((1+\beta)s_{ij}) - \mathrm{lse}_j(\beta s_{ij}),

so the repulsion concentrates on the negatives closest to the anchor (each negative's gradient
weight is :math:`\propto e^{(1+\beta)s_{ij}}`) while the positive keeps its weight at the
temperature τ — unlike a smaller τ, which sharpens both. β = 0 is InfoNCE exactly; as β → ∞ the
sum tends to :math:`M e^{\max_j s_{ij}}`; collapsed features still give
``log(number of candidates)``. The ``M`` negatives are every candidate but the positive (the self
pair included where ``include_self`` makes it one). It costs a second pass over the negatives'
logits (computed without gradient). It estimates the denominator under the tilted
distribution :math:`q_\beta(x^-) \propto e^{\beta s(x, x^-)}\,p(x^-)` rather than
:math:`p_{\text{data}}`, so its minimiser is not the one of Theorems 1–5: a switch for
experiments, measured in docs/images.md: on Table 4 row 1 (seed 0, 510 negatives an anchor)
β = 1 moved R² / MCC by +0.3 / +0.6 points, within the spread between seeds.

**Alignment warm-up** (``align_weight``, and the registered kinds' ``align_start`` /
``align_warmup``): the positive logit enters the loss with a weight :math:`w`,
:math:`\frac1B\sum_i(\mathrm{lse}_i - w\,s_{ii})` (the positive stays a candidate inside
:math:`\mathrm{lse}_i` at full weight); :math:`w = 1` is InfoNCE. On the unit sphere with
:math:`s = a^\top b/\tau` the loss is then :math:`-w` × Wang & Isola's alignment term plus a
per-anchor uniformity term, so :math:`w < 1` weighs alignment — the term estimated from one
pair per anchor — below uniformity, which every candidate pair informs (Wang & Isola's AU
objective with weight :math:`w_a` and :math:`t` has this balance with :math:`w = w_a/t` at
τ = 1/(2t), up to how the candidates are pooled: its defaults are :math:`w = 1/2`). The
registered kinds raise :math:`w` linearly from ``align_start`` to 1 over the first
``align_warmup`` fraction of the run (:meth:`unmix.objectives.base.Contrastive.set_progress`), so the rest of the run — and
the minimiser it converges to — is InfoNCE's; like a learning-rate warm-up it changes the path,
not the objective. :math:`w < 1` needs features of fixed scale (a sphere of fixed radius):
when the positive is the closest candidate, scaling the features by :math:`c` sends the loss to
:math:`c^{q}(1 - w)\,s_{ii} \to -\infty` (a setting refuses it for the other model spaces,
whose box heads learn their magnitude, and for ``learn_radius``). Measured use: Table 1 row 1
(vMF κ = 1, where one pair carries little signal) in docs/quick_budget_search.md, "Fifth
search".

**Temperature warm-up** (the registered kinds' ``tau_start`` / ``tau_warmup``): τ moves
geometrically from ``tau_start`` at the first step to ``tau`` at the ``tau_warmup`` fraction of
the run, :math:`\tau_t = \tau\,(\tau_0/\tau)^{1 - t/T_w}`, and is ``tau`` after
(:meth:`unmix.objectives.base.Contrastive.set_progress` sets it from the step, so a resumed run
continues exactly). Each step's loss is the loss at :math:`\tau_t`, bounded below for every
model space; the run ends on the loss at ``tau``, and so at its minimiser. At a small ``tau``
(e.g. the moment-matched one of a box conditional) the in-batch task saturates from the first
steps — every positive far closer than all negatives, only near neighbours give gradient — and a
warmer start lets every candidate pull while the features find their global arrangement.

Collapsed features (all identical) give exactly ``log(number of candidates)``
(:meth:`n_candidates`); for InfoNCE, :math:`\mathcal{L} - \log M` tends to the sum of
:func:`unmix.metrics.alignment_term` and :func:`unmix.metrics.uniformity_term` as ``M → ∞``.
"""

from __future__ import annotations

import math
import numbers
from typing import Annotated, Literal

import torch
from pydantic import Field, model_validator
from torch import nn

from unmix.errors import ConfigError
from unmix.objectives import _chunked
from unmix.registry import SpecBase, register_objective

__all__ = ["InfoNCE", "LpInfoNCE"]

NegativesMode = Literal["in_batch", "external", "shared"]
#: The registered kinds' ``negatives``: the loss module's modes, and ``queue`` (kept by the
#: objective, passed to the loss as ``shared``).
SpecNegativesMode = Literal["in_batch", "external", "shared", "queue"]
EstimatorMode = Literal["infonce", "dv", "decoupled"]

#: Default bound on the elements of one ``(rows, N_b, n)`` difference block of :class:`LpInfoNCE`.
DEFAULT_BLOCK_ELEMENTS = 2**22


#: Terms more than this far below a row's maximum are clamped before ``exp``: they contribute
#: less than e^-80 ≈ 1.8e-35 relative to the sum (below float32 and float64 resolution of the
#: result), and CPU ``exp`` kernels run up to 40× slower on arguments that underflow.
_LSE_FLOOR = 80.0


def _logsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``log Σ exp(x)`` along ``dim``, with terms far below the maximum clamped (see _LSE_FLOOR).

    Equal to :func:`torch.logsumexp` up to a relative error below e^-80 per term (the gradient of
    a clamped term, itself below e^-80 relative, is set to 0; a masked ``-inf`` term counts as
    e^-80 relative to the maximum instead of 0, equally negligible).
    """
    m = x.detach().amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    shifted = (x - m).clamp_min(-_LSE_FLOOR)
    return (shifted.exp().sum(dim=dim)).log() + m.squeeze(dim)


def _check_positive_real(label: str, value, hint: str) -> float:
    """``value`` as a float, or a :class:`ConfigError` "<label> must be a positive finite number"."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and value > 0)
    ):
        raise ConfigError(f"{label} must be a positive finite number, got {value!r}; {hint}")
    return float(value)


def _check_tau(tau: float) -> float:
    return _check_positive_real("'tau'", tau, "the paper uses 1.0.")


def _check_hardness(hardness: float) -> float:
    if isinstance(hardness, numbers.Real) and not isinstance(hardness, bool) and hardness == 0:
        return 0.0
    return _check_positive_real(
        "'hardness'", hardness, "0 is InfoNCE (every negative weighted alike), e.g. 1.0."
    )


def candidate_set_problem(
    negatives: str, cross_view_negatives: bool, same_view_negatives: bool, include_self: bool
) -> str | None:
    """Why the in-batch candidate flags cannot go together (module docstring), or ``None``: the
    one rule that both the loss classes and the registered kinds' specs apply."""
    if negatives == "external" and (
        same_view_negatives or include_self or not cross_view_negatives
    ):
        return (
            "'cross_view_negatives', 'same_view_negatives' and 'include_self' choose in-batch "
            "negatives and cannot be changed with negatives='external' (the candidates are then "
            "the positive and the given h_neg); leave them at their defaults or use "
            "negatives='in_batch'."
        )
    if negatives != "external" and not (cross_view_negatives or same_view_negatives):
        return (
            f"with negatives='{negatives}' at least one of 'cross_view_negatives' or "
            "'same_view_negatives' must be True, otherwise there are no negatives."
        )
    if include_self and not same_view_negatives:
        return (
            "'include_self' adds the anchor's pair with itself to the same-view negatives; set "
            "same_view_negatives=True as well (or include_self=False)."
        )
    return None


class _ContrastiveLoss(nn.Module):
    """Shared candidate bookkeeping; subclasses define the similarity ``s(a, b)`` (already / τ)."""

    def __init__(
        self,
        tau: float = 1.0,
        negatives: NegativesMode = "in_batch",
        *,
        cross_view_negatives: bool = True,
        same_view_negatives: bool = False,
        include_self: bool = False,
        symmetric: bool = False,
        fused: bool = True,
        estimator: EstimatorMode = "infonce",
        align_weight: float = 1.0,
        hardness: float = 0.0,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.tau = _check_tau(tau)
        self.align_weight = _check_positive_real(
            "'align_weight'", align_weight, "1.0 is InfoNCE (the positive term at full weight)."
        )
        self.hardness = _check_hardness(hardness)
        if estimator not in ("infonce", "dv", "decoupled"):
            raise ConfigError(
                f"'estimator' of {owner} must be 'infonce', 'dv' or 'decoupled', got {estimator!r}."
            )
        self.estimator = estimator
        if negatives not in ("in_batch", "external", "shared"):
            raise ConfigError(
                f"'negatives' of {owner} must be 'in_batch', 'external' or 'shared', got "
                f"{negatives!r}."
            )
        problem = candidate_set_problem(
            negatives, cross_view_negatives, same_view_negatives, include_self
        )
        if problem:
            raise ConfigError(f"{owner}: {problem}")
        self.negatives = negatives
        self.cross_view_negatives = bool(cross_view_negatives)
        self.same_view_negatives = bool(same_view_negatives)
        self.include_self = bool(include_self)
        self.symmetric = bool(symmetric)
        self.fused = bool(fused)

    # --- similarities, to be defined by subclasses (all already divided by tau) -----------------
    def pair_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``s(a_i, b_i)`` for matching rows; shape ``(B,)``."""
        raise NotImplementedError

    def cross_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``s(a_i, b_j)`` for all pairs; shape ``(N_a, N_b)``."""
        raise NotImplementedError

    def negative_logits(self, a: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        """``s(a_i, neg[i, m])`` for per-anchor negatives ``(B, M, n)``; shape ``(B, M)``."""
        raise NotImplementedError

    # --- bookkeeping --------------------------------------------------------------------------
    def n_candidates(self, batch_size: int, n_negatives: int | None = None) -> int:
        """Number of candidates per anchor (the positive included, except for the ``decoupled``
        estimator); collapsed features give its log."""
        positive = int(self.estimator != "decoupled")
        if self.negatives == "external":
            if n_negatives is None:
                raise ConfigError("n_candidates: pass n_negatives (M) for negatives='external'.")
            return positive + int(n_negatives)
        if self.negatives == "shared" and n_negatives is None:
            raise ConfigError("n_candidates: pass n_negatives (M) for negatives='shared'.")
        return (
            positive
            + (batch_size - 1) * self.cross_view_negatives
            + (batch_size - 1) * self.same_view_negatives
            + int(self.include_self)
            + (int(n_negatives) if self.negatives == "shared" else 0)
        )

    def _check_inputs(
        self, h: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor | None
    ) -> None:
        owner = type(self).__name__
        for name, t in (("h", h), ("h_pos", h_pos)):
            if not isinstance(t, torch.Tensor) or t.ndim != 2 or not t.is_floating_point():
                raise ConfigError(
                    f"{owner}: '{name}' must be a floating tensor of shape (B, n), got "
                    f"{tuple(getattr(t, 'shape', ()))}."
                )
        if h.shape != h_pos.shape:
            raise ConfigError(
                f"{owner}: 'h' and 'h_pos' must have the same shape (row i of h_pos is the "
                f"positive of row i of h), got {tuple(h.shape)} and {tuple(h_pos.shape)}."
            )
        b, n = h.shape
        if self.negatives == "shared":
            # M = 0 adds no candidates (a negatives queue before its first step is stored)
            ok = isinstance(h_neg, torch.Tensor) and h_neg.ndim == 2 and h_neg.shape[1] == n
            if not ok:
                raise ConfigError(
                    f"{owner} was built with negatives='shared': pass h_neg of shape (M, {n}) "
                    f"(negatives shared by every anchor), got "
                    f"{tuple(getattr(h_neg, 'shape', ())) if h_neg is not None else None}."
                )
            if b < 2:
                raise ConfigError(
                    f"{owner}: in-batch negatives need a batch of at least 2, got B = {b}."
                )
        elif self.negatives == "in_batch":
            if h_neg is not None:
                raise ConfigError(
                    f"{owner} was built with negatives='in_batch' and takes no 'h_neg'; build it "
                    f"with negatives='external' to use separately drawn negatives."
                )
            if b < 2:
                raise ConfigError(
                    f"{owner}: in-batch negatives need a batch of at least 2, got B = {b}."
                )
        else:
            if h_neg is None:
                raise ConfigError(
                    f"{owner} was built with negatives='external': pass h_neg of shape (B, M, n) "
                    f"or (M, n) to forward(h, h_pos, h_neg)."
                )
            ok = isinstance(h_neg, torch.Tensor) and (
                (h_neg.ndim == 3 and h_neg.shape[0] == b and h_neg.shape[2] == n)
                or (h_neg.ndim == 2 and h_neg.shape[1] == n)
            )
            if not ok or h_neg.shape[-2] < 1:
                raise ConfigError(
                    f"{owner}: 'h_neg' must have shape ({b}, M, {n}) or (M, {n}) with M >= 1, got "
                    f"{tuple(getattr(h_neg, 'shape', ()))}."
                )

    def _fused_kernel(self, tau: float | None = None):
        """The similarity kernel of the fused path (see :mod:`unmix.objectives._chunked`), at
        temperature ``tau`` (default: the loss's own)."""
        raise NotImplementedError

    def _one_direction_fused(
        self, a: torch.Tensor, b: torch.Tensor, neg: torch.Tensor | None
    ) -> torch.Tensor:
        # Per anchor: a chunked logsumexp over every candidate (never a B × B tensor, in forward
        # or backward); the positive's (and self pair's) logits are computed exactly here and
        # enter as extra per-anchor logits.
        pos = self.pair_logits(a, b)
        extras = [self._positive_candidate(pos)]
        in_batch = self.negatives != "external"  # in_batch, or shared (in-batch plus h_neg)
        if in_batch and self.include_self:
            extras.append(self.pair_logits(a, a))
        lse = _chunked.chunked_lse(
            self._fused_kernel(),
            a,
            b,
            neg if self.negatives != "in_batch" and len(neg) else None,
            torch.stack(extras, dim=1),
            cross=in_batch and self.cross_view_negatives,
            same=in_batch and self.same_view_negatives,
            rows=getattr(self, "chunk_size", None),
            floor=_LSE_FLOOR,
        )
        return self._aggregate(lse, pos)

    def _positive_candidate(self, pos: torch.Tensor) -> torch.Tensor:
        """The positive's logit as a candidate of ``lse_i``: itself, or ``-inf`` (no term) for
        the ``decoupled`` estimator, whose denominator holds the negatives only."""
        return torch.full_like(pos, float("-inf")) if self.estimator == "decoupled" else pos

    def _aggregate(self, lse: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        r"""The loss from each anchor's ``lse_i`` (over its candidates) and positive logit ``s_ii``.

        ``infonce``: :math:`\frac1B\sum_i (\mathrm{lse}_i - s_{ii})`; ``dv``:
        :math:`\log\frac1B\sum_i e^{\mathrm{lse}_i} - \frac1B\sum_i s_{ii}` (one
        log-mean-exp over every candidate pair of the batch)."""
        w = self.align_weight
        if self.estimator == "dv":
            return torch.logsumexp(lse, dim=0) - math.log(lse.shape[0]) - w * pos.mean()
        return (lse - w * pos).mean()  # w = 1.0 multiplies exactly: InfoNCE's value

    def _negatives_lse(
        self, a: torch.Tensor, b: torch.Tensor, neg: torch.Tensor | None, scale: float
    ) -> torch.Tensor:
        """Per anchor, ``log Σ_j exp(scale · s_j)`` over its negatives only (the positive left
        out; the self pair counted where ``include_self`` makes it a candidate); ``(B,)``."""
        in_batch = self.negatives != "external"
        if self.fused:
            if in_batch and self.include_self:
                extras = scale * self.pair_logits(a, a)
            else:
                extras = torch.full_like(a[:, 0], float("-inf"))
            return _chunked.chunked_lse(
                self._fused_kernel(self.tau / scale),
                a,
                b,
                neg if self.negatives != "in_batch" and len(neg) else None,
                extras.unsqueeze(1),
                cross=in_batch and self.cross_view_negatives,
                same=in_batch and self.same_view_negatives,
                rows=getattr(self, "chunk_size", None),
                floor=_LSE_FLOOR,
            )
        blocks = []
        if not in_batch:
            assert neg is not None
            blocks.append(
                self.cross_logits(a, neg) if neg.ndim == 2 else self.negative_logits(a, neg)
            )
        else:
            minus_inf = torch.full_like(a[:, 0], float("-inf"))
            if self.cross_view_negatives:
                blocks.append(self.cross_logits(a, b).diagonal_scatter(minus_inf))
            if self.same_view_negatives:
                diag = self.pair_logits(a, a) if self.include_self else minus_inf
                blocks.append(self.cross_logits(a, a).diagonal_scatter(diag))
            if self.negatives == "shared" and len(neg):
                blocks.append(self.cross_logits(a, neg))
        return _logsumexp(scale * torch.cat(blocks, dim=1), dim=1)

    def _one_direction_hard(
        self, a: torch.Tensor, b: torch.Tensor, neg: torch.Tensor | None
    ) -> torch.Tensor:
        # Σ_j w_j e^{s_j} with w_j = M softmax(β s)_j held constant: its log is
        # log M + lse((1+β)s) − lse(βs), and its gradient that of lse((1+β)s) / (1+β).
        beta = self.hardness
        k = 1.0 + beta
        m = neg.shape[-2] if neg is not None else None
        n_neg = self.n_candidates(a.shape[0], m) - int(self.estimator != "decoupled")
        pos = self.pair_logits(a, b)
        hard = self._negatives_lse(a, b, neg, k)
        with torch.no_grad():
            base = self._negatives_lse(
                a.detach(), b.detach(), None if neg is None else neg.detach(), beta
            )
        neg_term = math.log(n_neg) + hard / k + (hard.detach() * (beta / k) - base)
        lse = torch.logaddexp(self._positive_candidate(pos), neg_term)
        return self._aggregate(lse, pos)

    def _one_direction(
        self, a: torch.Tensor, b: torch.Tensor, neg: torch.Tensor | None
    ) -> torch.Tensor:
        if self.hardness:
            return self._one_direction_hard(a, b, neg)
        if self.fused:
            return self._one_direction_fused(a, b, neg)
        # Per anchor: logsumexp over all candidates minus the positive's logit. Blocks are reduced
        # separately and combined with logaddexp, so no (B, #candidates) tensor is concatenated.
        pos = self.pair_logits(a, b)
        if self.negatives == "external":
            assert neg is not None
            negs = self.cross_logits(a, neg) if neg.ndim == 2 else self.negative_logits(a, neg)
            lse = torch.logaddexp(self._positive_candidate(pos), _logsumexp(negs, dim=1))
        else:
            if self.cross_view_negatives:
                # Row i: s(a_i, b_j) for all j; its diagonal is the positive, set from the exact
                # pairwise value (the matrix may come from a Gram expansion).
                cand = self.cross_logits(a, b).diagonal_scatter(self._positive_candidate(pos))
                lse = _logsumexp(cand, dim=1)
            else:
                lse = self._positive_candidate(pos)
            if self.same_view_negatives:
                if self.include_self:
                    diag = self.pair_logits(a, a)
                else:
                    diag = torch.full_like(pos, float("-inf"))
                same = self.cross_logits(a, a).diagonal_scatter(diag)
                lse = torch.logaddexp(lse, _logsumexp(same, dim=1))
            if self.negatives == "shared" and len(neg):
                lse = torch.logaddexp(lse, _logsumexp(self.cross_logits(a, neg), dim=1))
        return self._aggregate(lse, pos)

    def forward(
        self, h: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The loss (0-dim tensor) for anchors ``h`` ``(B, n)``, positives ``h_pos`` ``(B, n)`` and,
        with ``negatives='external'``, negatives ``h_neg`` ``(B, M, n)`` or ``(M, n)``."""
        self._check_inputs(h, h_pos, h_neg)
        loss = self._one_direction(h, h_pos, h_neg)
        if self.symmetric:
            loss = 0.5 * (loss + self._one_direction(h_pos, h, h_neg))
        return loss

    def extra_repr(self) -> str:
        s = f"tau={self.tau}, negatives={self.negatives!r}"
        if self.negatives != "external":
            s += (
                f", cross_view_negatives={self.cross_view_negatives}"
                f", same_view_negatives={self.same_view_negatives}"
                f", include_self={self.include_self}"
            )
        s += f", symmetric={self.symmetric}"
        if self.hardness:
            s += f", hardness={self.hardness:g}"
        if self.align_weight != 1.0:
            s += f", align_weight={self.align_weight:g}"
        return s + (f", estimator={self.estimator!r}" if self.estimator != "infonce" else "")


class InfoNCE(_ContrastiveLoss):
    r"""InfoNCE with dot-product similarity :math:`s(a, b) = a^\top b/\tau` (Zimmermann, Eq. 1).

    .. math::

        \mathcal{L}_{\text{contr}}(f; \tau, M) = \mathbb{E}\Bigl[-\log
            \frac{e^{f(x)^\top f(\tilde x)/\tau}}
                 {e^{f(x)^\top f(\tilde x)/\tau} + \sum_{i=1}^{M} e^{f(x)^\top f(x^-_i)/\tau}}\Bigr]

    Theorems 1–2 of the paper take features on a sphere (of radius :math:`\sqrt{\tau\kappa}` for a
    vMF conditional with concentration :math:`\kappa`); the loss itself does not require unit norm.

    Args:
        tau: temperature :math:`\tau > 0` (the paper uses 1).
        negatives: ``"in_batch"`` or ``"external"``; see the module docstring.
        cross_view_negatives: in-batch: the other positives ``h_pos[j]``, ``j != i`` (default on).
        same_view_negatives: in-batch: the other anchors ``h[j]``, ``j != i`` (SimCLR).
        include_self: in-batch: also ``s(h_i, h_i)`` (the reference code's quirk; off).
        symmetric: average with the loss of the swapped views.
        fused: compute the loss with the chunked, fused logsumexp of
            :mod:`unmix.objectives._chunked` (default; autograd stores ``O(B·n)``, never a
            ``B × B`` tensor); ``False`` materialises the logits (the earlier path, for comparison).

    ``forward(h, h_pos, h_neg=None)`` returns the mean loss over the batch.
    """

    def pair_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sum(dim=-1) / self.tau

    def cross_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b.T / self.tau

    def negative_logits(self, a: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bn,bmn->bm", a, neg) / self.tau

    def _fused_kernel(self, tau: float | None = None):
        return _chunked.DotKernel(self.tau if tau is None else tau)


class LpInfoNCE(_ContrastiveLoss):
    r"""InfoNCE with distance similarity :math:`s(a,b) = -\|a-b\|_p^q/\tau` (Zimmermann, Eq. 6).

    .. math::

        \mathcal{L}_{\delta\text{-contr}}(f; \tau, M) = \mathbb{E}\Bigl[-\log
            \frac{e^{-\delta(f(x), f(\tilde x))/\tau}}
                 {e^{-\delta(f(x), f(\tilde x))/\tau} + \sum_{i=1}^{M}
                  e^{-\delta(f(x), f(x^-_i))/\tau}}\Bigr],
        \qquad \delta(a, b) = \Bigl(\sum_k |a_k - b_k|^p\Bigr)^{q/p}.

    Matching the model to a ground-truth conditional :math:`p(\tilde z|z) \propto
    e^{-\lambda\,\delta(\tilde z, z)}` (Theorem 4 of the paper): ``p=1`` Laplace, ``p=q=2`` normal,
    ``p=β`` generalised normal. The absolute value is always taken (correct for odd ``p``).

    Memory: pairwise distances never form the ``B × B × n`` difference tensor at once.
    ``p = q = 2`` uses the Gram expansion :math:`\|a\|^2 + \|b\|^2 - 2a^\top b` (a ``B × B``
    matmul); any other ``(p, q)`` goes through a custom autograd function that computes the
    power sums in blocks of ``chunk_size`` rows (default: as many rows as keep a block under
    :data:`DEFAULT_BLOCK_ELEMENTS` elements) and the gradient in the same blocks with the closed
    form :math:`p\,\mathrm{sign}(d)|d|^{p-1}`, so only the ``B × B`` result is stored. The positive pairs' (and, with
    ``include_self``, the self pairs') distances are always computed exactly from their differences.

    Args:
        p: exponent inside the norm, ``p > 0``.
        q: outer exponent, ``q > 0``; ``None`` means ``q = p`` (the reference's
            :math:`\|\cdot\|_p^p`).
        tau: temperature :math:`\tau > 0` (the paper uses 1).
        negatives, cross_view_negatives, same_view_negatives, include_self, symmetric: as in
            :class:`InfoNCE` (see the module docstring).
        chunk_size: rows per block for the general-``p`` path (and, with ``fused``, of every
            path); ``None`` = automatic.
        fused: as in :class:`InfoNCE`: by default the loss is a chunked logsumexp whose backward
            recomputes each block of logits, so neither the ``B × B`` logits nor any ``B × B × n``
            block is stored; ``False`` uses the path described above.
    """

    def __init__(
        self,
        p: float = 2.0,
        q: float | None = None,
        tau: float = 1.0,
        negatives: NegativesMode = "in_batch",
        *,
        cross_view_negatives: bool = True,
        same_view_negatives: bool = False,
        include_self: bool = False,
        symmetric: bool = False,
        chunk_size: int | None = None,
        fused: bool = True,
        estimator: EstimatorMode = "infonce",
        align_weight: float = 1.0,
        hardness: float = 0.0,
    ) -> None:
        super().__init__(
            tau,
            negatives,
            cross_view_negatives=cross_view_negatives,
            same_view_negatives=same_view_negatives,
            include_self=include_self,
            symmetric=symmetric,
            fused=fused,
            estimator=estimator,
            align_weight=align_weight,
            hardness=hardness,
        )
        for name, v in (("p", p), ("q", q)):
            if v is not None:
                _check_positive_real(
                    f"'{name}' of LpInfoNCE", v, "e.g. p=1 (Laplace), p=2 (normal)."
                )
        if chunk_size is not None and (
            isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
        ):
            raise ConfigError(
                f"'chunk_size' of LpInfoNCE must be a positive integer or None, got {chunk_size!r}."
            )
        self.p = float(p)
        self.q = float(p if q is None else q)
        self.chunk_size = chunk_size

    def extra_repr(self) -> str:
        return f"p={self.p}, q={self.q}, " + super().extra_repr()

    def _finish(self, power_sum: torch.Tensor) -> torch.Tensor:
        """``-(power_sum)^(q/p) / tau``; exact zeros made safe for gradients when ``q < p``."""
        if self.q == self.p:
            delta = power_sum
        else:
            if self.q < self.p:  # x^(q/p) has an infinite slope at 0: keep x away from exact 0.
                power_sum = power_sum.clamp_min(torch.finfo(power_sum.dtype).tiny)
            delta = power_sum.pow(self.q / self.p)
        return delta * (-1.0 / self.tau)

    def _abs_pow(self, d: torch.Tensor) -> torch.Tensor:
        if self.p == 2.0:
            return d * d
        d = d.abs()
        if self.p == 1.0:
            return d
        if self.p < 1:  # |d|^p has an infinite slope at 0 for p < 1.
            d = d.clamp_min(torch.finfo(d.dtype).tiny)
        return d.pow(self.p)

    def _power_sum_block(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``sum_k |x_ik - y_jk|^p`` for rows ``x`` (r, n) against ``y`` (N, n); shape (r, N)."""
        return self._abs_pow(x.unsqueeze(1) - y.unsqueeze(0)).sum(dim=-1)

    def pair_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self._finish(self._abs_pow(a - b).sum(dim=-1))

    def negative_logits(self, a: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        # (B, M, n): the same size as the given negatives, so no chunking is needed.
        return self._finish(self._abs_pow(a.unsqueeze(1) - neg).sum(dim=-1))

    def cross_logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.p == 2.0 and self.q == 2.0:
            # ‖a_i‖² + ‖b_j‖² − 2 a_iᵀb_j, one matmul; rounding can make it slightly negative.
            b_sq = b.pow(2).sum(dim=-1).unsqueeze(0)
            sq = torch.addmm(b_sq, a, b.T, alpha=-2.0) + a.pow(2).sum(dim=-1, keepdim=True)
            sq = sq.clamp_min(0.0)
            return sq * (-1.0 / self.tau)
        return self._finish(self._pairwise_power_sum(a, b))

    def _fused_kernel(self, tau: float | None = None):
        tau = self.tau if tau is None else tau
        if self.p == 2.0 and self.q == 2.0:
            return _chunked.SqL2Kernel(tau)
        return _chunked.PowerKernel(self.p, self.q, tau)

    def _pairwise_power_sum(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.p == 1.0:
            # torch.cdist's L1 kernel fuses difference, abs and sum in forward and backward (no
            # B × B × n buffer) and is many times faster than the blockwise path on CPU.
            return torch.cdist(a, b, p=1.0)
        n_b, n = b.shape
        rows = self.chunk_size or max(1, DEFAULT_BLOCK_ELEMENTS // max(1, n_b * n))
        return _PairwisePowerSum.apply(a, b, self.p, rows)


def _abs_pow_and_slope(d: torch.Tensor, p: float, need_slope: bool):
    """``|d|^p`` and, if asked, its derivative ``p·sign(d)·|d|^(p-1)`` (0 at d = 0 for p ≥ 1)."""
    if p == 1.0:
        return d.abs(), (torch.sign(d) if need_slope else None)
    if p == 2.0:
        return d * d, (2.0 * d if need_slope else None)
    ad = d.abs()
    if p == 3.0:
        return d * d * ad, (3.0 * d * ad if need_slope else None)
    if p < 1:  # |d|^p has an infinite slope at 0 for p < 1: keep d away from exact 0.
        ad = ad.clamp_min(torch.finfo(d.dtype).tiny)
    val = ad.pow(p)
    if not need_slope:
        return val, None
    return val, p * torch.sign(d) * ad.pow(p - 1)


class _PairwisePowerSum(torch.autograd.Function):
    r"""``S_ij = Σ_k |a_ik − b_jk|^p`` for ``a`` (N_a, n), ``b`` (N_b, n), in row blocks.

    Forward and backward each walk over blocks of ``rows`` anchors, so memory stays at one
    ``(rows, N_b, n)`` block while the autograd graph holds only ``a``, ``b`` — never the
    ``N_a × N_b × n`` difference tensor. The backward uses
    :math:`\partial S_{ij}/\partial a_{ik} = p\,\mathrm{sign}(d_{ijk})|d_{ijk}|^{p-1}` with
    :math:`d = a_i - b_j`, and the negative for ``b``.
    """

    @staticmethod
    def forward(ctx, a, b, p, rows):  # type: ignore[override]
        ctx.save_for_backward(a, b)
        ctx.p, ctx.rows = p, rows
        out = a.new_empty(a.shape[0], b.shape[0])
        for start in range(0, a.shape[0], rows):
            d = a[start : start + rows].unsqueeze(1) - b.unsqueeze(0)
            out[start : start + rows] = _abs_pow_and_slope(d, p, False)[0].sum(dim=-1)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        a, b = ctx.saved_tensors
        grad_a = torch.empty_like(a) if ctx.needs_input_grad[0] else None
        grad_b = torch.zeros_like(b) if ctx.needs_input_grad[1] else None
        for start in range(0, a.shape[0], ctx.rows):
            d = a[start : start + ctx.rows].unsqueeze(1) - b.unsqueeze(0)
            slope = _abs_pow_and_slope(d, ctx.p, True)[1]
            weighted = slope * grad[start : start + ctx.rows].unsqueeze(-1)
            if grad_a is not None:
                grad_a[start : start + ctx.rows] = weighted.sum(dim=1)
            if grad_b is not None:
                grad_b -= weighted.sum(dim=0)
        return grad_a, grad_b, None, None


# ----------------------------------------------------------------------------- registered kinds
PositiveFloat = Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)]


class _ContrastiveSpec(SpecBase):
    """Fields of both contrastive kinds: temperature τ, where the negatives come from
    (``in_batch``; ``external`` with ``n_negatives`` drawn from p(z) per anchor; ``shared``: the
    in-batch ones plus ``n_negatives`` drawn once per step for every anchor; ``queue``: the
    in-batch ones plus the features of the last ``n_negatives`` images of earlier steps), and the
    symmetric loss."""

    tau: PositiveFloat = 1.0
    negatives: SpecNegativesMode = "in_batch"
    n_negatives: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    symmetric: bool = False
    detach_negatives: bool = False
    same_view_negatives: bool = False
    cross_view_negatives: bool = True
    include_self: bool = False
    estimator: EstimatorMode = "infonce"
    align_start: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    align_warmup: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    tau_start: PositiveFloat | None = None
    tau_warmup: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    queue_warmup: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    hardness: Annotated[float, Field(ge=0, le=1e3, allow_inf_nan=False)] = 0.0

    @model_validator(mode="after")
    def _check_negatives(self):
        if self.negatives in ("external", "shared", "queue") and self.n_negatives < 1:
            what = "the queue's length" if self.negatives == "queue" else "the negatives drawn"
            raise ValueError(f"negatives: {self.negatives} needs n_negatives >= 1 ({what})")
        if self.queue_warmup and self.negatives != "queue":
            raise ValueError(
                "queue_warmup is the fraction of the run before a negatives queue joins the "
                "loss: set negatives: queue (with n_negatives), or remove it"
            )
        if self.detach_negatives and self.negatives not in ("external", "shared"):
            raise ValueError(
                "detach_negatives applies to drawn negatives: set negatives: shared or "
                "external (with n_negatives), or remove it"
            )
        if self.negatives == "in_batch" and self.n_negatives:
            raise ValueError(
                "n_negatives applies to negatives: external, shared or queue; remove it (or set "
                "one)"
            )
        problem = candidate_set_problem(
            self.negatives, self.cross_view_negatives, self.same_view_negatives, self.include_self
        )
        if problem:
            raise ValueError(problem)
        if self.align_start != 1 and not self.align_warmup:
            raise ValueError(
                "align_start is the positive term's weight at the start of the alignment "
                "warm-up: set align_warmup too (the fraction of the run over which it rises to "
                "1, e.g. 0.5) or remove align_start"
            )
        if (self.tau_start is None) != (not self.tau_warmup):
            raise ValueError(
                "tau_start and tau_warmup go together (the temperature at the first step, and "
                "the fraction of the run over which it moves to tau, e.g. tau_start: 1.0, "
                "tau_warmup: 0.5): set both or neither"
            )
        return self


class InfoNCESpec(_ContrastiveSpec):
    """``infonce``: dot-product InfoNCE / τ on the sphere (q_h = vMF(κ = 1/τ))."""

    kind: Literal["infonce"] = "infonce"

    def label(self) -> str:
        return f"vMF(κ={1 / self.tau:g})"


class LpInfoNCESpec(_ContrastiveSpec):
    """``lp_infonce``: δ = ‖a − b‖_p^q (q defaults to p): p = 1 Laplace, p = 2 Normal, p = β
    GenNorm."""

    kind: Literal["lp_infonce"] = "lp_infonce"
    p: PositiveFloat
    q: PositiveFloat | None = None

    def label(self) -> str:
        return {1.0: "Laplace", 2.0: "Normal"}.get(float(self.p), f"GenNorm(β={self.p:g})")


def _objective(
    cls: type[_ContrastiveLoss],
    n_negatives: int,
    detach_negatives: bool = False,
    align_start: float = 1.0,
    align_warmup: float = 0.0,
    tau_start: float | None = None,
    tau_warmup: float = 0.0,
    queue_warmup: float = 0.0,
    **loss_kwargs,
):
    """The registered objective around ``cls(**loss_kwargs)``: it draws ``n_negatives`` per step
    unless the negatives are the batch's own (``negatives='queue'``: it queues that many earlier
    features, passed to the loss as its ``shared`` negatives, after the first ``queue_warmup`` of
    the run), and warms the positive term up from ``align_start`` over the first
    ``align_warmup`` of the run, and the temperature from ``tau_start`` over the first
    ``tau_warmup`` (module docstring)."""
    from unmix.objectives.base import Contrastive

    if align_warmup > 0 and not 0 < align_start <= 1:
        raise ConfigError(f"'align_start' must be in (0, 1], got {align_start!r}.")
    if tau_warmup > 0:
        _check_tau(tau_start)
    queue = n_negatives if loss_kwargs.get("negatives") == "queue" else 0
    if queue:
        loss_kwargs["negatives"] = "shared"
    loss = cls(**loss_kwargs, align_weight=align_start if align_warmup > 0 else 1.0)
    return Contrastive(
        loss,
        n_negatives if loss.negatives != "in_batch" and not queue else 0,
        queue=queue,
        queue_warmup=queue_warmup,
        detach_negatives=detach_negatives,
        align_start=align_start,
        align_warmup=align_warmup,
        tau_start=tau_start if tau_warmup > 0 else None,
        tau_warmup=tau_warmup,
    )


@register_objective("infonce", spec=InfoNCESpec)
def infonce(
    *,
    tau: float = 1.0,
    negatives: SpecNegativesMode = "in_batch",
    n_negatives: int = 0,
    symmetric: bool = False,
    detach_negatives: bool = False,
    same_view_negatives: bool = False,
    cross_view_negatives: bool = True,
    include_self: bool = False,
    estimator: EstimatorMode = "infonce",
    align_start: float = 1.0,
    align_warmup: float = 0.0,
    tau_start: float | None = None,
    tau_warmup: float = 0.0,
    queue_warmup: float = 0.0,
    hardness: float = 0.0,
):
    """Zimmermann et al., eq. (1), as an objective on ``(model, batch)``."""
    return _objective(
        InfoNCE,
        n_negatives,
        detach_negatives,
        tau=tau,
        negatives=negatives,
        symmetric=symmetric,
        same_view_negatives=same_view_negatives,
        cross_view_negatives=cross_view_negatives,
        include_self=include_self,
        estimator=estimator,
        align_start=align_start,
        align_warmup=align_warmup,
        tau_start=tau_start,
        tau_warmup=tau_warmup,
        queue_warmup=queue_warmup,
        hardness=hardness,
    )


@register_objective("lp_infonce", spec=LpInfoNCESpec)
def lp_infonce(
    *,
    p: float,
    q: float | None = None,
    tau: float = 1.0,
    negatives: SpecNegativesMode = "in_batch",
    n_negatives: int = 0,
    symmetric: bool = False,
    detach_negatives: bool = False,
    same_view_negatives: bool = False,
    cross_view_negatives: bool = True,
    include_self: bool = False,
    estimator: EstimatorMode = "infonce",
    align_start: float = 1.0,
    align_warmup: float = 0.0,
    tau_start: float | None = None,
    tau_warmup: float = 0.0,
    queue_warmup: float = 0.0,
    hardness: float = 0.0,
):
    """Zimmermann et al., eq. (6), as an objective on ``(model, batch)``."""
    return _objective(
        LpInfoNCE,
        n_negatives,
        detach_negatives,
        p=p,
        q=q,
        tau=tau,
        negatives=negatives,
        symmetric=symmetric,
        same_view_negatives=same_view_negatives,
        cross_view_negatives=cross_view_negatives,
        include_self=include_self,
        estimator=estimator,
        align_start=align_start,
        align_warmup=align_warmup,
        tau_start=tau_start,
        tau_warmup=tau_warmup,
        queue_warmup=queue_warmup,
        hardness=hardness,
    )
