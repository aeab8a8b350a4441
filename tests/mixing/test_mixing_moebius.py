"""Möbius mixing (paper 004, Sec. 4.3) against independent references.

References: a per-sample numpy loop of the formula, the complex-number form of the 2-D Möbius
inversion, conformality (JᵀJ a multiple of I, c_IMA = 0), and a KS test of the pole's
truncated-normal entries.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.errors import ConfigError
from unmix.mixing import Moebius

F64 = torch.float64


def _sources(n: int, d: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g, dtype=F64) - 0.5  # U[-0.5, 0.5]^d


def test_forward_matches_numpy_loop():
    m = Moebius(4, alpha=1.7, seed=3, dtype=F64)
    z = _sources(20, 4)
    A, a, b = m.A.numpy(), m.a.numpy(), m.b.numpy()
    ref = np.stack([b + 1.7 * A @ (s - a) / np.sum((s - a) ** 2) for s in z.numpy()])
    np.testing.assert_allclose(m(z).numpy(), ref, rtol=1e-13, atol=1e-14)


def test_batched_equals_one_at_a_time():
    """The reference summed ||s - a||² over the batch; unmix must not depend on the batch."""
    m = Moebius(3, seed=0, dtype=F64)
    z = _sources(64, 3)
    one = torch.stack([m(s) for s in z])
    torch.testing.assert_close(m(z), one, rtol=0, atol=1e-14)
    jac_one = torch.stack([m.jacobian(s) for s in z])
    torch.testing.assert_close(m.jacobian(z), jac_one, rtol=0, atol=1e-14)
    torch.testing.assert_close(m(z[:5]), m(z)[:5], rtol=0, atol=1e-14)


def test_two_dimensional_complex_form():
    """With A = I, α = 1, b = 0 in 2-D: g(s) = u/|u|² = 1 / conj(u) for u = s - a (complex)."""
    m = Moebius(2, seed=1, dtype=F64)
    m.A.copy_(torch.eye(2, dtype=F64))
    z = _sources(10, 2)
    u = (z[:, 0] - m.a[0]) + 1j * (z[:, 1] - m.a[1])
    w = 1.0 / u.conj()
    torch.testing.assert_close(m(z), torch.stack([w.real, w.imag], dim=-1), rtol=1e-13, atol=0)


def test_parameters_follow_the_reference_conventions():
    for seed in range(5):
        m = Moebius(5, seed=seed, dtype=F64)
        torch.testing.assert_close(m.A.T @ m.A, torch.eye(5, dtype=F64), rtol=0, atol=1e-14)
        assert abs(abs(float(torch.linalg.det(m.A))) - 1.0) < 1e-13
        assert torch.all(m.a.abs() > 0.5)  # pole outside the sources' support [-0.5, 0.5]^d
        assert torch.equal(m.b, torch.zeros(5, dtype=F64))


def test_pole_entries_are_truncated_normal():
    """Entries of a: N(0, 1) conditioned on |a_i| > 0.5. KS test over 300 seeds × 4 entries."""
    a = np.concatenate([Moebius(4, seed=s, dtype=F64).a.numpy() for s in range(300)])
    tail = 2 * stats.norm.sf(0.5)

    def cdf(x):
        x = np.asarray(x)
        below = stats.norm.cdf(np.minimum(x, -0.5))
        above = np.clip(stats.norm.cdf(x) - stats.norm.cdf(0.5), 0, None)
        return (below + above) / tail

    assert stats.kstest(a, cdf).pvalue > 1e-3
    # both signs, roughly balanced: |#pos - n/2| within 4 standard errors
    n = a.size
    assert abs((a > 0).sum() - n / 2) < 4 * np.sqrt(n / 4)


def test_conformal_jacobian():
    """JᵀJ = (α/||u||²)² I: orthogonal columns of equal norm, hence c_IMA = 0 (IMA class)."""
    m = Moebius(3, alpha=2.0, seed=2, dtype=F64)
    z = _sources(50, 3)
    jac = m.jacobian(z)
    scale = 2.0 / (z - m.a).pow(2).sum(-1)
    eye = torch.eye(3, dtype=F64).expand(50, 3, 3)
    torch.testing.assert_close(
        jac.mT @ jac, scale[:, None, None] ** 2 * eye, rtol=1e-12, atol=1e-12
    )
    c_ima = jac.norm(dim=-2).log().sum(-1) - torch.linalg.slogdet(jac).logabsdet
    assert c_ima.abs().max() < 1e-12
    torch.testing.assert_close(m.log_abs_det_jacobian(z), 3 * scale.log(), rtol=1e-13, atol=0)


def test_inverse_is_exact_and_a_moebius_map():
    m = Moebius(3, alpha=-0.7, seed=4, dtype=F64)
    z = _sources(200, 3) * 4  # also far outside the unit box
    z = z[(z - m.a).norm(dim=-1) > 1e-3]
    torch.testing.assert_close(m.inverse(m(z)), z, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(alpha=0.0), "'alpha' of Moebius must be non-zero"),
        (dict(alpha=float("inf")), "'alpha' of Moebius must be a finite number"),
        (dict(a_min_abs=-1.0), r"'a_min_abs' of Moebius must lie in \[0, 3\)"),
        (dict(a_min_abs=5.0), "'a_min_abs'"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Moebius(3, **kwargs)


def test_a_min_abs_zero_allows_any_entry():
    m = Moebius(50, a_min_abs=0.0, seed=0, dtype=F64)
    assert (m.a.abs() <= 0.5).any()  # P(none of 50 in [-0.5, 0.5]) = 0.62^50 ≈ 4e-11


def test_alpha_is_a_saved_buffer():
    src = Moebius(3, alpha=2.0, seed=1, dtype=F64)
    dst = Moebius(3, seed=0, dtype=F64)
    dst.load_state_dict(src.state_dict())
    z = _sources(5, 3)
    torch.testing.assert_close(dst(z), src(z), rtol=0, atol=0)
    assert float(dst.alpha) == 2.0
