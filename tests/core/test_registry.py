"""Stage registries: built-ins and users' kinds register the same way; specs come from the
factories' keyword-only parameters; every mistake is one readable line."""

from typing import Annotated

import pytest
from pydantic import Field

from unmix.errors import ConfigError
from unmix.registry import METRICS, MIXINGS, MODELS, OBJECTIVES, Registry
from unmix.settings import Setting

BASE = {"latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 1}}}


def test_every_built_in_kind_is_registered():
    assert {"invertible_mlp", "identity", "moebius", "sprites", "scenes3d"} <= set(MIXINGS.names())
    assert set(OBJECTIVES.names()) >= {
        "infonce",
        "lp_infonce",
        "supervised",
        "align_uniform",
        "elbo",
    }
    assert {"mlp", "identity", "vae", "slowvae"} <= set(MODELS.names())
    assert {"r2", "r2_in_sample", "mcc", "factors", "vae", "dci", "mig", "sap"} <= set(
        METRICS.names()
    )


def test_spec_from_signature_validates_types_ranges_and_unknown_fields():
    reg = Registry("thing", context=("dim",))

    @reg.register("scaled")
    def scaled(dim: int, *, factor: Annotated[float, Field(gt=0)] = 2.0, label: str = "x"):
        return (dim, factor, label)

    spec = reg.validate({"kind": "scaled", "factor": 3})
    assert spec.factor == 3.0 and spec.label == "x"
    assert reg.build(spec, dim=5) == (5, 3.0, "x")
    with pytest.raises(ConfigError, match="factor: Input should be greater than 0"):
        reg.validate({"kind": "scaled", "factor": -1})
    with pytest.raises(ConfigError, match="colour: unknown field"):
        reg.validate({"kind": "scaled", "colour": 1})
    with pytest.raises(ConfigError, match="unknown thing kind 'scaledd'. Did you mean 'scaled'"):
        reg.validate({"kind": "scaledd"})


def test_registration_mistakes_are_refused():
    reg = Registry("thing", context=("dim",))

    @reg.register("a")
    def a(dim, *, x: int = 1):
        return x

    with pytest.raises(ConfigError, match="registered already"):
        reg.register("a")(a)
    reg.register("a", replace=True)(a)  # an explicit replacement is fine
    with pytest.raises(ConfigError, match="cannot be validated"):
        reg.register("b")(lambda dim, **kw: None)
    with pytest.raises(ConfigError, match="not supplied by unmix"):

        @reg.register("c")
        def c(width, *, x: int = 1):
            return x

    with pytest.raises(ConfigError, match="'kind' names the registered kind"):

        @reg.register("d")
        def d(*, kind: str = "x"):
            return kind


def test_sections_hold_only_their_kinds_fields():
    s = Setting.from_dict({**BASE, "mixing": {"kind": "moebius"}})
    assert set(s.to_dict()["mixing"]) == {"kind", "center", "center_samples"}
    assert "p" not in s.to_dict()["objective"]
    with pytest.raises(ConfigError, match="mixing.n_layers: unknown field"):
        Setting.from_dict({**BASE, "mixing": {"kind": "moebius", "n_layers": 5}})


def test_old_flat_sections_still_load_when_their_extra_fields_hold_the_old_defaults():
    old = {
        **BASE,
        "mixing": {"kind": "moebius", "n_layers": 3, "cond_pool_size": 25000, "image_size": 64},
        "objective": {"kind": "infonce", "p": None, "kl_weight": 1.0, "align_weight": 1.0},
        "model": {"kind": "mlp", "vae": None},
    }
    s = Setting.from_dict(old)
    assert s.mixing.kind == "moebius" and not hasattr(s.mixing, "n_layers")


def test_a_registered_objective_without_the_contract_is_refused_at_build():
    from unmix.experiment import Experiment

    @OBJECTIVES.register("not_a_module_test")
    def bad():
        return 42

    try:
        s = Setting.from_dict({**BASE, "objective": {"kind": "not_a_module_test"}})
        with pytest.raises(ConfigError, match="objective\\(model, batch\\)"):
            Experiment.build(s)
    finally:
        OBJECTIVES._entries.pop("not_a_module_test")
