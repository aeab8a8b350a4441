"""`unmix settings` off a terminal: a plain, untruncated Markdown table; --json for the list and
for --show."""

import json

import yaml
from typer.testing import CliRunner

from unmix import papers
from unmix.cli import app
from unmix.settings import Setting

runner = CliRunner()


def test_settings_list_off_a_terminal_is_a_full_markdown_table():
    # CliRunner's stdout is not a terminal; a narrow COLUMNS must not truncate anything
    result = runner.invoke(app, ["settings"], env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == "| preset | space | p(z) | p(z̃\\|z) | model | objective | source |"
    assert lines[1] == "|---|---|---|---|---|---|---|"
    assert len(lines) == 2 + len(papers.PRESETS)
    assert not any(c in result.output for c in "┃━│…")  # no rich box drawing, no ellipsis
    names = [line.split(" | ")[0].removeprefix("| ") for line in lines[2:]]
    assert names == list(papers.PRESETS)
    row = next(line for line in lines if line.startswith("| zimmermann-table1-row1 |"))
    assert "Contrastive Learning Inverts the Data Generating Process, Table 1, row 1" in row


def test_settings_list_as_json():
    result = runner.invoke(app, ["settings", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["preset"] for r in rows] == list(papers.PRESETS)
    assert set(rows[0]) == {"preset", "space", "p(z)", "p(z̃|z)", "model", "objective", "source"}


def test_settings_show_as_json_is_the_resolved_setting():
    result = runner.invoke(
        app, ["settings", "--show", "zimmermann-table1-row5", "--budget", "smoke", "--json"]
    )
    assert result.exit_code == 0, result.output
    setting = Setting.from_dict(json.loads(result.output))
    yaml_out = runner.invoke(
        app, ["settings", "--show", "zimmermann-table1-row5", "--budget", "smoke"]
    ).output
    assert setting == Setting.from_dict(yaml.safe_load(yaml_out))
    assert setting.latent.space == "box"


def test_settings_on_a_terminal_keeps_the_rich_table(monkeypatch):
    monkeypatch.setattr("unmix.cli._is_terminal", lambda: True)
    result = runner.invoke(app, ["settings"], env={"COLUMNS": "250"})
    assert result.exit_code == 0 and "┃" in result.output


def test_library_warnings_reach_the_user_as_one_line():
    """Any command installs a formatter that prints a library warning as ``warning: …`` (no
    source line, no category), e.g. a stale run moved aside by ``unmix reproduce``."""
    import warnings

    from typer.testing import CliRunner

    from unmix.cli import _one_line_warning, app

    before = warnings.formatwarning
    try:
        assert CliRunner().invoke(app, ["settings"]).exit_code == 0
        assert warnings.formatwarning is _one_line_warning
        text = warnings.formatwarning("run kept as x.stale-1", UserWarning, "f.py", 3, "src")
        assert text == "warning: run kept as x.stale-1\n"
    finally:
        warnings.formatwarning = before


def test_reproduce_help_lists_every_registered_target():
    import re

    from unmix.cli import reproduce
    from unmix.papers import PAPERS

    doc = " ".join(reproduce.__doc__.split())
    for paper in PAPERS.values():
        for target in paper.targets:
            if paper.key in ("zimmermann", "reizinger"):  # the built-in papers
                assert re.search(rf"\b{re.escape(target)}\b", doc), target
