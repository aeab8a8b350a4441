"""FactorizedBeta against scipy.stats.beta (samples by KS test, densities pointwise)."""

import numpy as np
import pytest
import torch
from scipy import stats

from unmix.distributions.beta import FactorizedBeta, random_beta_shapes
from unmix.errors import ConfigError


def test_samples_follow_each_rescaled_beta():
    alpha, beta = torch.tensor([2.0, 7.5, 14.0]), torch.tensor([9.0, 3.0, 14.0])
    dist = FactorizedBeta(alpha, beta, low=-1.0, high=3.0)
    z = dist.sample((20_000,), generator=torch.Generator().manual_seed(0)).double().numpy()
    assert z.shape == (20_000, 3) and (z > -1).all() and (z < 3).all()
    for i in range(3):
        ref = stats.beta(float(alpha[i]), float(beta[i]), loc=-1.0, scale=4.0)
        assert stats.kstest(z[:, i], ref.cdf).pvalue > 1e-3


def test_log_prob_matches_scipy_and_is_minus_inf_outside():
    alpha, beta = torch.tensor([2.0, 5.0]), torch.tensor([3.0, 1.5])
    dist = FactorizedBeta(alpha, beta, low=0.0, high=2.0, dtype=torch.float64)
    v = torch.tensor([[0.3, 1.1], [1.9, 0.01]], dtype=torch.float64)
    ref = sum(
        stats.beta(float(alpha[i]), float(beta[i]), loc=0.0, scale=2.0).logpdf(v[:, i].numpy())
        for i in range(2)
    )
    np.testing.assert_allclose(dist.log_prob(v).numpy(), ref, rtol=1e-10)
    assert dist.log_prob(torch.tensor([2.5, 1.0], dtype=torch.float64)) == -np.inf
    np.testing.assert_allclose(dist.mean.numpy(), [2 * 2 / 5, 2 * 5 / 6.5], rtol=1e-6)


def test_seeded_shapes_are_reproducible_and_in_range():
    a1, b1 = random_beta_shapes(3, 4)
    a2, b2 = random_beta_shapes(3, 4)
    assert torch.equal(a1, a2) and torch.equal(b1, b2)
    assert not torch.equal(a1, random_beta_shapes(4, 4)[0])
    both = torch.cat([random_beta_shapes(s, 4)[0] for s in range(30)])
    assert both.min() >= 2 and both.max() <= 15 and both.max() - both.min() > 10


def test_bad_parameters_raise_readable_errors():
    with pytest.raises(ConfigError, match="alpha"):
        FactorizedBeta(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0]))
    with pytest.raises(ConfigError, match="one of each per factor"):
        FactorizedBeta(torch.tensor([1.0, 1.0]), torch.tensor([1.0]))
    with pytest.raises(ConfigError, match="low < high"):
        FactorizedBeta(torch.ones(2), torch.ones(2), low=1.0, high=1.0)


def _beta_latent(marginal: dict, dim: int = 3) -> dict:
    return {"space": "box", "dim": dim, "marginal": {"kind": "beta", **marginal}}


def test_per_coordinate_shapes_set_each_coordinate_and_are_validated():
    from unmix.latents import build_latent_process
    from unmix.settings import LatentSpec

    pairs = [[2.0, 8.0], [5.0, 5.0], [9.0, 3.0]]
    spec = LatentSpec.model_validate(_beta_latent({"shapes": pairs}))
    torch.manual_seed(0)
    z = build_latent_process(spec).marginal.sample((200_000,))
    for i, (a, b) in enumerate(pairs):
        assert abs(float(z[:, i].mean()) - stats.beta(a, b).mean()) < 3e-3
        assert abs(float(z[:, i].std()) - stats.beta(a, b).std()) < 3e-3
    assert "shapes" in spec.identity()["marginal"]
    for bad, says in [
        ({"shapes": pairs[:2]}, "one pair per coordinate"),
        ({"shapes": [[2.0, 8.0], [0.0, 5.0], [9.0, 3.0]]}, "'shapes' entry 1"),
        ({"shapes": pairs, "shape_range": [2, 15]}, "exactly one of"),
        ({"shapes": pairs, "alpha": 2.0, "beta": 2.0}, "exactly one of"),
    ]:
        with pytest.raises(ValueError, match=says):
            LatentSpec.model_validate(_beta_latent(bad))
    with pytest.raises(ValueError, match="takes no"):
        LatentSpec.model_validate(
            {"space": "box", "dim": 1, "marginal": {"kind": "uniform", "shapes": [[1, 1]]}}
        )


def test_latent_identity_leaves_out_unset_shapes():
    # rendered data sets are keyed by this dict: a setting without per-coordinate shapes must key
    # as it did before the field existed
    from unmix.settings import LatentSpec

    spec = LatentSpec.model_validate(_beta_latent({"shape_range": [2, 15]}))
    assert "shapes" not in spec.identity()["marginal"]
    assert "conditional" not in spec.identity()


def test_rendered_data_keys_did_not_change_with_the_shapes_field():
    # pinned: Table 4's quick store as keyed before `shapes` existed (a changed key would
    # re-render every user's cached data set)
    from unmix.data.sets import data_key
    from unmix.resolve import resolve

    setting = resolve("zimmermann-table4-row1", "quick").setting
    assert data_key(setting) == "scenes3d-64px-n60000+5000-data0-4cc3a3617a"
