r"""The Möbius (conformal) mixing of Reizinger et al. (paper 004, Sec. 4.3, Fig. 3).

.. math::

    g(s) = b + \alpha\, \frac{A (s - a)}{\|s - a\|^2}

with :math:`A` orthogonal, :math:`\alpha \ne 0`, :math:`a` the pole and :math:`b` the offset — an
inversion in the sphere around :math:`a` followed by a rotation/reflection, a scaling and a shift.
It is conformal (by Liouville's theorem, compositions of such inversions and similarities are the
only conformal maps of :math:`\mathbb{R}^d, d \ge 3`; paper 004 cites Phillips 1969), hence a
member of the IMA class: with :math:`u = s - a`,

.. math::

    J_g(s) = \frac{\alpha}{\|u\|^2} A \Big(I - \frac{2 u u^T}{\|u\|^2}\Big),

an orthogonal matrix (:math:`A` times a Householder reflection) times the scalar
:math:`\alpha/\|u\|^2`: the columns are orthogonal with equal norms, :math:`J^T J =
(\alpha/\|u\|^2)^2 I`, :math:`c_{IMA} = 0` and :math:`\log|\det J| = d \log(|\alpha| / \|u\|^2)`.

The inverse is again a Möbius map: :math:`v = A^T (x - b) / \alpha = u / \|u\|^2` gives
:math:`\|v\| = 1/\|u\|`, so :math:`s = a + v / \|v\|^2`.

Conventions follow the reference code (facts in ``shared/papers/README.md``): :math:`\alpha = 1`,
:math:`b = 0`, :math:`A` a random orthogonal matrix, and each entry of :math:`a` drawn from
:math:`N(0, 1)` and redrawn while :math:`|a_i| \le 0.5`, which keeps the pole outside the sources'
support :math:`[-0.5, 0.5]^d`. Unlike the reference's torch version, :math:`\|s - a\|^2` is computed
per sample (the reference summed it over the whole batch, which made batched outputs and
Jacobians depend on the batch).
"""

from __future__ import annotations

import torch

from unmix.errors import ConfigError
from unmix.mixing.base import (
    Mixing,
    check_dim_arg,
    check_finite_real,
    check_seed,
    make_generator,
    random_orthogonal,
    resolve_dtype,
)


class Moebius(Mixing):
    r"""Möbius transform :math:`g(s) = b + \alpha A (s - a) / \|s - a\|^2` (paper 004, Sec. 4.3).

    Parameters
    ----------
    dim:
        :math:`d`, the latent and observation dimension (the paper uses 3).
    alpha:
        :math:`\alpha`, a non-zero finite scale (1 in the paper's code).
    seed:
        Seed of the local ``torch.Generator``: first :math:`A` (QR of a standard Gaussian
        ``d × d`` matrix with the sign fix, Haar on :math:`O(d)`), then the entries of :math:`a`
        in order, each redrawn from :math:`N(0, 1)` while :math:`|a_i| \le` ``a_min_abs``.
    a_min_abs:
        :math:`\ge 0`; 0.5 keeps the pole :math:`a` outside :math:`[-0.5, 0.5]^d`, the support of
        the uniform sources of paper 004.
    dtype:
        dtype of the stored buffers (default ``torch.get_default_dtype()``); drawn in float64.

    Buffers: ``A`` (d, d), ``a`` (d,), ``b`` (d,) (zeros), ``alpha`` (scalar).
    The map is undefined at :math:`s = a` (sent to infinity) and :math:`x = b` is not in its image.
    """

    def __init__(
        self,
        dim: int,
        alpha: float = 1.0,
        seed: int = 0,
        a_min_abs: float = 0.5,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = "Moebius"
        dim = check_dim_arg("dim", dim, owner)
        super().__init__(dim, dim)
        alpha = check_finite_real("alpha", alpha, owner)
        if alpha == 0.0:
            raise ConfigError(
                "Parameter 'alpha' of Moebius must be non-zero (it scales the map), got 0: "
                "pass e.g. alpha=1.0."
            )
        self.a_min_abs = check_finite_real("a_min_abs", a_min_abs, owner)
        if not 0.0 <= self.a_min_abs < 3.0:
            raise ConfigError(
                f"Parameter 'a_min_abs' of Moebius must lie in [0, 3), got {a_min_abs!r}: "
                "entries of a are N(0, 1) draws redrawn while |a_i| <= a_min_abs "
                "(0.5 in the paper)."
            )
        self.seed = check_seed(seed, owner)
        dtype = resolve_dtype(dtype, owner)
        gen = make_generator(self.seed)
        A = random_orthogonal(dim, gen)
        a = torch.empty(dim, dtype=torch.float64)
        for i in range(dim):
            v = torch.randn((), generator=gen, dtype=torch.float64)
            while v.abs() <= self.a_min_abs:
                v = torch.randn((), generator=gen, dtype=torch.float64)
            a[i] = v
        self.register_buffer("A", A.to(dtype))
        self.register_buffer("a", a.to(dtype))
        self.register_buffer("b", torch.zeros(dim, dtype=dtype))
        self.register_buffer("alpha", torch.tensor(alpha, dtype=dtype))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self._check_input(z, "z", self.dim_in)
        u = z - self.a
        sq = u.pow(2).sum(-1, keepdim=True)  # per sample
        return self.b + self.alpha * (u @ self.A.mT) / sq

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        r"""Exact inverse :math:`s = a + v/\|v\|^2`, :math:`v = A^T (x - b)/\alpha`."""
        self._check_input(x, "x", self.dim_out)
        v = ((x - self.b) @ self.A) / self.alpha
        return self.a + v / v.pow(2).sum(-1, keepdim=True)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""Closed form :math:`(\alpha/\|u\|^2)\, A (I - 2 u u^T / \|u\|^2)`, :math:`u = z - a`."""
        self._check_input(z, "z", self.dim_in)
        u = z - self.a
        sq = u.pow(2).sum(-1, keepdim=True).unsqueeze(-1)  # (..., 1, 1)
        eye = torch.eye(self.dim_in, dtype=z.dtype, device=z.device)
        householder = eye - 2.0 * u.unsqueeze(-1) * u.unsqueeze(-2) / sq
        return (self.alpha / sq) * (self.A @ householder)

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`d \log(|\alpha| / \|z - a\|^2)`."""
        self._check_input(z, "z", self.dim_in)
        sq = (z - self.a).pow(2).sum(-1)
        return self.dim_in * (self.alpha.abs() / sq).log()

    def extra_repr(self) -> str:
        return f"dim={self.dim_in}, alpha={float(self.alpha):g}, a_min_abs={self.a_min_abs}, seed={self.seed}"
