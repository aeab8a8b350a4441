"""The README's "Using it" shell block runs in order on a fresh directory (at smoke sizes)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SMOKE = [  # (pattern, replacement): the same commands at smoke sizes
    (r"(reproduce|render|train) (.*)--budget quick", r"\1 \2--budget smoke"),
    (r"--seeds 3", "--seeds 1"),
    (r"--n 10000", "--n 64"),
    (r"--steps 5000", "--steps 8"),
    (r"--steps 8000", "--steps 12"),
    (r"train\.steps=\d+", "train.steps=8"),
    (r"--batch-size 6144", "--batch-size 256"),
    (r"verify all", "verify ima"),
]


def using_it_commands() -> list[str]:
    text = README.read_text()
    section = text.split("## Using it", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    cmds = []
    for line in block.splitlines():
        line = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
        if line:
            cmds.append(line)
    return cmds


def smoke(cmd: str) -> str:
    for pattern, repl in SMOKE:
        cmd = re.sub(pattern, repl, cmd)
    return cmd


def test_the_block_only_uses_commands_that_exist():
    from unmix.cli import app

    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    for cmd in using_it_commands():
        words = shlex.split(cmd)
        assert words[0] in ("unmix", "python"), cmd
        if words[0] == "unmix":
            assert words[1] in names, cmd


@pytest.mark.slow
def test_the_using_it_block_runs_in_order(tmp_path):
    env = {**os.environ, "UNMIX_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    for cmd in using_it_commands():
        cmd = smoke(cmd)
        words = shlex.split(cmd.split(">", 1)[0])
        if words[0] == "unmix":
            words = [sys.executable, "-m", "unmix", *words[1:]]
        run = subprocess.run(
            words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, f"{cmd}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        if ">" in cmd:  # a redirect: keep what the command printed
            (tmp_path / cmd.split(">", 1)[1].strip()).write_text(run.stdout)
