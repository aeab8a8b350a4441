"""Same seed, same numbers, whatever the worker count (the thread count is a setting field)."""

import pandas as pd
from typer.testing import CliRunner

from unmix.cli import app

runner = CliRunner()


def test_reproduce_smoke_gives_identical_numbers_with_one_or_two_workers(tmp_path):
    frames = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        args = ["reproduce", "zimmermann-table1", "--budget", "smoke", "--out", str(out)]
        result = runner.invoke(app, [*args, "--workers", str(workers)])
        assert result.exit_code == 0, result.output
        df = pd.read_csv(out / "smoke" / "zimmermann-table1.csv")
        frames.append(df.sort_values(["preset", "column", "seed"]).reset_index(drop=True))
    a, b = frames
    for col in ("r2", "r2_in_sample", "mcc"):
        assert (a[col] == b[col]).all(), col


def test_a_corrupt_summary_without_checkpoint_is_set_aside_not_blocking(tmp_path):
    out = tmp_path / "res"
    args = [
        "reproduce",
        "zimmermann-table1",
        "--budget",
        "smoke",
        "--out",
        str(out),
        "--no-baselines",
    ]
    assert runner.invoke(app, args).exit_code == 0
    run = out / "smoke" / "zimmermann-table1-row3" / "unsupervised-seed0"
    (run / "checkpoint.pt").unlink(missing_ok=True)  # (smoke runs keep none)
    (run / "summary.json").write_text("[]")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert list(run.glob("summary.json.unfinished-*"))  # kept, renamed
    assert pd.read_csv(out / "smoke" / "zimmermann-table1.csv").shape[0] == 12
