"""docs/extending.md, run as written: a user's module registers a mixing, an objective and a
metric; a YAML setting uses all three by name; `unmix train` runs it and reports the metric."""

import json
import re
import sys
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from unmix.cli import app
from unmix.registry import METRICS, MIXINGS, OBJECTIVES

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
runner = CliRunner()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def _unregister(*names: str) -> None:
    for reg, name in zip((MIXINGS, OBJECTIVES, METRICS), names, strict=True):
        reg._entries.pop(name, None)


def test_the_worked_example_trains_from_yaml_with_the_custom_metric(tmp_path, monkeypatch):
    plugin, python_use = _blocks("python")
    (tmp_path / "my_kinds.py").write_text(plugin)
    (tmp_path / "my_setting.yaml").write_text(_blocks("yaml")[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("unmix.plugins.LOADED", [])
    try:
        out = tmp_path / "runs" / "mine"
        args = ["train", "my_setting.yaml", "--plugin", "my_kinds.py", "--out", str(out)]
        result = runner.invoke(app, [*args, "--no-progress"])
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "summary.json").read_text())
        assert 0.0 <= summary["max_abs_corr"] <= 1.0
        assert {"r2", "mcc", "max_abs_corr"} <= set(summary) and summary["metrics"] == [
            "r2",
            "mcc",
            "max_abs_corr",
        ]
        assert "max_abs_corr" in pd.read_csv(out / "metrics.csv").columns
        manifest = json.loads((out / "manifest.json").read_text())
        assert any(p.endswith("my_kinds.py") for p in manifest["plugins"])
        assert manifest["provenance"]["mixing.kind"].startswith("file:")
        assert "rotation" in (out / "config.yaml").read_text()
        # the page's Python snippet: import the module, call the library
        monkeypatch.syspath_prepend(str(tmp_path))
        _unregister("rotation", "mean_squared_align", "max_abs_corr")
        sys.modules.pop("my_kinds", None)
        exec(compile(python_use, "extending.md", "exec"), {})
        assert (tmp_path / "runs" / "mine-py" / "summary.json").exists()
    finally:
        _unregister("rotation", "mean_squared_align", "max_abs_corr")
        sys.modules.pop("my_kinds", None)


def test_a_setting_naming_an_unregistered_kind_says_how_to_register_it(tmp_path):
    text = _blocks("yaml")[0].replace("rotation", "rotation_not_loaded")
    (tmp_path / "s.yaml").write_text(text)
    result = runner.invoke(app, ["train", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "unknown mixing kind 'rotation_not_loaded'" in result.output
    assert "register_mixing" in result.output and "Traceback" not in result.output


def test_a_missing_plugin_is_one_line(tmp_path):
    result = runner.invoke(
        app, ["settings", "--show", "zimmermann-table1-row1", "--plugin", "nope.py"]
    )
    assert result.exit_code == 2 and "no such file" in result.output
