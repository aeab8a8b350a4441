r"""Wang & Isola's alignment + uniformity objective on L2-normalised features (paper notes 003).

.. math::

    \mathcal{L} = w_a\,\mathcal{L}_{\text{align}}(h, \tilde h; \alpha)
        + w_u\,\tfrac12\bigl[\mathcal{L}_{\text{uniform}}(h; t)
                            + \mathcal{L}_{\text{uniform}}(\tilde h; t)\bigr],

with :math:`\mathcal{L}_{\text{align}} = \mathbb{E}\|h_i - \tilde h_i\|_2^{\alpha}` and
:math:`\mathcal{L}_{\text{uniform}}(x; t) = \log \mathbb{E}_{i<j} e^{-t\|x_i - x_j\|_2^2}`
(:func:`unmix.metrics.align_loss`, :func:`unmix.metrics.uniform_loss`). The uniformity loss of the
two views is *averaged*, as in Wang & Isola's training objective (each view's features should be
uniform on its own; pairs across views are not used). Defaults :math:`\alpha = t = 2`,
:math:`w_a = w_u = 1`.

``p`` replaces the Euclidean norm by :math:`\|\cdot\|_p` in both terms, the potential by
:math:`e^{-t\|x_i - x_j\|_p^p}` (default 2: Wang & Isola's). With :math:`\alpha = p`,
:math:`w_a = t = 1/\tau` and :math:`w_u = 1` its terms are those of Zimmermann et al.'s Lp-InfoNCE
(:math:`\delta = \|\cdot\|_p^p`, temperature τ) in the limit of many negatives, with the
uniformity term pooled over the pairs of each view (as the ``dv`` estimator pools, and as Wang &
Isola's form does) rather than taken per anchor. Other weights, or another ``t``, balance the two
terms differently: e.g. alignment at the conditional's matched weight and a broader potential.

Features of fixed scale — the unit sphere (their setting), a box of fixed size (a box head with
``learn_magnitude: false``) — keep both terms bounded. On features of free scale (an unbounded
model, a learned radius or magnitude) the alignment term is what holds the scale: scaling the
features by c multiplies the alignment term by :math:`c^\alpha` while the uniformity term falls
like :math:`-n \log c` in expectation, so the loss has a finite minimum over c. In a batch its
uniformity term falls like :math:`-t c^p \min_{i \ne j}\|h_i - h_j\|_p^p` instead, so the loss
stays bounded below while :math:`w_a\,\mathrm{mean}_i \|h_i - \tilde h_i\|_p^p` exceeds
:math:`t \min_{i \ne j}\|h_i - h_j\|_p^p` (with α = p): true by a wide margin at the
conditional's matched weight (docs/quick_budget_search.md, thirteenth search), not with Wang &
Isola's :math:`w_a = 1` and a narrow conditional. A setting refuses :math:`w_a = 0` on features of
free scale (:class:`unmix.settings.Setting`).

Example::

    >>> import torch
    >>> from unmix.objectives import AlignUniform
    >>> h = torch.nn.functional.normalize(torch.randn(256, 3), dim=1)
    >>> loss = AlignUniform()(h, h)          # perfectly aligned: the uniformity term alone
    >>> bool(loss <= 0)
    True
"""

from __future__ import annotations

import math
import numbers
from typing import Annotated

import torch
from pydantic import Field
from torch import nn

from unmix.errors import ConfigError
from unmix.metrics.align_uniform import align_loss, require_normalized, uniform_loss
from unmix.objectives._chunked import PowerKernel, SqL2Kernel, chunked_pair_lse
from unmix.registry import register_objective

__all__ = ["AlignUniform"]


def _positive(owner: str, name: str, value: float, *, allow_zero: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"'{name}' of {owner} must be a finite number {bound}, got {value!r}.")
    return float(value)


class AlignUniform(nn.Module):
    r"""Alignment + uniformity loss (Wang & Isola, 2020) for L2-normalised features.

    Args:
        align_weight: :math:`w_a \ge 0`.
        uniform_weight: :math:`w_u \ge 0` (not both zero).
        alpha: alignment exponent :math:`\alpha > 0` (paper default 2).
        t: uniformity temperature :math:`t > 0` (paper default 2).
        p: the norm of both terms, :math:`p \ge 1` (default 2).
        check_normalized: raise :class:`ConfigError` unless the features have unit L2 norm
            (tolerance 1e-4); the losses are only meaningful on the sphere. Costs one host sync.

    ``forward(h, h_pos)`` with ``h``, ``h_pos`` of shape ``(B, n)``, ``B >= 2``, returns the loss.
    """

    def __init__(
        self,
        align_weight: float = 1.0,
        uniform_weight: float = 1.0,
        alpha: float = 2.0,
        t: float = 2.0,
        *,
        p: float = 2.0,
        check_normalized: bool = True,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.align_weight = _positive(owner, "align_weight", align_weight, allow_zero=True)
        self.uniform_weight = _positive(owner, "uniform_weight", uniform_weight, allow_zero=True)
        if self.align_weight == 0 and self.uniform_weight == 0:
            raise ConfigError(
                f"{owner}: 'align_weight' and 'uniform_weight' are both 0; the loss would be "
                f"constant. Set at least one to a positive value."
            )
        self.alpha = _positive(owner, "alpha", alpha)
        self.t = _positive(owner, "t", t)
        self.p = _positive(owner, "p", p)
        if self.p < 1:
            raise ConfigError(f"'p' of {owner} must be >= 1 (a norm), got {p!r}.")
        self.check_normalized = bool(check_normalized)

    def forward(
        self, h: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Loss of anchors ``h`` and positives ``h_pos`` (0-dim tensor); ``h_neg`` is not used."""
        if h_neg is not None:
            raise ConfigError(
                "AlignUniform takes no separately drawn negatives ('h_neg'): its uniformity term "
                "uses the other samples of the batch. Call it as loss(h, h_pos)."
            )
        if self.check_normalized:
            for name, x in (("h", h), ("h_pos", h_pos)):
                if isinstance(x, torch.Tensor):
                    require_normalized(name, x)
        align = align_loss(h, h_pos, self.alpha, check_normalized=False, p=self.p)
        uniform = 0.5 * (self._uniform(h) + self._uniform(h_pos))
        return self.align_weight * align + self.uniform_weight * uniform

    def _uniform(self, x: torch.Tensor) -> torch.Tensor:
        """:func:`unmix.metrics.uniform_loss` of ``x`` as a chunked logsumexp over the pairs
        ``i ≠ j`` (:func:`unmix.objectives._chunked.chunked_pair_lse`): no ``N × N`` tensor in
        forward or backward, one pass over the blocks (the potential is symmetric, so the
        gradient's two sides are one), the ‖·‖₂² potential as a matmul and the other norms on
        the Lp losses' kernels. The mean over ordered pairs equals the mean over distinct pairs."""
        n = x.shape[0]
        if n < 2:
            return uniform_loss(x, self.t, check_normalized=False, p=self.p)  # its one-line error
        tau = 1.0 / self.t
        kernel = SqL2Kernel(tau) if self.p == 2 else PowerKernel(self.p, self.p, tau)
        return chunked_pair_lse(kernel, x) - math.log(n * (n - 1))

    def extra_repr(self) -> str:
        return (
            f"align_weight={self.align_weight}, uniform_weight={self.uniform_weight}, "
            f"alpha={self.alpha}, t={self.t}" + (f", p={self.p:g}" if self.p != 2 else "")
        )


@register_objective("align_uniform")
def align_uniform(
    *,
    align_weight: Annotated[float, Field(ge=0, le=1e6)] = 1.0,
    uniform_weight: Annotated[float, Field(ge=0, le=1e6)] = 1.0,
    alpha: Annotated[float, Field(gt=0, le=100)] = 2.0,
    t: Annotated[float, Field(gt=0, le=1e4)] = 2.0,
    p: Annotated[float, Field(ge=1, le=100)] = 2.0,
):
    """Wang & Isola's ``align_weight·L_align(α) + uniform_weight·L_uniform(t)`` with the norm ``p``,
    on any model space: the unit sphere (their setting), a box head of fixed magnitude
    (``model.learn_magnitude: false``), or features of free scale held by the alignment term (see
    the module docstring). The setting checks the model space once (:class:`unmix.settings.Setting`),
    so the per-step unit-norm check is off here."""
    from unmix.objectives.base import Contrastive

    return Contrastive(
        AlignUniform(
            align_weight=align_weight,
            uniform_weight=uniform_weight,
            alpha=alpha,
            t=t,
            p=p,
            check_normalized=False,
        )
    )
