import pandas as pd
import pytest
from typer.testing import CliRunner

from unmix import papers as presets
from unmix.cli import app
from unmix.errors import ConfigError
from unmix.papers.zimmermann import presets as zimmermann_presets
from unmix.reproduce import plan
from unmix.resolve import resolve

runner = CliRunner()


def column_setting(preset, column, budget, seed):
    return resolve(preset.name, budget, column=column, seeds={"data": seed, "train": seed}).setting


def test_plan_runs_baselines_only_where_the_paper_reports_them(tmp_path):
    items = plan("zimmermann-table1", "smoke", 2, tmp_path)
    cols = {(run.preset, run.column) for run, _, _ in items}
    assert ("zimmermann-table1-row1", "identity") in cols
    assert ("zimmermann-table1-row2", "identity") not in cols
    assert len(items) == 2 * (12 + 5 + 5)
    assert len({job.run_dir for *_, job in items}) == len(items)


def test_column_settings():
    p = presets.get("zimmermann-table1-row5")
    ident = column_setting(p, "identity", "smoke", 3)
    assert ident.model.kind == "identity" and ident.train.steps == 0
    assert ident.seeds.data == 3 and ident.seeds.train == 3
    sup = column_setting(p, "supervised", "smoke", 0)
    assert sup.objective.kind == "supervised" and sup.model.space == "unbounded"


def test_reproduce_table1_smoke_end_to_end(tmp_path):
    """The CI smoke run: every row of Table 1 trains briefly and the report sits beside the paper."""
    out = tmp_path / "results"
    result = runner.invoke(
        app,
        [
            "reproduce",
            "zimmermann-table1",
            "--budget",
            "smoke",
            "--out",
            str(out),
            "--workers",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out / "smoke" / "zimmermann-table1.csv")
    assert len(df) == 12 + 5 + 5
    assert df["r2"].between(-1, 1).all()
    md = (out / "smoke" / "zimmermann-table1.md").read_text()
    assert "99.42 ± 0.05" in md and md.count("\n| ") == 13  # header + 12 rows
    # CPU-minutes per row and in all, the recipe's departures beside each row, and the
    # time-to-identifiability figure
    assert "| CPU-min | recipe (where it departs from the paper) |" in md
    assert "Unsupervised runs: 12," in md and "CPU-minutes in all" in md and "; CPU time)" in md
    assert md.count("20 steps") == 12  # smoke trains 20 steps where the paper trains 100,000+
    assert (out / "smoke" / "zimmermann-table1-time.png").stat().st_size > 10_000
    assert df["cpu_time_s"].gt(0).all()
    # a second call finds every run finished and trains nothing
    again = runner.invoke(
        app, ["reproduce", "zimmermann-table1", "--budget", "smoke", "--out", str(out)]
    )
    assert again.exit_code == 0 and again.output.count("skip") == len(df)


def test_quick_budget_rule_matches_tau_to_the_conditional():
    from unmix.resolve import load_with_budget

    row2 = load_with_budget("zimmermann-table1-row2", "quick")  # vMF κ = 10 → τ = 1/κ
    assert row2.objective.tau == 0.1 and row2.model.standardize_input
    assert load_with_budget("zimmermann-table1-row4", "quick").objective.tau == 0.05
    paper = load_with_budget("zimmermann-table1-row2", "paper")  # the paper's own recipe
    assert paper.objective.tau == 1.0 and paper.train.batch_size == 6144
    assert paper.model.hidden == (10, 50, 50, 50, 50, 10) and not paper.model.standardize_input


def test_fig2_report_plots_r2_beside_the_mass_to_move(tmp_path):
    from unmix.papers.zimmermann.reports import fig2_report

    rows = [
        {"preset": p.name, "column": "unsupervised", "r2": 0.9, "cpu_time_s": 90.0}
        for p in presets.in_group("zimmermann-fig2")
    ]
    md = fig2_report(rows, tmp_path)
    assert md.count("| 1.5 |") == 12 and "12 runs, 18.0 CPU-minutes in all." in md
    assert (tmp_path / "zimmermann-fig2.png").stat().st_size > 10_000
    assert md.count("| sphere |") == len(zimmermann_presets.FIG2_SPHERE_KAPPAS)
    assert "| sphere | κ = 1 | 90.00 | 1 | 12.8 |" in md  # mass to move for vMF(κ=1) on S⁹: 12.83 %
    # several seeds: mean ± sample std (ddof 1), the seed count beside
    box1 = "zimmermann-fig2-box-invvar1"
    extra = [{"preset": box1, "column": "unsupervised", "r2": r2} for r2 in (0.94, 0.98)]
    md = fig2_report([r for r in rows if r["preset"] != box1] + extra, tmp_path)
    assert "| box | 1/σ² = 1 | 96.00 ± 2.83 | 2 |" in md


def test_fig2_time_to_identifiability_draws_one_line_per_point(tmp_path):
    from unmix.papers.zimmermann.reports import time_to_identifiability

    rows = []
    for p in presets.in_group("zimmermann-fig2"):
        run = tmp_path / p.name
        run.mkdir()
        (run / "metrics.csv").write_text(
            "step,r2,mcc,cpu_s\n1000,0.5,0.4,10.0\n2000,0.9,0.6,20.0\n"
        )
        rows.append({"preset": p.name, "column": "unsupervised", "seed": 0, "run_dir": str(run)})
    md = time_to_identifiability("zimmermann-fig2", rows, tmp_path)
    assert "zimmermann-fig2-time.png" in md
    assert (tmp_path / "zimmermann-fig2-time.png").stat().st_size > 10_000
    # no run directories: nothing to draw, no figure
    assert time_to_identifiability("zimmermann-fig2", [], tmp_path / "none") == ""


def test_identity_column_ignores_input_standardisation():
    from unmix.train import train

    s = column_setting(presets.get("zimmermann-table1-row1"), "identity", "quick", 0)
    assert s.model.kind == "identity"  # the column replaces the quick encoder entirely
    assert 0.5 < train(s).summary["r2"] < 0.8


def test_estimate_covers_the_identity_column(tmp_path):
    """The wall-time estimate printed before a quick/paper target times every distinct step,
    including the Identity column's model, which has no parameters to train (it used to crash
    ``unmix reproduce zimmermann-table1 --budget quick`` before the first run)."""
    from unmix.reproduce import estimate_seconds

    items = plan("zimmermann-table1", "smoke", 1, tmp_path)
    jobs = [job for run, _, job in items if run.preset == "zimmermann-table1-row1"]
    assert any(job.setting.model.kind == "identity" for job in jobs)
    secs = estimate_seconds(jobs, workers=1, probe_steps=1)
    assert 0 < secs < 600


def test_cpu_seconds_falls_back_to_wall_time_times_threads():
    from unmix.papers.zimmermann.reports import cpu_seconds

    assert cpu_seconds({"cpu_time_s": 12.5, "wall_time_s": 99.0}) == (12.5, True)
    assert cpu_seconds({"wall_time_s": 10.0, "threads": 2}) == (20.0, False)
    assert cpu_seconds({}) == (None, False)


def test_departures_name_the_fields_where_a_run_left_the_paper(tmp_path):
    from unmix import runs
    from unmix.papers.zimmermann.reports import departures

    preset = presets.get("zimmermann-table2-row1")
    used = preset.setting.replace(**{"model.space": "box_sigmoid", "objective.tau": 0.2})
    (tmp_path / runs.CONFIG).write_text(used.to_yaml())
    row = {"preset": preset.name, "column": "unsupervised", "run_dir": str(tmp_path)}
    assert departures(preset, [row]) == "sigmoid·b head (the reference code's), τ 0.2"
    (tmp_path / runs.CONFIG).write_text(preset.setting.to_yaml())
    assert departures(preset, [row]) == "as in the paper"
    sphere = presets.get("zimmermann-table1-row1")  # the warm-up needs a fixed-radius sphere
    warm = {"objective.align_start": 0.5, "objective.align_warmup": 0.5}
    (tmp_path / runs.CONFIG).write_text(sphere.setting.replace(**warm).to_yaml())
    row = {**row, "preset": sphere.name}
    assert departures(sphere, [row]) == "alignment warm-up (0.5 → 1 over 50% of steps)"
    box = presets.get("zimmermann-table1-row5")
    warm = {"objective.tau": 0.005, "objective.tau_start": 1.0, "objective.tau_warmup": 0.5}
    (tmp_path / runs.CONFIG).write_text(box.setting.replace(**warm).to_yaml())
    row = {**row, "preset": box.name}
    assert departures(box, [row]) == "τ 0.005, τ warm-up (1 → 0.005 over 50% of steps)"
    row3 = presets.get("zimmermann-table2-row3")  # align + uniform on the unit box
    au = {"objective": {"kind": "align_uniform", "align_weight": 200.0, "t": 10.0}}
    au.update({"model.space": "box_sigmoid", "model.learn_magnitude": False})
    (tmp_path / runs.CONFIG).write_text(row3.setting.replace(**au).to_yaml())
    row = {**row, "preset": row3.name}
    assert departures(row3, [row]) == (
        "sigmoid head, b fixed at 1 (the unit box), align + uniform terms in place of the "
        "Lp-InfoNCE (alignment weight 200, potential e^(−10·δ))"
    )


def test_report_only_writes_the_finished_runs_and_trains_nothing(tmp_path):
    """A sweep still running (or cut short): its report from the runs that finished, the others
    listed, nothing trained or moved."""
    from unmix.train import train

    out = tmp_path / "results"
    items = plan("zimmermann-table1", "smoke", 1, out)
    (run, _, job) = next(i for i in items if i[0].preset.endswith("row2"))
    train(job.setting, job.run_dir)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    args = ["reproduce", "zimmermann-table1", "--budget", "smoke", "--out", str(out)]
    result = runner.invoke(app, [*args, "--report-only"])
    assert result.exit_code == 0, result.output
    assert "21 planned run(s) not finished yet" in result.output
    df = pd.read_csv(out / "smoke" / "zimmermann-table1.csv")
    assert len(df) == 1 and df["r2"].between(-1, 1).all()
    md = (out / "smoke" / "zimmermann-table1.md").read_text()
    assert "**Partial report** (`--report-only`): 1 of 22 planned runs finished" in md
    assert "zimmermann-table1-row1" in md.split("Partial report")[1]  # listed as missing
    after = [p.relative_to(out) for p in out.rglob("*")]
    assert sorted(p for p in after if p.parts[0] != "smoke" or len(p.parts) > 2) == [
        p for p in before if p.parts[0] != "smoke" or len(p.parts) > 2
    ]  # no run trained, none moved (only the report files are new)


def test_a_report_names_the_runs_that_failed(tmp_path, monkeypatch):
    """A run that fails (here: diverged) is left out of the numbers and named in the report."""
    import unmix.reproduce as rep
    from unmix.sweep import JobOutcome

    real = rep.run_jobs

    def first_one_fails(jobs, **kw):
        err = "TrainingError: 'reizinger-fig5' diverged at step 3: the loss became nan."
        return [JobOutcome(jobs[0], None, error=err), *real(jobs[1:], **kw)]

    monkeypatch.setattr(rep, "run_jobs", first_one_fails)
    report = rep.reproduce("reizinger-fig5", "smoke", seeds=2, out=tmp_path)
    assert len(report.rows) == 1 and len(report.failures) == 1
    md = (tmp_path / "smoke" / "reizinger-fig5.md").read_text()
    assert "**Partial report**: 1 of 2 planned runs finished; failed: reizinger-fig5" in md
    assert "diverged at step 3" in md.split("Partial report")[1]


def test_overrides_scoped_to_a_column_or_a_row_reach_only_those_runs(tmp_path):
    # the Supervised column has no negatives: scoped to the unsupervised column, a negatives
    # override leaves it alone; a row's scope wins over the common value
    over = {
        "train.eval_every": 7,
        "unsupervised:objective.negatives": "queue",
        "unsupervised:objective.n_negatives": 64,
        "zimmermann-table4-row1:train.eval_every": 5,
    }
    items = plan("zimmermann-table4", "smoke", 1, tmp_path, overrides=over)
    by = {(run.preset, run.column): resolved.setting for run, resolved, _ in items}
    sup = by[("zimmermann-table4-row2", "supervised")]
    assert sup.objective.kind == "supervised" and sup.train.eval_every == 7
    for (preset, column), s in by.items():
        if column == "unsupervised":
            assert (s.objective.negatives, s.objective.n_negatives) == ("queue", 64)
            assert s.train.eval_every == (5 if preset.endswith("row1") else 7)
    with pytest.raises(ConfigError, match="scoped to 'identity'.*one of: supervised, unsupervised"):
        plan("zimmermann-table4", "smoke", 1, tmp_path, overrides={"identity:train.lr": 1e-3})
    with pytest.raises(ConfigError, match="names no field after its scope"):
        plan("zimmermann-table4", "smoke", 1, tmp_path, overrides={"unsupervised:": 3})
