"""Amari distance: zero on the ICA indeterminacies, a slow loop reference, its range, errors."""

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.metrics import amari_distance, amari_index


def _amari_loop(p):
    """Amari et al. (1996) index, written out with plain loops; normalised by 2n(n-1)."""
    n = len(p)
    a = [[abs(float(p[i][j])) for j in range(n)] for i in range(n)]
    rows = sum(sum(a[i]) / max(a[i]) - 1 for i in range(n))
    cols = sum(
        sum(a[i][j] for i in range(n)) / max(a[i][j] for i in range(n)) - 1 for j in range(n)
    )
    return (rows + cols) / (2 * n * (n - 1))


def test_zero_for_permuted_rescaled_sign_flipped_columns():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    perm = np.eye(5)[[3, 1, 4, 0, 2]]
    d = np.diag([2.0, -0.5, 7.0, -1.0, 0.01])
    assert amari_distance(a, a @ perm @ d) == pytest.approx(0.0, abs=1e-12)
    assert amari_distance(torch.as_tensor(a), torch.as_tensor(a)) == pytest.approx(0.0, abs=1e-12)


def test_matches_loop_reference_and_lies_in_unit_interval():
    rng = np.random.default_rng(1)
    for n in (2, 3, 6):
        a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n))
        value = amari_distance(a, b)
        assert value == pytest.approx(_amari_loop(np.linalg.solve(a, b)), rel=1e-12)
        assert 0.0 < value <= 1.0


def test_extremes_of_the_index():
    assert amari_index(np.ones((4, 4))) == pytest.approx(1.0)
    assert amari_index(np.diag([1.0, -2.0, 3.0])) == 0.0
    # a small perturbation of a permutation gives a small but positive index
    p = np.eye(4)[[1, 0, 3, 2]] + 1e-3
    assert 0.0 < amari_index(p) < 1e-2


def test_errors_are_readable():
    with pytest.raises(ConfigError, match="square matrix"):
        amari_distance(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ConfigError, match="same shape"):
        amari_distance(np.eye(2), np.eye(3))
    with pytest.raises(ConfigError, match="singular"):
        amari_distance(np.ones((3, 3)), np.eye(3))
    with pytest.raises(ConfigError, match="all-zero row or column"):
        amari_index(np.array([[1.0, 0.0], [0.0, 0.0]]))
