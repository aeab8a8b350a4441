"""Every bad input gets one readable line naming the field or argument and the fix (exit 2) —
never a traceback. One parametrised case per input class (docs/reliability.md lists them)."""

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from unmix.cli import app

runner = CliRunner()
GOOD = """name: ok
latent: {space: sphere, dim: 3, conditional: {kind: vmf, kappa: 5}}
model: {hidden: [4, 4]}
train: {steps: 4, batch_size: 32, eval_every: 4, eval_samples: 64}
"""


def _yaml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def _edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


SETTING_CASES = {
    "directory as config": lambda t: str(t),
    "non-UTF-8 file": lambda t: (
        (t / "b.yaml").write_bytes(b"\xff\xfe latent") and str(t / "b.yaml")
    ),
    "missing file": lambda t: str(t / "missing.yaml"),
    "invalid YAML": lambda t: _yaml(t, "latent: [unclosed"),
    "duplicate keys": lambda t: _yaml(t, GOOD + "name: again\n"),
    "a list, not a mapping": lambda t: _yaml(t, "- 1\n- 2\n"),
    "negative width": lambda t: _yaml(t, _edit("hidden: [4, 4]", "hidden: [2, -1]")),
    "zero width": lambda t: _yaml(t, _edit("hidden: [4, 4]", "hidden: [0]")),
    "dim: true": lambda t: _yaml(t, _edit("dim: 3", "dim: true")),
    "dim 1e6": lambda t: _yaml(t, _edit("dim: 3", "dim: 1000000")),
    "batch 1e9": lambda t: _yaml(t, _edit("batch_size: 32", "batch_size: 1000000000")),
    "eval_samples 1e10": lambda t: _yaml(t, _edit("eval_samples: 64", "eval_samples: 10000000000")),
    "lr inf": lambda t: _yaml(t, _edit("steps: 4,", "steps: 4, lr: .inf,")),
    "lr nan": lambda t: _yaml(t, _edit("steps: 4,", "steps: 4, lr: .nan,")),
    "unknown kind": lambda t: _yaml(t, GOOD + "mixing: {kind: mobius}\n"),
    "unknown field": lambda t: _yaml(t, GOOD + "objective: {kind: infonce, tauu: 1}\n"),
    "seed 2^63": lambda t: _yaml(t, GOOD + "seeds: {data: 9223372036854775808}\n"),
    "center_samples 1e12": lambda t: _yaml(
        t, GOOD + "mixing: {kind: invertible_mlp, center: true, center_samples: 1000000000000}\n"
    ),
    "cond_pool_size 1e11": lambda t: _yaml(
        t, GOOD + "mixing: {kind: invertible_mlp, cond_pool_size: 100000000000}\n"
    ),
    "memory beyond the machine": lambda t: _yaml(t, _edit("dim: 3", "dim: 90000")),
    "warm-up start without a warm-up": lambda t: _yaml(
        t, GOOD + "objective: {kind: infonce, align_start: 0.5}\n"
    ),
    "temperature warm-up without its start": lambda t: _yaml(
        t, GOOD + "objective: {kind: infonce, tau_warmup: 0.5}\n"
    ),
    "fewer outputs than latents": lambda t: _yaml(
        t, _edit("hidden: [4, 4]", "hidden: [4, 4], out_dim: 2")
    ),
    "warm-up on features of free scale": lambda t: _yaml(
        t,
        _edit(
            "sphere, dim: 3, conditional: {kind: vmf, kappa: 5}",
            "box, dim: 3, conditional: {kind: normal, scale: 0.1}",
        ).replace("hidden: [4, 4]", "hidden: [4, 4], space: box")
        + "objective: {kind: lp_infonce, p: 2, align_start: 0.5, align_warmup: 0.5}\n",
    ),
}


def _one_line_error(result) -> None:
    out = result.output
    assert result.exit_code == 2, out
    assert "Traceback" not in out and "Error:" not in out.replace("error:", "")
    assert out.lstrip().startswith("error:"), out


@pytest.mark.parametrize("case", sorted(SETTING_CASES))
def test_bad_settings_are_one_line(tmp_path, case):
    source = SETTING_CASES[case](tmp_path)
    result = runner.invoke(app, ["train", source, "--out", str(tmp_path / "run"), "--no-progress"])
    _one_line_error(result)
    assert len([ln for ln in result.output.splitlines() if ln.startswith("error:")]) == 1


def test_error_text_is_printed_literally(tmp_path):
    source = _yaml(
        tmp_path, _edit("model: {hidden: [4, 4]}", "model: {backbone: conv, hidden: [4, 4]}")
    )
    result = runner.invoke(app, ["train", source, "--out", str(tmp_path / "r")])
    _one_line_error(result)
    assert "got [4, 4]" in result.output  # rich markup would have eaten the brackets


def _trained(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    result = runner.invoke(
        app, ["train", _yaml(tmp_path, GOOD), "--out", str(run), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    (run / "summary.json").unlink()
    return run


CHECKPOINTS = {
    "unpickles to a list": lambda p: torch.save([1, 2, 3], p),
    "lacks keys": lambda p: torch.save({"step": 1}, p),
    "corrupt bytes": lambda p: p.write_bytes(b"not a checkpoint at all"),
    "empty file": lambda p: p.write_bytes(b""),
}


@pytest.mark.parametrize("case", sorted(CHECKPOINTS))
def test_bad_checkpoints_are_one_line(tmp_path, case):
    run = _trained(tmp_path)
    CHECKPOINTS[case](run / "checkpoint.pt")
    result = runner.invoke(
        app, ["train", str(run / "config.yaml"), "--out", str(run), "--resume", "--no-progress"]
    )
    _one_line_error(result)


def test_out_paths_are_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "below", Path("/proc/unmix-run")):
        result = runner.invoke(app, ["train", _yaml(tmp_path, GOOD), "--out", str(out)])
        _one_line_error(result)


def test_an_unsafe_name_cannot_write_outside_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = _yaml(tmp_path, GOOD.replace("name: ok", "name: ../../escape"))
    result = runner.invoke(app, ["train", source, "--no-progress"])
    assert result.exit_code == 0, result.output
    made = [p for p in (tmp_path / "runs").iterdir()]
    assert len(made) == 1 and made[0].parent == tmp_path / "runs" and "/" not in made[0].name
    assert not (tmp_path.parent / "escape-d0-t0").exists()


CLI_CASES = {
    "bench batch 0": ["bench", "--batch-size", "0"],
    "bench steps 0": ["bench", "--steps", "0"],
    "data seed 1e20": ["train", "zimmermann-table1-row1", "--data-seed", "1e20"],
    "train on cuda without CUDA": ["train", "zimmermann-table1-row1", "--device", "cuda"],
    "bench on cuda without CUDA": ["bench", "--device", "cuda:3", "--steps", "1"],
    "reproduce on cuda without CUDA": [
        "reproduce",
        "zimmermann-table1",
        "--budget",
        "smoke",
        "--device",
        "cuda",
    ],
    "unknown device": ["train", "zimmermann-table1-row1", "--device", "tpu"],
    "override without =": ["train", "zimmermann-table1-row1", "train.lr"],
    "unknown budget": ["train", "zimmermann-table1-row1", "--budget", "huge"],
    "unknown target": ["reproduce", "zimmermann-table9"],
    "unknown preset": ["train", "zimmermann-table1-rw1"],
    "sample n 0": ["sample", "zimmermann-table1-row1", "--n", "0"],
    "seeds 0": ["reproduce", "zimmermann-table1", "--budget", "smoke", "--seeds", "0"],
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_bad_arguments_are_one_line(case):
    if "CUDA" in case and torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = runner.invoke(app, CLI_CASES[case])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_verify_plots_onto_a_file_is_one_line(tmp_path):
    f = tmp_path / "plots"
    f.write_text("x")
    _one_line_error(runner.invoke(app, ["verify", "ima", "--plots", str(f)]))


def test_summary_json_is_strict_json(tmp_path):
    run = tmp_path / "run"
    source = _yaml(tmp_path, GOOD)
    assert runner.invoke(app, ["train", source, "--out", str(run), "--no-progress"]).exit_code == 0
    json.loads((run / "summary.json").read_text(), parse_constant=pytest.fail)
