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
    """The quick rule for box rows (align + uniform, 8,000 steps) is the contrastive objective's; the Supervised column regresses z and gets the regression's recipe,
    chosen by the paper's rule from the column's content. The column still wins on its own
    fields (Identity: no training)."""
    unsup = resolve("zimmermann-table1-row5", "quick").setting
    sup = resolve("zimmermann-table1-row5", "quick", column="supervised")
    ident = resolve("zimmermann-table1-row5", "quick", column="identity").setting
    assert (unsup.objective.kind, unsup.train.steps) == ("align_uniform", 8000)
    assert sup.setting.objective.kind == "supervised"
    assert (sup.setting.train.batch_size, sup.setting.train.steps) == (1024, 4000)
    assert sup.provenance["train.steps"] == "paper:zimmermann/quick"
    assert sup.provenance["objective.kind"] == "column:supervised"
    assert ident.model.kind == "identity" and ident.train.steps == 0


def test_quick_rule_for_box_latents_trains_align_and_uniform_terms():
    """Box latents of a uniform marginal, an Lp loss, normal / Laplace / generalised-normal noise
    (Tables 1-2): the alignment term at the conditional's matched weight 1/τ*, the uniformity term
    under e^(−t‖·‖_p^p) with t = 5(p + 1)(p + 2)/6, 8,000 steps; a box model on the unit box
    (sigmoid head, magnitude fixed at 1), an unbounded one as it is. The paper budget keeps the
    paper's Lp-InfoNCE; the Supervised column keeps its rule."""
    from unmix.papers.zimmermann import matched_lp_tau

    # (preset, p, 1/τ*, t): Laplace λ = 0.05: p = 1 1/λ, p = 2 1/(2·2λ²), p = 3 1/(3·6λ³);
    # normal σ = 0.05: p = 2 1/(2σ²), p = 3 1/(3·E|ε|³); GenNorm β = 3: p = 3 1/λ³,
    # p = 1 1/E|ε| = Γ(1/3)/(λ·Γ(2/3))
    box = [("table2-row1", 1.0, 20.0, 5.0), ("table2-row2", 3.0, 8000.0, 16.7)]
    box += [("table2-row3", 2.0, 200.0, 10.0), ("table2-row4", 2.0, 100.0, 10.0)]
    box += [("table2-row5", 1.0, 39.6, 5.0)]
    unbounded = [("table1-row5", 2.0, 200.0, 10.0), ("table1-row6", 2.0, 100.0, 10.0)]
    unbounded += [("table1-row7", 3.0, 444.0, 16.7), ("table1-row8", 3.0, 1670.0, 16.7)]
    unbounded += [("table2-row6", 1.0, 20.0, 5.0), ("table2-row7", 3.0, 8000.0, 16.7)]
    unbounded += [("table2-row10", 3.0, 1670.0, 16.7)]
    for group, space in ((box, "box_sigmoid"), (unbounded, "unbounded")):
        for name, p, weight, t in group:
            s = resolve(f"zimmermann-{name}", "quick").setting
            o = s.objective
            assert (o.kind, o.p, o.alpha, o.t, o.uniform_weight) == ("align_uniform", p, p, t, 1.0)
            assert o.align_weight == pytest.approx(weight, rel=1e-12)
            assert o.align_weight == float(f"{1 / matched_lp_tau(s.latent.conditional, p):.3g}")
            assert (s.model.space, s.train.steps, s.train.batch_size) == (space, 8000, 1024)
            assert s.model.learn_magnitude is (space == "unbounded")
            paper = resolve(f"zimmermann-{name}", "paper").setting
            assert paper.objective.kind == "lp_infonce"
            assert paper.model.space == ("box" if space == "box_sigmoid" else "unbounded")
    sup = resolve("zimmermann-table2-row1", "quick", column="supervised").setting
    assert sup.objective.kind == "supervised" and sup.train.steps == 4000
    assert sup.model.space == "box_sigmoid"  # a regression needs the box's interior
    assert sup.model.learn_magnitude  # ... and learns its magnitude as the paper's head does
    assert resolve("zimmermann-table1-row5", "quick", column="supervised").setting.model.space == (
        "unbounded"
    )
    # Fig. 2's box points are Table 1 row 5 with a normal marginal swept: box_align_uniform's
    # potential is set for uniform latents (it collapses them at 1/σ² ≥ 100), so they keep the
    # Lp-InfoNCE at the moment-matched τ, warmed up from 1, 16,000 steps for normal noise
    row5 = resolve("zimmermann-table1-row5", "quick").setting
    for name in ("zimmermann-fig2-box-invvar1", "zimmermann-fig2-box-invvar400"):
        s = resolve(name, "quick").setting
        assert s.latent.marginal.kind == "normal" and s.model == row5.model
        o = s.objective
        assert (o.kind, o.p, o.tau, o.tau_start, o.tau_warmup) == (
            "lp_infonce",
            2.0,
            0.005,
            1.0,
            0.5,
        )
        assert (s.model.space, s.train.steps, s.train.batch_size) == ("unbounded", 16_000, 1024)


def test_fig2_negatives_are_the_other_anchors_at_every_budget():
    """Eq. 1 draws negatives from the marginal p(x): in Fig. 2, whose conditional widens the
    marginal, those are the batch's other anchors, not its other positives. Tables 1–2 (uniform
    marginals, where the two coincide in distribution) keep the default candidates."""
    from unmix.papers.zimmermann import presets as zp

    names = [f"zimmermann-fig2-sphere-kappa{k:g}" for k in zp.FIG2_SPHERE_KAPPAS] + [
        f"zimmermann-fig2-box-invvar{iv:g}" for iv in zp.FIG2_BOX_INVVARS
    ]
    for name in names:
        for budget in ("paper", "quick", "smoke"):
            o = resolve(name, budget).setting.objective
            assert (o.cross_view_negatives, o.same_view_negatives, o.include_self) == (
                False,
                True,
                False,
            ), (name, budget)
    for name in ("zimmermann-table1-row1", "zimmermann-table1-row5", "zimmermann-table2-row1"):
        o = resolve(name, "paper").setting.objective
        assert (o.cross_view_negatives, o.same_view_negatives) == (True, False), name


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
