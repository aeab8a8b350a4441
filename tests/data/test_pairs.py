"""unmix.data.pairs: exact L2 nearest neighbours of dataset latents."""

import pytest
import torch

from unmix.data import NearestLatent
from unmix.errors import ConfigError


def _brute(stored: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return torch.cdist(z.double(), stored.double()).argmin(dim=1)


def test_sklearn_backend_agrees_with_brute_force():
    g = torch.Generator().manual_seed(0)
    stored = torch.rand(3000, 10, generator=g)
    z = stored[torch.randint(3000, (200,), generator=g)] + 0.05 * torch.randn(200, 10, generator=g)
    z = torch.cat([z, torch.rand(200, 10, generator=g) * 1.4 - 0.2])  # also off the data
    nn = NearestLatent(stored, backend="sklearn")
    assert nn.backend == "sklearn" and len(nn) == 3000
    got = nn.query(z)
    assert got.dtype == torch.int64 and got.shape == (400,)
    assert torch.equal(got, _brute(stored, z))
    # a stored latent is its own nearest neighbour
    assert torch.equal(nn.query(stored[:50]), torch.arange(50))


def test_exclude_returns_the_nearest_other_latent():
    g = torch.Generator().manual_seed(1)
    stored = torch.rand(500, 3, generator=g)
    nn = NearestLatent(stored, backend="sklearn")
    idx = torch.arange(100)
    got = nn.query(stored[:100], exclude=idx)
    d = torch.cdist(stored[:100].double(), stored.double())
    d[idx, idx] = float("inf")
    assert torch.equal(got, d.argmin(1))
    assert not bool((got == idx).any())


def test_auto_backend_and_errors():
    stored = torch.rand(20, 4)
    nn = NearestLatent(stored)  # faiss if installed, else sklearn: same answers
    assert nn.backend in ("faiss", "sklearn")
    z = torch.rand(30, 4)
    assert torch.equal(nn.query(z), _brute(stored, z))
    with pytest.raises(ConfigError, match="backend"):
        NearestLatent(stored, backend="annoy")
    with pytest.raises(ConfigError, match=r"shape \(N, d\)"):
        NearestLatent(torch.rand(5))
    with pytest.raises(ConfigError, match=r"shape \(B, 4\)"):
        nn.query(torch.rand(3, 5))
    with pytest.raises(ConfigError, match="NaN"):
        nn.query(torch.full((1, 4), float("nan")))
