r"""Exact nearest-neighbour lookup of dataset latents (positive pairs on a finite dataset).

On a finite image dataset a latent :math:`\tilde z'` drawn from the conditional
:math:`p(\cdot \mid z)` has no image of its own; paper 000 (Sec. 4.2.2) takes instead the dataset
latent nearest to it in L2 distance,
:math:`\tilde z = \arg\min_{z_j \in \mathcal{D}} \lVert z_j - \tilde z' \rVert_2`,
found with FAISS (``IndexFlatL2``, exact). :class:`NearestLatent` does the same with FAISS when
it is installed, else with scikit-learn's exact kd-tree.
"""

from __future__ import annotations

import numpy as np
import torch

from unmix.errors import ConfigError

__all__ = ["NearestLatent"]

_BACKENDS = ("auto", "faiss", "sklearn")


def _faiss():
    try:
        import faiss  # type: ignore[import-not-found]
    except ImportError:
        return None
    return faiss


class NearestLatent:
    r"""Exact L2 nearest-neighbour index over stored latents ``(N, d)``.

    Parameters
    ----------
    latents:
        The dataset latents, a float tensor ``(N, d)``; row order defines the returned indices.
    backend:
        ``"auto"`` (FAISS if importable, else scikit-learn), ``"faiss"`` (``IndexFlatL2``,
        brute force, float32) or ``"sklearn"`` (``NearestNeighbors`` with a kd-tree, float64).

    ``query(z)`` returns, for each row of ``z`` ``(B, d)``, the index :math:`j` minimising
    :math:`\lVert z_j - z_b \rVert_2` as an int64 tensor ``(B,)`` on ``z``'s device. With
    ``exclude`` (int64 ``(B,)``) the nearest index *other than* ``exclude[b]`` is returned —
    cl-ica does this so that a positive is never the anchor's own image.
    """

    def __init__(self, latents: torch.Tensor, backend: str = "auto") -> None:
        if backend not in _BACKENDS:
            raise ConfigError(f"backend must be one of {_BACKENDS}, got {backend!r}.")
        if not isinstance(latents, torch.Tensor) or latents.ndim != 2 or latents.shape[0] < 1:
            shape = tuple(latents.shape) if isinstance(latents, torch.Tensor) else type(latents)
            raise ConfigError(f"latents must be a tensor of shape (N, d) with N ≥ 1, got {shape}.")
        if not latents.is_floating_point() or not bool(torch.isfinite(latents).all()):
            raise ConfigError("latents must be finite floating-point values.")
        self.n, self.dim = int(latents.shape[0]), int(latents.shape[1])
        faiss = _faiss() if backend in ("auto", "faiss") else None
        if backend == "faiss" and faiss is None:
            raise ConfigError(
                "backend='faiss' needs the faiss package (pip install faiss-cpu); or use "
                "backend='sklearn' / 'auto'."
            )
        if faiss is not None:
            self.backend = "faiss"
            self._index = faiss.IndexFlatL2(self.dim)
            self._index.add(np.ascontiguousarray(latents.detach().cpu().numpy(), np.float32))
        else:
            from sklearn.neighbors import NearestNeighbors

            self.backend = "sklearn"
            self._index = NearestNeighbors(n_neighbors=1, algorithm="kd_tree")
            self._index.fit(latents.detach().cpu().to(torch.float64).numpy())

    def __len__(self) -> int:
        return self.n

    def _search(self, q: np.ndarray, k: int) -> np.ndarray:
        if self.backend == "faiss":
            _, idx = self._index.search(np.ascontiguousarray(q, np.float32), k)
            return idx
        return self._index.kneighbors(q.astype(np.float64), n_neighbors=k, return_distance=False)

    def query(self, z: torch.Tensor, exclude: torch.Tensor | None = None) -> torch.Tensor:
        """Index of the nearest stored latent for each row of ``z`` (see the class docstring)."""
        if not isinstance(z, torch.Tensor) or z.ndim != 2 or z.shape[1] != self.dim:
            shape = tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__
            raise ConfigError(f"z must be a tensor of shape (B, {self.dim}), got {shape}.")
        if not bool(torch.isfinite(z).all()):
            raise ConfigError("z contains NaN or inf values.")
        device = z.device
        if z.shape[0] == 0:
            return torch.zeros(0, dtype=torch.int64, device=device)
        q = z.detach().cpu().numpy()
        if exclude is None:
            return torch.from_numpy(self._search(q, 1)[:, 0].astype(np.int64)).to(device)
        if self.n < 2:
            raise ConfigError("exclude needs at least 2 stored latents.")
        ex = exclude.detach().cpu().reshape(-1).numpy().astype(np.int64)
        if ex.shape[0] != z.shape[0]:
            raise ConfigError(
                f"exclude must have one index per row of z ({z.shape[0]}), got {ex.shape[0]}."
            )
        idx = self._search(q, 2)
        out = np.where(idx[:, 0] != ex, idx[:, 0], idx[:, 1]).astype(np.int64)
        return torch.from_numpy(out).to(device)

    def __repr__(self) -> str:
        return f"NearestLatent(n={self.n}, dim={self.dim}, backend={self.backend!r})"
