r"""Linear mixings :math:`x = M z` (paper 004, Sec. 4.3 and Fig. 3 right).

* :class:`LinearMixing` — any invertible square matrix :math:`M`; constant Jacobian :math:`M`,
  :math:`\log|\det J| = \log|\det M|`, exact inverse by a linear solve.
* :class:`VolumePreservingLinear` — paper 004's "volume-preserving linear map", applied after the
  Möbius transform to push the mixing out of the IMA class (:math:`c_{IMA} \ne 0`) while keeping
  :math:`|\det| = 1`: :math:`M_0 \sim U[0, 1]^{d \times d}`, :math:`M = M_0 / |\det M_0|^{1/d}`
  (facts of the reference code in ``shared/papers/README.md``). Fig. 3 (right) plots MCC against
  the resulting :math:`c_{IMA}`; paper 004 does not normalise the columns of this map (that would
  change both :math:`|\det|` and :math:`c_{IMA}`), so unmix offers no column-normalised variant.
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
    resolve_dtype,
)


def _cond2(m: torch.Tensor) -> float:
    s = torch.linalg.svdvals(m.to(torch.float64))
    return float(s[0] / s[-1]) if float(s[-1]) > 0 else float("inf")


class LinearMixing(Mixing):
    r"""Invertible linear map :math:`x = M z` (no offset).

    Parameters
    ----------
    matrix:
        A square, finite, invertible ``(d, d)`` matrix (anything ``torch.as_tensor`` accepts).
    max_cond:
        Reject (ConfigError) matrices whose 2-norm condition number exceeds this (default
        :math:`10^{12}`, i.e. numerically singular in float64).
    dtype:
        dtype of the stored buffer; default: the matrix's own floating dtype, else
        ``torch.get_default_dtype()``.

    Buffer: ``matrix`` (d, d).
    """

    def __init__(
        self,
        matrix: torch.Tensor,
        max_cond: float = 1e12,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = type(self).__name__
        try:
            m = torch.as_tensor(matrix)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ConfigError(
                f"Parameter 'matrix' of {owner} must be a square numeric matrix: {err}"
            ) from err
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
            raise ConfigError(
                f"Parameter 'matrix' of {owner} must be a square (d, d) matrix, got shape "
                f"{tuple(m.shape)}."
            )
        if dtype is None:
            dtype = m.dtype if m.is_floating_point() else None
        dtype = resolve_dtype(dtype, owner)
        max_cond = check_finite_real("max_cond", max_cond, owner, positive=True)
        if not bool(torch.isfinite(m.to(torch.float64)).all()):
            raise ConfigError(f"Parameter 'matrix' of {owner} contains NaN or inf entries.")
        cond = _cond2(m)
        if not cond <= max_cond:
            raise ConfigError(
                f"Parameter 'matrix' of {owner} is singular or nearly so (2-norm condition number "
                f"{cond:.3g} > max_cond={max_cond:.3g}): pass an invertible matrix."
            )
        d = m.shape[0]
        super().__init__(d, d)
        self.register_buffer("matrix", m.to(dtype).clone())

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self._check_input(z, "z", self.dim_in)
        return z @ self.matrix.mT

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`z = M^{-1} x` (linear solve)."""
        self._check_input(x, "x", self.dim_out)
        shape = x.shape
        flat = x.reshape(-1, self.dim_out)
        return torch.linalg.solve(self.matrix, flat.mT).mT.reshape(shape)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        """The constant :math:`M`, broadcast to ``(..., d, d)``."""
        self._check_input(z, "z", self.dim_in)
        return self.matrix.expand(*z.shape[:-1], self.dim_out, self.dim_in).clone()

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""The constant :math:`\log|\det M|`, broadcast to ``(...)``."""
        self._check_input(z, "z", self.dim_in)
        const = torch.linalg.slogdet(self.matrix).logabsdet
        return const.expand(z.shape[:-1]).clone()

    def extra_repr(self) -> str:
        return f"dim={self.dim_in}"


class VolumePreservingLinear(LinearMixing):
    r"""Random linear map with :math:`|\det M| = 1` (paper 004, Sec. 4.3, Fig. 3 right).

    Rule: draw :math:`M_0` with i.i.d. :math:`U[0, 1]` entries (float64, ``torch.Generator``
    seeded with ``seed``); redraw while its 2-norm condition number exceeds ``max_cond`` (default
    :math:`10^4`; this also rejects singular draws) — about 0.07 % of draws for d = 3 and 0.5 % for
    d = 10 are redrawn, a negligible change from the reference code, which only checked full rank;
    then :math:`M = M_0 / |\det M_0|^{1/d}` (the scaling leaves the condition number and
    :math:`c_{IMA}` unchanged and makes :math:`|\det M| = 1`).

    Attributes: ``n_redraws`` (draws rejected before the accepted one), ``cond`` (its condition
    number).
    """

    def __init__(
        self,
        dim: int,
        seed: int = 0,
        max_cond: float = 1e4,
        dtype: torch.dtype | None = None,
    ) -> None:
        owner = "VolumePreservingLinear"
        dim = check_dim_arg("dim", dim, owner)
        seed = check_seed(seed, owner)
        max_cond = check_finite_real("max_cond", max_cond, owner, positive=True)
        if max_cond < 1.0:
            raise ConfigError(
                f"Parameter 'max_cond' of {owner} must be >= 1 (condition numbers are >= 1), got "
                f"{max_cond!r}: the default 1e4 rejects only nearly singular draws."
            )
        gen = make_generator(seed)
        n_redraws = 0
        while True:
            m0 = torch.rand(dim, dim, generator=gen, dtype=torch.float64)
            cond = _cond2(m0)
            if cond <= max_cond:
                break
            n_redraws += 1
            if n_redraws >= 10_000:
                raise ConfigError(
                    f"{owner}(dim={dim}, seed={seed}) found no matrix with condition number <= "
                    f"{max_cond:.3g} in 10000 draws: raise max_cond."
                )
        logdet = torch.linalg.slogdet(m0).logabsdet
        m = m0 * torch.exp(-logdet / dim)
        super().__init__(m, max_cond=max(max_cond, 1e12), dtype=dtype)
        self.seed = seed
        self.max_cond = max_cond
        self.n_redraws = n_redraws
        self.cond = cond

    def extra_repr(self) -> str:
        return f"dim={self.dim_in}, seed={self.seed}, max_cond={self.max_cond:.3g}"
