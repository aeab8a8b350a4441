"""Supervised baseline: mean squared error to the true latents."""

import pytest
import torch

from unmix.errors import ConfigError
from unmix.objectives import Supervised


def test_matches_loop_mse_and_its_gradient():
    g = torch.Generator().manual_seed(0)
    z_hat = torch.randn(7, 3, generator=g, dtype=torch.float64).requires_grad_()
    z = torch.randn(7, 3, generator=g, dtype=torch.float64)
    loss = Supervised()(z_hat, z)
    rows = zip(z_hat.tolist(), z.tolist(), strict=True)
    ref = sum((a - b) ** 2 for ra, rb in rows for a, b in zip(ra, rb, strict=True))
    assert float(loss.detach()) == pytest.approx(ref / 21, rel=1e-12)
    loss.backward()
    torch.testing.assert_close(z_hat.grad, 2 * (z_hat.detach() - z) / 21)
    assert float(Supervised()(z, z)) == 0.0


def test_shape_mismatch_is_readable():
    with pytest.raises(
        ConfigError, match="must have the same shape, got \\(4, 3\\) and \\(4, 2\\)"
    ):
        Supervised()(torch.zeros(4, 3), torch.zeros(4, 2))
    with pytest.raises(ConfigError, match="must be torch tensors"):
        Supervised()(torch.zeros(4, 3), [[0.0] * 3] * 4)
