"""One resolver with provenance: preset → budget → paper recipe → column → seeds → CLI, keyed by
content; `settings --show NAME --budget B` prints what `train NAME --budget B` runs."""

import json

import pytest
from typer.testing import CliRunner

from unmix.cli import app
from unmix.errors import ConfigError
from unmix.resolve import parse_overrides, resolve
from unmix.settings import Setting

runner = CliRunner()
FEW = ["train.steps=20", "train.eval_every=10", "train.eval_samples=256", "train.batch_size=64"]


def test_show_then_train_is_the_preset_run(tmp_path):
    """`settings --show NAME --budget quick > x.yaml && train x.yaml` == `train NAME --budget quick`."""
    shown = runner.invoke(
        app, ["settings", "--show", "zimmermann-table1-row1", "--budget", "quick", *FEW]
    )
    assert shown.exit_code == 0, shown.output
    (tmp_path / "x.yaml").write_text(shown.output)
    a, b = tmp_path / "a", tmp_path / "b"
    ra = runner.invoke(app, ["train", str(tmp_path / "x.yaml"), "--out", str(a), "--no-progress"])
    rb = runner.invoke(
        app,
        [
            "train",
            "zimmermann-table1-row1",
            "--budget",
            "quick",
            *FEW,
            "--out",
            str(b),
            "--no-progress",
        ],
    )
    assert ra.exit_code == 0 and rb.exit_code == 0, ra.output + rb.output
    assert (a / "config.yaml").read_text() == (b / "config.yaml").read_text()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert sa["r2"] == sb["r2"] and sa["mcc"] == sb["mcc"] and sa["loss"] == sb["loss"]
    prov = json.loads((b / "manifest.json").read_text())["provenance"]
    assert (
        prov["train.steps"] == "cli"
        and prov["latent.conditional.kind"] == "preset:zimmermann-table1-row1"
    )
    assert prov["model.hidden"] == "paper:zimmermann/quick"
    assert prov["train.lr_schedule"] == "budget:quick"
    assert json.loads((a / "manifest.json").read_text())["provenance"]["train.steps"].startswith(
        "file:"
    )


def test_the_recipe_is_keyed_by_content_not_by_name(tmp_path):
    shown = runner.invoke(app, ["settings", "--show", "zimmermann-table1-row1"])
    path = tmp_path / "mine.yaml"
    path.write_text(shown.output.replace("name: zimmermann-table1-row1", "name: my-own-row"))
    mine = resolve(str(path), "quick").setting
    preset = resolve("zimmermann-table1-row1", "quick").setting
    assert mine.replace(name=preset.name) == preset
    assert mine.train.steps == 30_000 and mine.model.hidden == (20, 20, 20)


def test_cli_overrides_land_in_config_and_provenance(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "train",
            "zimmermann-table1-row4",
            "train.lr=2e-3",
            "train.steps=30",
            "train.eval_samples=256",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    config = (out / "config.yaml").read_text()
    assert "lr: 0.002" in config and "steps: 30" in config
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["provenance"]["train.lr"] == "cli"
    assert manifest["provenance"]["train.steps"] == "cli"
    assert "train/batches" in manifest["streams"] and manifest["metrics"] == [
        "r2",
        "r2_in_sample",
        "mcc",
    ]


def test_layer_order_later_wins_and_defaults_are_not_listed():
    r = resolve(
        "zimmermann-table1-row5",
        "quick",
        column="supervised",
        seeds={"data": 2, "train": 3},
        overrides={"train.steps": 7},
    )
    s, prov = r.setting, r.provenance
    assert s.objective.kind == "supervised" and s.name == "zimmermann-table1-row5-supervised"
    assert s.train.steps == 7 and prov["train.steps"] == "cli"
    assert prov["objective.kind"] == "column:supervised"
    assert prov["seeds.data"] == prov["seeds.train"] == "seeds"
    assert "train.final_lr_factor" not in prov  # the budget sets it to its default value
    assert all(not k.startswith("mixing.") for k in prov)  # the preset keeps the default mixing


def test_overrides_parse_as_yaml_and_fail_one_line():
    assert parse_overrides(
        ["train.lr=2e-3", "model.hidden=[20, 20]", "objective.symmetric=true"]
    ) == {
        "train.lr": 0.002,
        "model.hidden": [20, 20],
        "objective.symmetric": True,
    }
    with pytest.raises(ConfigError, match="not key=value"):
        parse_overrides(["train.lr"])
    with pytest.raises(ConfigError, match="objective.tauu: unknown field"):
        resolve("zimmermann-table1-row1", overrides={"objective.tauu": 1})
    result = runner.invoke(app, ["train", "zimmermann-table1-row1", "train.lr=-1"])
    assert (
        result.exit_code == 2 and "train.lr" in result.output and "Traceback" not in result.output
    )


def test_reproduce_lists_every_target_of_every_paper():
    result = runner.invoke(app, ["reproduce", "zimmermann-table9", "--budget", "smoke"])
    assert result.exit_code == 2
    assert "zimmermann-table1" in result.output and "reizinger-fig5" in result.output


def test_every_preset_resolves_under_every_budget_and_round_trips_through_yaml():
    import yaml

    from unmix import papers
    from unmix.resolve import BUDGETS
    from unmix.settings import Setting

    for name in papers.PRESETS:
        for budget in (None, *BUDGETS):
            s = resolve(name, budget).setting
            again = Setting.from_dict(yaml.safe_load(s.to_yaml()))
            assert again == s, (name, budget)


def test_a_baseline_column_gets_the_recipe_of_its_own_content():
    """The quick rule for box rows with an unbounded encoder (τ, 16,000 steps for normal noise) is the
    contrastive objective's; the Supervised column regresses z and gets the regression's recipe,
    chosen by the paper's rule from the column's content. The column still wins on its own
    fields (Identity: no training)."""
    unsup = resolve("zimmermann-table1-row5", "quick").setting
    sup = resolve("zimmermann-table1-row5", "quick", column="supervised")
    ident = resolve("zimmermann-table1-row5", "quick", column="identity").setting
    assert (unsup.objective.tau, unsup.train.steps) == (0.005, 16_000)
    assert sup.setting.objective.kind == "supervised"
    assert (sup.setting.train.batch_size, sup.setting.train.steps) == (1024, 4000)
    assert sup.provenance["train.steps"] == "paper:zimmermann/quick"
    assert sup.provenance["objective.kind"] == "column:supervised"
    assert ident.model.kind == "identity" and ident.train.steps == 0


def test_quick_rule_for_box_rows_with_an_unbounded_encoder_follows_the_conditional():
    """Box latents, unbounded encoder, Lp loss, normal / Laplace / generalised-normal noise → the
    moment-matched τ = p·E|ε|^p, reached from the paper's τ = 1 over the first half of the run,
    batch 1,024, 8,000 steps; a bounded (box) encoder keeps the paper's τ = 1 and 4,000 steps."""
    from unmix.papers.zimmermann import matched_lp_tau

    for name, tau in [
        ("zimmermann-table1-row5", 0.005),  # Normal σ = 0.05, p = 2: 2σ²
        ("zimmermann-table1-row8", 0.000598),  # Normal, p = 3: 3·E|ε|³
        ("zimmermann-table1-row6", 0.01),  # Laplace λ = 0.05, p = 2: 2·2λ²
        ("zimmermann-table1-row7", 0.00225),  # Laplace, p = 3: 3·6λ³
        ("zimmermann-table2-row6", 0.05),  # Laplace, p = 1: λ
        ("zimmermann-table2-row7", 0.000125),  # GenNorm β = 3, p = 3: λ³
    ]:
        s = resolve(name, "quick").setting
        assert s.objective.tau == pytest.approx(tau)
        assert s.objective.tau == float(
            f"{matched_lp_tau(s.latent.conditional, s.objective.p):.3g}"
        )
        # normal noise (the most saturated task) trains twice as long as Laplace / GenNorm
        steps = 16_000 if s.latent.conditional.kind == "normal" else 8000
        assert (s.train.batch_size, s.train.steps) == (1024, steps)
        assert (s.objective.tau_start, s.objective.tau_warmup) == (1.0, 0.5)
    assert resolve("zimmermann-table1-row7", "paper").setting.objective.tau == 1.0


def test_quick_rule_for_box_models_trains_align_and_uniform_terms_on_the_unit_box():
    """Table 2's box-model rows 1-5 (matched or not): the alignment term at the conditional's
    matched weight 1/τ*, the uniformity term under the potential e^(−t‖·‖_p^p) with
    t = 5(p + 1)(p + 2)/6, on the unit box (sigmoid head, magnitude fixed at 1), 8,000 steps;
    the paper budget keeps the paper's L∞ head and Lp-InfoNCE; the Supervised column, the
    unbounded rows and Fig. 2's box points keep their rules."""
    from unmix.papers.zimmermann import matched_lp_tau

    # (row, p, 1/τ*, t): Laplace λ = 0.05 with p = 1: 1/λ; GenNorm β = 3 with p = 3: 1/λ³;
    # normal σ = 0.05 with p = 2: 1/(2σ²); Laplace with p = 2: 1/(2·2λ²); GenNorm with p = 1:
    # 1/E|ε| = Γ(1/3)/(λ·Γ(2/3))
    expected = [(1, 1.0, 20.0, 5.0), (2, 3.0, 8000.0, 16.7), (3, 2.0, 200.0, 10.0)]
    expected += [(4, 2.0, 100.0, 10.0), (5, 1.0, 39.6, 5.0)]
    for row, p, weight, t in expected:
        s = resolve(f"zimmermann-table2-row{row}", "quick").setting
        o = s.objective
        assert (o.kind, o.p, o.alpha, o.t, o.uniform_weight) == ("align_uniform", p, p, t, 1.0)
        assert o.align_weight == pytest.approx(weight, rel=1e-12)
        assert o.align_weight == float(f"{1 / matched_lp_tau(s.latent.conditional, p):.3g}")
        assert (s.model.space, s.model.learn_magnitude, s.train.steps) == (
            "box_sigmoid", False, 8000
        )  # fmt: skip
        paper = resolve(f"zimmermann-table2-row{row}", "paper").setting
        assert (paper.objective.kind, paper.model.space) == ("lp_infonce", "box")
    sup = resolve("zimmermann-table2-row1", "quick", column="supervised").setting
    assert sup.objective.kind == "supervised" and sup.train.steps == 4000
    assert sup.model.space == "box_sigmoid"  # a regression needs the box's interior
    assert sup.model.learn_magnitude  # ... and learns its magnitude as the paper's head does
    assert resolve("zimmermann-table1-row5", "quick", column="supervised").setting.model.space == (
        "unbounded"
    )
    for row in (6, 7, 8, 9, 10):  # the same losses on an unbounded model: Lp-InfoNCE
        s = resolve(f"zimmermann-table2-row{row}", "quick").setting
        assert s.objective.kind == "lp_infonce" and s.model.space == "unbounded"
    # Fig. 2's box points are Table 1 row 5 with the marginal swept: row 5's rule, whatever the
    # marginal (the rule reads the conditional, not the marginal)
    row5 = resolve("zimmermann-table1-row5", "quick").setting
    for name in ("zimmermann-fig2-box-invvar1", "zimmermann-fig2-box-invvar400"):
        s = resolve(name, "quick").setting
        assert s.latent.marginal.kind == "normal"
        assert (s.model, s.objective, s.train) == (row5.model, row5.objective, row5.train)
        assert (s.model.space, s.objective.tau, s.train.steps) == ("unbounded", 0.005, 16_000)


def test_quick_rule_for_weak_vmf_rows_warms_infonce_up():
    # sphere, vMF κ ≤ 1, InfoNCE: the alignment warm-up, 30,000 steps, the common lr
    for name in ("zimmermann-table1-row1", "zimmermann-fig2-sphere-kappa0.01"):
        s = resolve(name, "quick").setting
        assert (s.objective.align_start, s.objective.align_warmup) == (0.5, 0.5)
        assert s.train.steps == 30_000 and s.train.lr == 3e-3 and s.objective.tau == 1.0
    # a narrower conditional (κ = 10) has a strong signal per pair: no warm-up, 3,000 steps
    s = resolve("zimmermann-table1-row2", "quick").setting
    assert s.objective.align_warmup == 0.0 and s.train.steps == 3000
    # a setting of the same content with another objective keeps the earlier rule (lr 1e-3;
    # the rule reads the setting it is given — a CLI override of the objective comes after it)
    row1 = resolve("zimmermann-table1-row1").setting.to_dict()
    row1["objective"] = {"kind": "align_uniform"}
    au = resolve(Setting.from_dict(row1), "quick").setting
    assert au.train.lr == 1e-3 and au.train.steps == 30_000
    # the paper's own recipe is untouched
    assert resolve("zimmermann-table1-row1", "paper").setting.objective.align_warmup == 0.0
