"""Tracking: callbacks see every step and evaluation; --tensorboard writes event files."""

import pytest
from typer.testing import CliRunner

from unmix.cli import app
from unmix.settings import Setting
from unmix.tracking import Callback
from unmix.train import train

runner = CliRunner()


def tiny() -> Setting:
    return Setting.from_dict(
        {
            "name": "tiny",
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5.0}},
            "model": {"hidden": [4, 4]},
            "train": {"steps": 20, "batch_size": 32, "eval_every": 10, "eval_samples": 64},
        }
    )


class Recorder(Callback):
    def __init__(self):
        self.calls = []

    def on_start(self, info):
        self.calls.append(("start", info["start_step"]))

    def on_step(self, step, loss, lr):
        self.calls.append(("step", step))

    def on_eval(self, row):
        self.calls.append(("eval", row["step"], "mcc" in row))

    def on_end(self, summary):
        self.calls.append(("end", summary["status"]))


def test_callbacks_see_start_steps_evaluations_and_end():
    rec = Recorder()
    train(tiny(), callbacks=[rec])
    steps = [c[1] for c in rec.calls if c[0] == "step"]
    assert rec.calls[0] == ("start", 0) and rec.calls[-1] == ("end", "finished")
    assert steps == list(range(1, 21))
    assert [c for c in rec.calls if c[0] == "eval"] == [("eval", 10, True), ("eval", 20, True)]


def test_tensorboard_writes_event_files(tmp_path):
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    source = tmp_path / "s.yaml"
    source.write_text(tiny().to_yaml())
    result = runner.invoke(
        app, ["train", str(source), "--out", str(out), "--tensorboard", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    events = list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(out / "tensorboard"))
    acc.Reload()
    assert {"train/loss", "eval/r2", "eval/mcc"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("eval/mcc")] == [10, 20]


def test_keep_checkpoint_none_and_best(tmp_path):
    train(tiny().replace(**{"train.keep_checkpoint": "none"}), tmp_path / "a")
    assert not (tmp_path / "a" / "checkpoint.pt").exists()
    assert (tmp_path / "a" / "summary.json").exists()
    result = train(tiny().replace(**{"train.keep_checkpoint": "best"}), tmp_path / "b")
    assert result.summary["best_step"] in (10, 20) and result.summary["best_metric"] == "r2"
    from unmix.experiment import Experiment

    Experiment.from_run(tmp_path / "b")  # loads
