r"""Composition of mixings: :math:`g = g_n \circ \cdots \circ g_1`.

Paper 004 (Sec. 4.3, Fig. 3 right) applies a volume-preserving linear map after the Möbius
transform: ``Compose(Moebius(3, seed=s), VolumePreservingLinear(3, seed=s))``.

* forward: :math:`x_0 = z`, :math:`x_k = g_k(x_{k-1})`, output :math:`x_n`;
* inverse: :math:`g_1^{-1} \circ \cdots \circ g_n^{-1}` (reverse order);
* Jacobian (chain rule): :math:`J_g(z) = J_{g_n}(x_{n-1}) \cdots J_{g_1}(x_0)` (batched matmul);
* :math:`\log|\det J_g(z)| = \sum_k \log|\det J_{g_k}(x_{k-1})|` when every factor is square.
"""

from __future__ import annotations

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.mixing.base import Mixing


class Compose(Mixing):
    r"""The composition ``Compose(g1, g2, …)(z) = … g2(g1(z))`` (the first argument acts first).

    The parts are kept in an ``nn.ModuleList`` (``compose.mixings``), so ``.to()`` and
    ``state_dict()`` cover their buffers. Consecutive dimensions must agree:
    ``g_k.dim_out == g_{k+1}.dim_in``.
    """

    def __init__(self, *mixings: Mixing) -> None:
        if len(mixings) == 1 and isinstance(mixings[0], list | tuple):
            mixings = tuple(mixings[0])
        if len(mixings) == 0:
            raise ConfigError("Compose needs at least one mixing: pass e.g. Compose(g1, g2).")
        for i, m in enumerate(mixings):
            if not isinstance(m, Mixing):
                raise ConfigError(
                    f"Compose argument {i} is a {type(m).__name__}, not a unmix Mixing: pass "
                    "mixings from unmix.mixing (InvertibleMLP, Moebius, LinearMixing, …)."
                )
        for i, (m1, m2) in enumerate(zip(mixings[:-1], mixings[1:], strict=True)):
            if m1.dim_out != m2.dim_in:
                raise ConfigError(
                    f"Compose: mixing {i} ({type(m1).__name__}) outputs {m1.dim_out} dimensions "
                    f"but mixing {i + 1} ({type(m2).__name__}) expects {m2.dim_in}: "
                    "make them agree."
                )
        super().__init__(mixings[0].dim_in, mixings[-1].dim_out)
        self.mixings = nn.ModuleList(mixings)

    def __len__(self) -> int:
        return len(self.mixings)

    def __getitem__(self, i: int) -> Mixing:
        return self.mixings[i]

    def _intermediates(self, z: torch.Tensor) -> list[torch.Tensor]:
        """``[x_0 = z, x_1, …, x_{n-1}]``: the input of each part."""
        xs = [z]
        for m in list(self.mixings)[:-1]:
            xs.append(m(xs[-1]))
        return xs

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self._check_input(z, "z", self.dim_in)
        for m in self.mixings:
            z = m(z)
        return z

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`g_1^{-1}(\cdots g_n^{-1}(x))`; NotImplementedError if a part has no inverse."""
        self._check_input(x, "x", self.dim_out)
        for m in reversed(self.mixings):
            x = m.inverse(x)
        return x

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r"""Chain rule :math:`J_{g_n}(x_{n-1}) \cdots J_{g_1}(z)`, ``(..., dim_out, dim_in)``."""
        self._check_input(z, "z", self.dim_in)
        xs = self._intermediates(z)
        jac = None
        for m, x in zip(self.mixings, xs, strict=True):
            jm = m.jacobian(x)
            jac = jm if jac is None else jm @ jac
        return jac

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`\sum_k \log|\det J_{g_k}(x_{k-1})|` (square parts); otherwise ``slogdet`` of the
        full Jacobian."""
        self._check_input(z, "z", self.dim_in)
        if any(m.dim_in != m.dim_out for m in self.mixings):
            return super().log_abs_det_jacobian(z)
        xs = self._intermediates(z)
        total = None
        for m, x in zip(self.mixings, xs, strict=True):
            term = m.log_abs_det_jacobian(x)
            total = term if total is None else total + term
        return total

    def extra_repr(self) -> str:
        return f"dim_in={self.dim_in}, dim_out={self.dim_out}, n={len(self.mixings)}"
