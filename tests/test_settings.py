import pytest

from unmix import papers as presets
from unmix.errors import ConfigError
from unmix.papers.zimmermann.presets import assumptions_match
from unmix.resolve import load_setting
from unmix.settings import Setting


def base(**latent):
    lat = {"space": "sphere", "dim": 10, "conditional": {"kind": "vmf", "kappa": 1.0}}
    lat.update(latent)
    return {"latent": lat}


def test_round_trip_yaml(tmp_path):
    s = presets.get("zimmermann-table2-row2").setting
    path = tmp_path / "s.yaml"
    path.write_text(s.to_yaml())
    assert Setting.from_yaml(path) == s
    assert load_setting(str(path)) == s


@pytest.mark.parametrize(
    "latent, field, words",
    [
        ({"conditional": {"kind": "vmf", "kappa": 0.0}}, "latent.conditional", "kappa"),
        ({"conditional": {"kind": "normal", "scale": -1}}, "latent.conditional", "scale"),
        ({"dim": 1}, "latent", "dim >= 2"),
        (
            {
                "space": "box",
                "low": 1.0,
                "high": 0.0,
                "conditional": {"kind": "normal", "scale": 0.1},
            },
            "latent",
            "low < high",
        ),
        ({"space": "box"}, "latent", "vMF conditional lives on the sphere"),
        ({"conditional": {"kind": "gauss", "scale": 1}}, "latent.conditional.kind", "gauss"),
        (
            {"space": "euclidean", "conditional": {"kind": "normal", "scale": 1}},
            "latent",
            "no uniform distribution on R^N",
        ),
        ({"conditional": {"kind": "normal"}}, "latent.conditional", "needs 'scale'"),
    ],
)
def test_invalid_settings_name_the_field(latent, field, words):
    with pytest.raises(ConfigError) as info:
        Setting.from_dict(base(**latent))
    msg = str(info.value)
    assert field in msg and words in msg
    assert "Traceback" not in msg


def test_unknown_field_is_reported():
    data = base()
    data["model"] = {"spaec": "box"}
    with pytest.raises(ConfigError, match=r"model\.spaec: unknown field"):
        Setting.from_dict(data)


def test_infonce_needs_sphere_model():
    data = base()
    data["model"] = {"space": "box"}
    with pytest.raises(ConfigError, match="needs model.space: sphere"):
        Setting.from_dict(data)


def test_out_dim_widens_the_representation_and_is_checked():
    import torch

    from unmix.experiment import Experiment
    from unmix.metrics.mcc import mcc

    data = base(dim=3)
    data["model"] = {"hidden": [4], "out_dim": 7}
    s = Setting.from_dict(data)
    assert s.out_dim == 7 and Setting.from_dict(base(dim=3)).out_dim == 3
    exp = Experiment.build(s)
    x = exp.mixing(exp.process.sample(64, torch.Generator().manual_seed(0)))
    z_hat = exp.encoder(x)
    assert z_hat.shape == (64, 7)  # sphere head on 7 dims
    assert torch.allclose(z_hat.norm(dim=1), torch.ones(64), atol=1e-5)
    # the surplus is unmatched: 3 true dims among 7 recovered ones
    z = torch.randn(200, 3)
    wide = torch.cat([torch.randn(200, 2), z[:, [2]], torch.randn(200, 2), z[:, :2]], 1)
    r = mcc(z, wide)
    assert float(r) == pytest.approx(1.0) and list(r.permutation) == [5, 6, 2]
    data["model"]["out_dim"] = 2
    with pytest.raises(ConfigError, match="model.out_dim 2 is below latent.dim 3"):
        Setting.from_dict(data)
    sup = base(dim=3)
    sup["model"] = {"hidden": [4], "out_dim": 4, "space": "unbounded"}
    sup["objective"] = {"kind": "supervised"}
    with pytest.raises(ConfigError, match="remove model.out_dim"):
        Setting.from_dict(sup)


def test_replace_validates_and_rejects_unknown_fields():
    s = presets.get("zimmermann-table1-row1").setting
    assert s.replace(**{"train.steps": 7}).train.steps == 7
    with pytest.raises(ConfigError, match="must be > 0|greater than 0"):
        s.replace(**{"latent.conditional.kappa": -2.0})
    with pytest.raises(ConfigError, match="train.stepz: unknown field"):
        s.replace(**{"train.stepz": 3})


def test_load_setting_suggests_close_preset():
    with pytest.raises(ConfigError, match="Did you mean 'zimmermann-table1-row1'"):
        load_setting("zimmermann-table1-rw1")


def test_presets_cover_both_tables():
    t1 = presets.in_group("zimmermann-table1")
    t2 = presets.in_group("zimmermann-table2")
    assert len(t1) == 12 and len(t2) == 10
    assert all("unsupervised" in p.paper for p in t1 + t2)


def test_m_column_matches_the_paper():
    """The rule in assumptions_match reproduces the paper's ✓/✗ column for every row."""
    t1 = [assumptions_match(p.setting, "affine") for p in presets.in_group("zimmermann-table1")]
    t2 = [
        assumptions_match(p.setting, "permutation") for p in presets.in_group("zimmermann-table2")
    ]
    assert t1 == [True] + [False] * 11
    assert t2 == [True, True] + [False] * 8
