"""unmix.results: a trained run as an object (load_run, encode), many runs as a table (gather,
`unmix results`)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from unmix import runs
from unmix.cli import app
from unmix.errors import CheckpointError, ConfigError
from unmix.results import gather, load_run
from unmix.settings import Setting
from unmix.train import train

runner = CliRunner()
TRAIN = {"steps": 10, "batch_size": 32, "lr": 1e-3, "eval_every": 5, "eval_samples": 64}


def contrastive(seed: int = 0) -> Setting:
    return Setting.from_dict(
        {
            "name": "tiny",
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5.0}},
            "model": {"hidden": [4, 4]},
            "train": TRAIN,
            "seeds": {"train": seed},
        }
    )


def vae() -> Setting:
    return Setting.from_dict(
        {
            "name": "vae-tiny",
            "latent": {"space": "box", "dim": 2, "low": -0.5, "high": 0.5},
            "mixing": {"kind": "moebius"},
            "model": {"kind": "vae", "hidden": [4], "vae": {"prior": "uniform", "gamma2": 1e3}},
            "objective": {"kind": "elbo"},
            "train": TRAIN,
        }
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    train(contrastive(0), root / "a" / "t0")
    train(contrastive(1), root / "a" / "t1")
    return root


def test_load_run_round_trips_a_trained_run(two_runs):
    run = load_run(two_runs / "a" / "t0")
    assert run.setting == contrastive(0)
    assert run.summary["status"] == "finished" and run.manifest["setting"] == "tiny"
    assert isinstance(run.metrics, pd.DataFrame) and list(run.metrics["step"]) == [5, 10]
    assert run.summary["mcc"] == pytest.approx(run.metrics["mcc"].iloc[-1])


def test_encode_gives_the_experiments_features(two_runs):
    run = load_run(two_runs / "a" / "t1")
    exp = run.model()
    assert run.model() is exp and not exp.encoder.training
    z = exp.eval_data(50)
    x = exp.mixing(z)
    feats = run.encode(x.numpy())
    assert isinstance(feats, np.ndarray) and feats.shape == (50, 3)
    np.testing.assert_allclose(feats, exp.encode_eval(z).double().numpy(), rtol=1e-6)
    np.testing.assert_allclose(run.encode(x), feats)  # a torch tensor in, the same out


def test_encode_of_a_vae_is_the_posterior_mean(tmp_path):
    train(vae(), tmp_path / "vae")
    run = load_run(tmp_path / "vae")
    exp = run.model()
    z = exp.eval_data(40)
    feats = run.encode(exp.mixing(z).numpy())
    np.testing.assert_allclose(feats, exp.encode_eval(z).double().numpy(), rtol=1e-6)
    assert ((feats > 0) & (feats < 1)).all()  # the uniform prior's box


def test_missing_or_damaged_directories_are_one_line_errors(two_runs, tmp_path):
    with pytest.raises(ConfigError, match="does not exist") as err:
        load_run(tmp_path / "nowhere")
    assert "\n" not in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no summary.json"):
        load_run(tmp_path / "empty")
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(two_runs / "a" / "t0", bad)
    (bad / runs.SUMMARY).write_text("{ not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_run(bad)
    shutil.copy(two_runs / "a" / "t0" / runs.SUMMARY, bad / runs.SUMMARY)
    (bad / runs.CONFIG).write_text("latent: {space: cube, dim: 3}\n")
    with pytest.raises(CheckpointError) as err:
        load_run(bad)
    assert "\n" not in str(err.value) and "latent.space" in str(err.value)
    (bad / runs.CONFIG).write_text((two_runs / "a" / "t0" / runs.CONFIG).read_text())
    (bad / runs.CHECKPOINT).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_run(bad).encode(torch.zeros(2, 3))


def test_gather_two_runs(two_runs):
    df = gather([two_runs])
    assert len(df) == 2 and list(df["seed_train"]) == [0, 1]
    assert list(df.columns[:4]) == ["name", "seed_data", "seed_train", "status"]
    assert {"r2", "mcc", "loss", "steps", "train_time_s", "wall_time_s", "path"} <= set(df.columns)
    assert (df["status"] == "finished").all() and (df["name"] == "tiny").all()
    assert df.loc[0, "mcc"] == pytest.approx(load_run(df.loc[0, "path"]).summary["mcc"])
    # a run given twice (directly and through its folder) is one row
    assert len(gather([two_runs / "a" / "t0", two_runs / "a"])) == 2


def test_cli_results_markdown_csv_and_json(two_runs, tmp_path):
    out = tmp_path / "table.csv"
    result = runner.invoke(app, ["results", str(two_runs), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("| name | seed_data | seed_train | status |")
    assert len(lines) == 4 and "| tiny |" in lines[2]
    assert len(pd.read_csv(out)) == 2
    result = runner.invoke(app, ["results", str(two_runs), "--json"])
    records = json.loads(result.output)
    assert [r["seed_train"] for r in records] == [0, 1]
    result = runner.invoke(app, ["results", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "does not exist" in result.output
