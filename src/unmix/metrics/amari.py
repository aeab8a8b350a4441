r"""The Amari distance between two square (mixing) matrices.

Amari, Cichocki & Yang (1996): for an ``n × n`` matrix :math:`P` with entries :math:`p_{ij}`,

.. math::

    d(P) = \frac{1}{2n(n-1)}\Bigl[
        \sum_{i=1}^{n}\Bigl(\frac{\sum_j |p_{ij}|}{\max_j |p_{ij}|} - 1\Bigr)
        + \sum_{j=1}^{n}\Bigl(\frac{\sum_i |p_{ij}|}{\max_i |p_{ij}|} - 1\Bigr)\Bigr] \in [0, 1],

with :math:`d(P) = 0` iff :math:`P` is a scaled permutation (one nonzero entry per row and column),
and :math:`d(P) = 1` iff all entries have equal magnitude. Each bracketed row (column) term lies in
:math:`[0, n-1]`, which sets the normalisation. Absolute values are used (some authors square).

:func:`amari_distance` ``(A, B)`` applies it to :math:`P = A^{-1}B`: zero iff :math:`B = A\,\Pi D`
for a permutation :math:`\Pi` and an invertible diagonal :math:`D`, i.e. the two mixing matrices
agree up to the order, scale and sign of their columns (the linear-ICA indeterminacies).
"""

from __future__ import annotations

import numpy as np
import torch

from unmix.errors import ConfigError

__all__ = ["amari_distance", "amari_index"]


def _as_square(name: str, value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        arr = value.detach().to("cpu", torch.float64).numpy()
    else:
        arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ConfigError(
            f"'{name}' must be a square matrix of size n × n with n >= 2, got shape {arr.shape}."
        )
    if not np.isfinite(arr).all():
        raise ConfigError(f"'{name}' contains NaN or inf entries.")
    return arr


def amari_index(p) -> float:
    """The normalised Amari index :math:`d(P) \\in [0, 1]` of a square matrix ``p`` (see module)."""
    a = np.abs(_as_square("P", p))
    n = a.shape[0]
    row_max = a.max(axis=1)
    col_max = a.max(axis=0)
    if (row_max == 0).any() or (col_max == 0).any():
        raise ConfigError(
            "'P' has an all-zero row or column, so the Amari index is undefined; the matrices "
            "compared must be invertible."
        )
    rows = (a.sum(axis=1) / row_max - 1.0).sum()
    cols = (a.sum(axis=0) / col_max - 1.0).sum()
    return float((rows + cols) / (2.0 * n * (n - 1)))


def amari_distance(a, b) -> float:
    r"""Amari distance :math:`d(A^{-1}B)` between two invertible ``n × n`` mixing matrices.

    Args:
        a: reference matrix :math:`A` (e.g. the true mixing), tensor or array.
        b: compared matrix :math:`B` (e.g. the estimated mixing) of the same shape.

    Returns:
        A float in [0, 1]; 0 iff ``b`` equals ``a`` up to permuting, rescaling and sign-flipping
        its columns. For an *unmixing* estimate :math:`W`, pass ``b = inv(W)`` (or call
        :func:`amari_index` on :math:`WA` directly).

    Raises:
        ConfigError: non-square or mismatched shapes, NaN/inf, or a singular ``a``.
    """
    a_ = _as_square("A", a)
    b_ = _as_square("B", b)
    if a_.shape != b_.shape:
        raise ConfigError(f"'A' and 'B' must have the same shape, got {a_.shape} and {b_.shape}.")
    cond = np.linalg.cond(a_)
    if not np.isfinite(cond) or cond > 1e14:
        raise ConfigError(
            f"'A' is singular or numerically singular (condition number {cond:.3g}); the Amari "
            f"distance needs an invertible reference matrix."
        )
    return amari_index(np.linalg.solve(a_, b_))
