r"""Alignment and uniformity of features on the hypersphere (Wang & Isola, 2020; paper notes 003).

Two families, all differentiable torch functions of features ``x`` of shape ``(N, n)``:

**Wang & Isola's standalone losses** (their Sec. 4; defined for L2-normalised features):

.. math::

    \mathcal{L}_{\text{align}}(\alpha) = \mathbb{E}_{(x,y)\sim p_{\text{pos}}}\|x - y\|_2^{\alpha},
    \qquad
    \mathcal{L}_{\text{uniform}}(t) = \log \mathbb{E}_{x, y\ \text{i.i.d.}}
        \bigl[e^{-t\|x - y\|_2^2}\bigr] \le 0.

:func:`uniform_loss` averages over the :math:`N(N-1)/2` *distinct* pairs ``i < j`` of the batch (the
``torch.pdist`` pairs; a pair of a point with itself is excluded). Defaults :math:`\alpha = t = 2`.

**The two terms of Theorem 1** (Wang & Isola, Thm. 1; Zimmermann et al., Eq. 12–13): for ``M``
negatives the InfoNCE loss satisfies :math:`\lim_{M\to\infty} \mathcal{L}_{\text{contr}} - \log M =`
:func:`alignment_term` :math:`+` :func:`uniformity_term`, with

.. math::

    -\tfrac{1}{\tau}\,\mathbb{E}[x^\top y]
    \quad\text{and}\quad
    \mathbb{E}_{x}\log\mathbb{E}_{x^-}\bigl[e^{x^{-\top} x/\tau}\bigr].

These two hold for any bounded features (the limit argument needs only boundedness), so they do not
check normalisation unless asked.
"""

from __future__ import annotations

import math
import numbers

import torch

from unmix.errors import ConfigError

__all__ = [
    "align_loss",
    "uniform_loss",
    "alignment_term",
    "uniformity_term",
    "require_normalized",
]

NORM_TOLERANCE = 1e-4


def _check_features(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise ConfigError(
            f"'{name}' must be a torch tensor of shape (N, n), got {type(x).__name__}."
        )
    if x.ndim != 2:
        raise ConfigError(
            f"'{name}' must have shape (N, n) (samples × feature dims), got {tuple(x.shape)}."
        )
    if not x.is_floating_point():
        raise ConfigError(f"'{name}' must be a floating tensor, got dtype {x.dtype}.")


def require_normalized(name: str, x: torch.Tensor, tol: float = NORM_TOLERANCE) -> None:
    """Raise :class:`ConfigError` unless every row of ``x`` has L2 norm 1 within ``tol``."""
    with torch.no_grad():
        dev = (torch.linalg.vector_norm(x, dim=-1) - 1.0).abs()
        worst = float(dev.max()) if dev.numel() else 0.0
    if not worst <= tol:  # also catches NaN
        raise ConfigError(
            f"'{name}' must be L2-normalised (each row of norm 1 within {tol:g}); the largest "
            f"deviation |‖x‖ − 1| is {worst:.3g}. Normalise with x / x.norm(dim=-1, keepdim=True), "
            f"or pass check_normalized=False to evaluate the formula on unnormalised features."
        )


def align_loss(
    x: torch.Tensor,
    y: torch.Tensor,
    alpha: float = 2.0,
    *,
    check_normalized: bool = True,
    p: float = 2.0,
) -> torch.Tensor:
    r"""Wang & Isola's alignment loss :math:`\mathbb{E}\|x_i - y_i\|_2^{\alpha}` (0-dim tensor).

    Args:
        x, y: positive pairs, row ``i`` of ``x`` paired with row ``i`` of ``y``; shape ``(N, n)``.
        alpha: exponent :math:`\alpha > 0` (paper default 2).
        check_normalized: raise :class:`ConfigError` unless rows have unit L2 norm (tol 1e-4).
        p: the norm, :math:`\mathbb{E}\|x_i - y_i\|_p^{\alpha}` (default 2, Wang & Isola's; with
            :math:`\alpha = p` the alignment term of Zimmermann et al.'s Lp loss).
    """
    _check_features("x", x)
    _check_features("y", y)
    if x.shape != y.shape:
        raise ConfigError(
            f"'x' and 'y' must have the same shape (row i of x is paired with row i of y), got "
            f"{tuple(x.shape)} and {tuple(y.shape)}."
        )
    if not alpha > 0:
        raise ConfigError(f"'alpha' must be positive, got {alpha}; the paper uses alpha=2.")
    if not (math.isfinite(p) and p >= 1):
        raise ConfigError(
            f"'p' (the norm) must be a finite number >= 1, got {p}; 2 is Wang & Isola's."
        )
    if check_normalized:
        _check_norm_pair(x, y)
    if alpha == p:
        d = (x - y).abs()
        return (d * d if p == 2 else d.pow(p)).sum(dim=-1).mean()
    dist = torch.linalg.vector_norm(x - y, ord=p, dim=-1)
    if alpha < 1:  # d^alpha has an infinite slope at 0: keep exact ties at a finite gradient (0).
        dist = dist.clamp_min(torch.finfo(dist.dtype).tiny)
    return dist.pow(alpha).mean()


def _check_norm_pair(x: torch.Tensor, y: torch.Tensor) -> None:
    require_normalized("x", x)
    require_normalized("y", y)


def uniform_loss(
    x: torch.Tensor, t: float = 2.0, *, check_normalized: bool = True, p: float = 2.0
) -> torch.Tensor:
    r"""Wang & Isola's uniformity loss :math:`\log\frac{2}{N(N-1)}\sum_{i<j}e^{-t\|x_i-x_j\|^2}`.

    The average runs over distinct pairs only (``torch.pdist``), computed as a ``logsumexp`` for
    stability. Always :math:`\le 0`; equal to 0 iff all features coincide.

    Args:
        x: features, shape ``(N, n)`` with ``N >= 2``.
        t: temperature :math:`t > 0` of the Gaussian potential (paper default 2).
        check_normalized: raise :class:`ConfigError` unless rows have unit L2 norm (tol 1e-4).
        p: the potential :math:`e^{-t\|x_i - x_j\|_p^p}` (default 2: the Gaussian one; 1 the
            Laplace one, the uniformity term of Zimmermann et al.'s Lp loss).
    """
    _check_features("x", x)
    if x.shape[0] < 2:
        raise ConfigError(f"uniform_loss needs at least 2 samples (pairs), got N = {x.shape[0]}.")
    if not t > 0:
        raise ConfigError(f"'t' must be positive, got {t}; the paper uses t=2.")
    if not (math.isfinite(p) and p >= 1):
        raise ConfigError(
            f"'p' (the norm) must be a finite number >= 1, got {p}; 2 is Wang & Isola's."
        )
    if check_normalized:
        require_normalized("x", x)
    sq = torch.pdist(x, p=p).pow(p)
    return torch.logsumexp(-t * sq, dim=0) - math.log(sq.numel())


def alignment_term(
    x: torch.Tensor, y: torch.Tensor, tau: float = 1.0, *, check_normalized: bool = False
) -> torch.Tensor:
    r"""First term of Theorem 1: :math:`-\frac{1}{\tau}\,\mathbb{E}[x_i^\top y_i]` (0-dim tensor).

    Args:
        x, y: positive pairs (anchor, positive), shape ``(N, n)``.
        tau: temperature :math:`\tau > 0`.
        check_normalized: optionally require unit-norm rows (Theorem 1 is stated on the sphere).
    """
    _check_features("x", x)
    _check_features("y", y)
    if x.shape != y.shape:
        raise ConfigError(
            f"'x' and 'y' must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}."
        )
    _check_tau(tau)
    if check_normalized:
        _check_norm_pair(x, y)
    return -(x * y).sum(dim=-1).mean() / tau


def uniformity_term(
    x: torch.Tensor,
    tau: float = 1.0,
    negatives: torch.Tensor | None = None,
    *,
    check_normalized: bool = False,
) -> torch.Tensor:
    r"""Second term of Theorem 1: :math:`\mathbb{E}_x \log \mathbb{E}_{x^-}[e^{x^{-\top}x/\tau}]`.

    The inner expectation is the mean over the negatives of each anchor ``x_i`` (a ``logsumexp``
    minus :math:`\log M`):

    * ``negatives=None``: the other samples of the batch, :math:`x^- \in \{x_j : j \ne i\}`
      (self excluded, :math:`M = N - 1`);
    * ``negatives`` of shape ``(M, n)``: the same ``M`` negatives for every anchor;
    * ``negatives`` of shape ``(N, M, n)``: anchor ``i`` uses ``negatives[i]``.

    Args:
        x: anchors, shape ``(N, n)``.
        tau: temperature :math:`\tau > 0`.
        negatives: see above.
        check_normalized: optionally require unit-norm rows of ``x`` and ``negatives``.
    """
    _check_features("x", x)
    _check_tau(tau)
    n_samples, dim = x.shape
    if check_normalized:
        require_normalized("x", x)
    if negatives is None:
        if n_samples < 2:
            raise ConfigError(
                f"uniformity_term with in-batch negatives needs N >= 2 samples, got {n_samples}."
            )
        logits = x @ x.T / tau
        eye = torch.eye(n_samples, dtype=torch.bool, device=x.device)
        logits = logits.masked_fill(eye, float("-inf"))
        m = n_samples - 1
    else:
        if not isinstance(negatives, torch.Tensor) or negatives.shape[-1] != dim:
            raise ConfigError(
                f"'negatives' must be a tensor of shape (M, {dim}) or ({n_samples}, M, {dim}), got "
                f"{tuple(getattr(negatives, 'shape', ()))}."
            )
        if check_normalized:
            require_normalized("negatives", negatives.reshape(-1, dim))
        if negatives.ndim == 2:
            logits = x @ negatives.T / tau
        elif negatives.ndim == 3 and negatives.shape[0] == n_samples:
            logits = torch.einsum("in,imn->im", x, negatives) / tau
        else:
            raise ConfigError(
                f"'negatives' must have shape (M, {dim}) or ({n_samples}, M, {dim}), got "
                f"{tuple(negatives.shape)}."
            )
        m = logits.shape[-1]
        if m < 1:
            raise ConfigError("'negatives' is empty; pass at least one negative (M >= 1).")
    return (torch.logsumexp(logits, dim=-1) - math.log(m)).mean()


def _check_tau(tau: float) -> None:
    if isinstance(tau, bool) or not (
        isinstance(tau, numbers.Real) and math.isfinite(tau) and tau > 0
    ):
        raise ConfigError(f"'tau' must be a positive finite number, got {tau!r}; e.g. tau=1.0.")
