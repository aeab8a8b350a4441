"""LinearMixing and VolumePreservingLinear (paper 004, Sec. 4.3, Fig. 3 right).

References: numpy matrix algebra (``np.linalg.det``, ``np.linalg.cond``), and regenerating
:math:`M_0` from the documented stream (``torch.Generator().manual_seed(seed)``, ``torch.rand``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unmix.errors import ConfigError
from unmix.mixing import LinearMixing, VolumePreservingLinear

F64 = torch.float64


def test_linear_mixing_algebra():
    mat = np.array([[2.0, 1.0, 0.0], [0.5, -1.0, 3.0], [0.0, 1.0, 1.0]])
    m = LinearMixing(mat)
    assert m.dtype == F64 and m.dim_in == m.dim_out == 3  # numpy float64 keeps its dtype
    z = torch.randn(10, 3, generator=torch.Generator().manual_seed(0), dtype=F64)
    np.testing.assert_allclose(m(z).numpy(), z.numpy() @ mat.T, rtol=1e-14)
    np.testing.assert_allclose(m.inverse(m(z)).numpy(), z.numpy(), atol=1e-14)
    np.testing.assert_allclose(m.jacobian(z).numpy(), np.broadcast_to(mat, (10, 3, 3)))
    np.testing.assert_allclose(
        m.log_abs_det_jacobian(z).numpy(), np.full(10, np.log(abs(np.linalg.det(mat))))
    )
    # the stored matrix is a copy, and the jacobian does not alias it
    mat[0, 0] = 100.0
    assert float(m.matrix[0, 0]) == 2.0
    m.jacobian(z)[0, 0, 0] = -5.0
    assert float(m.matrix[0, 0]) == 2.0


def test_linear_mixing_dtype():
    assert LinearMixing([[1, 0], [0, 1]]).dtype == torch.get_default_dtype()  # integer input
    assert LinearMixing(torch.eye(2), dtype=F64).dtype == F64


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        ([[1.0, 2.0, 3.0]], r"square \(d, d\) matrix, got shape \(1, 3\)"),
        ([1.0, 2.0], r"square \(d, d\) matrix, got shape \(2,\)"),
        ([[1.0, 2.0], [2.0, 4.0]], "singular or nearly so"),
        ([[1.0, float("nan")], [0.0, 1.0]], "NaN or inf"),
        ("abc", "square numeric matrix"),
    ],
)
def test_linear_mixing_errors(matrix, match):
    with pytest.raises(ConfigError, match=match):
        LinearMixing(matrix)


def test_volume_preserving_unit_determinant():
    for d in (1, 2, 3, 10):
        for seed in range(5):
            m = VolumePreservingLinear(d, seed=seed, dtype=F64)
            mat = m.matrix.numpy()
            assert abs(abs(np.linalg.det(mat)) - 1.0) < 1e-12
            assert np.all(mat >= 0)  # a positive multiple of a U[0, 1] matrix
            assert np.linalg.cond(mat, 2) == pytest.approx(m.cond, rel=1e-10)
            assert m.cond <= m.max_cond
            z = torch.randn(4, d, generator=torch.Generator().manual_seed(1), dtype=F64)
            assert m.log_abs_det_jacobian(z).abs().max() < 1e-12


def test_volume_preserving_follows_the_documented_draw():
    m = VolumePreservingLinear(3, seed=11, dtype=F64)
    assert m.n_redraws == 0
    m0 = torch.rand(3, 3, generator=torch.Generator().manual_seed(11), dtype=F64).numpy()
    ref = m0 / abs(np.linalg.det(m0)) ** (1 / 3)
    np.testing.assert_allclose(m.matrix.numpy(), ref, rtol=1e-13)


def test_volume_preserving_redraw_rule():
    """Draws with condition number > max_cond are rejected (here a strict max_cond = 8)."""
    found = False
    for seed in range(20):
        m = VolumePreservingLinear(3, seed=seed, max_cond=8.0, dtype=F64)
        assert m.cond <= 8.0
        if m.n_redraws > 0:
            found = True
            gen = torch.Generator().manual_seed(seed)
            first = torch.rand(3, 3, generator=gen, dtype=F64).numpy()
            assert np.linalg.cond(first, 2) > 8.0
    assert found  # P(cond of a 3x3 U[0,1] matrix > 8) is about one half


def test_volume_preserving_errors():
    with pytest.raises(ConfigError, match="'max_cond' of VolumePreservingLinear must be >= 1"):
        VolumePreservingLinear(3, max_cond=0.5)
    with pytest.raises(
        ConfigError, match="'max_cond' of VolumePreservingLinear must be a positive"
    ):
        VolumePreservingLinear(3, max_cond=-1.0)
    with pytest.raises(ConfigError, match="in 10000 draws: raise max_cond"):
        VolumePreservingLinear(3, max_cond=1.0 + 1e-9)
