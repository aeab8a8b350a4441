"""A user's own paper (register_paper) reproduced by the one driver — and a sweep in which one
worker is killed -9 still trains the other runs and writes the report, listing the failure."""

import json
import sys
import textwrap

from typer.testing import CliRunner

from unmix.cli import app

runner = CliRunner()

PLUGIN = textwrap.dedent(
    """
    import os
    import signal

    import unmix
    from unmix.objectives.base import Contrastive
    from unmix.objectives.infonce import InfoNCE
    from unmix.settings import Setting


    class DieAtStep3(Contrastive):
        def __init__(self):
            super().__init__(InfoNCE())
            self.calls = 0

        def forward(self, model, batch):
            self.calls += 1
            if self.calls == 3:
                os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
            return super().forward(model, batch)


    @unmix.register_objective("die_at_step3", replace=True)
    def die_at_step3():
        return DieAtStep3()


    def preset(name, objective):
        setting = Setting.from_dict({
            "name": name,
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5}},
            "model": {"hidden": [4]},
            "objective": objective,
            "train": {"steps": 6, "batch_size": 32, "eval_every": 6, "eval_samples": 64},
        })
        return unmix.Preset(name, setting, "my paper, Table 1", "mcc", {"unsupervised": (90.0, 1.0)}, "my-table")


    def plan(seeds, baselines=True):
        return [unmix.PlannedRun(p, s, subdir=f"{p}/seed{s}")
                for p in ("my-row-ok", "my-row-dies", "my-row-ok2") for s in range(seeds)]


    def report(rows, folder, budget, seeds):
        lines = ["| preset | MCC |", "|---|---|"]
        lines += [f"| {r['preset']} | {r['mcc']:.3f} |" for r in rows]
        return "\\n".join(lines) + "\\n"


    unmix.register_paper(unmix.Paper(
        key="my-paper",
        title="My paper",
        presets={p.name: p for p in (preset("my-row-ok", {"kind": "infonce"}),
                                      preset("my-row-dies", {"kind": "die_at_step3"}),
                                      preset("my-row-ok2", {"kind": "infonce", "tau": 0.5}))},
        targets={"my-table": unmix.Target("my-table", "my-paper", plan, report)},
    ), replace=True)
    """
)


def test_a_user_paper_reproduces_and_a_killed_worker_fails_only_its_run(tmp_path, monkeypatch):
    monkeypatch.setattr("unmix.plugins.LOADED", [])  # this test's plugin stays its own
    plugin = tmp_path / "my_paper.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "results"
    args = [
        "reproduce",
        "my-table",
        "--budget",
        "smoke",
        "--out",
        str(out),
        "--workers",
        "2",
        "--plugin",
        str(plugin),
    ]
    try:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output  # one failed run → exit 1, report written
        md = (out / "smoke" / "my-table.md").read_text()
        table, note = md.split("**Partial report**: 2 of 3 planned runs finished; failed: ")
        assert "my-row-ok " in table and "my-row-ok2" in table and "my-row-dies" not in table
        assert note.startswith("my-row-dies/") and "SIGKILL" in note  # named beneath the table
        assert "my-row-dies" in result.output and "SIGKILL" in result.output
        for name in ("my-row-ok", "my-row-ok2"):
            summary = json.loads((out / "smoke" / name / "seed0" / "summary.json").read_text())
            assert summary["status"] == "finished"
        listed = runner.invoke(app, ["settings", "--plugin", str(plugin)])
        assert "my-row-dies" in listed.output
    finally:
        from unmix.papers import base
        from unmix.registry import OBJECTIVES

        base.PAPERS.pop("my-paper", None)
        for name in ("my-row-ok", "my-row-dies", "my-row-ok2"):
            base.PRESETS.pop(name, None)
        base.TARGETS.pop("my-table", None)
        OBJECTIVES._entries.pop("die_at_step3", None)
        sys.modules.pop("unmix_plugin_my_paper", None)
