"""Quick-budget step time, now against the code the performance issue measured, in one run.

The performance issue gave the quick budget's step times (ms, one thread) as absolute figures on
its machine. A figure taken on another machine cannot be compared with them, so this script
times both codes here, alternately: a checkout of the issue's commit (``--baseline-tree``; the
issue was filed at ``83fe6b8``, its quick figures come from that code) and this tree. Each
measurement is a fresh process with ``PYTHONPATH=<tree>/src``, one torch thread, which loads
the preset with the quick budget of its own tree and runs that tree's ``unmix.bench.bench_steps``
(``--steps`` timed steps after 2 warm-up ones; the median per stage).

Three arms per preset, alternated ``--rounds`` times (the median of the rounds is printed):

* ``issue`` — the baseline tree, its quick setting;
* ``now, issue's setting`` — this tree with the baseline's quick setting where it costs time:
  batch size, hidden widths, input standardisation, model space and the objective (kind, τ, p),
  i.e. the same step as ``issue`` on today's code;
* ``now`` — this tree, its own quick setting (what ``--budget quick`` trains today: Table 1
  rows 5–8 and Table 2 now train the alignment + uniformity objective, whose uniformity term
  scores each view's pairs, where the issue's code trained Lp-InfoNCE).

The target of the issue is ``issue / now ≥ 2`` for every Table 1 and 2 row.

    git worktree add /tmp/unmix-issue 83fe6b8
    OMP_NUM_THREADS=1 python benchmarks/quick_vs_issue.py --baseline-tree /tmp/unmix-issue \
        [--presets zimmermann-table1-row1,...] [--steps 30] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROWS = [f"zimmermann-table1-row{i}" for i in range(1, 13)] + [
    f"zimmermann-table2-row{i}" for i in range(1, 11)
]

CHILD = r"""
import json, sys
import torch
torch.set_num_threads(1)
try:
    from unmix.budgets import load_with_budget
except ImportError:
    from unmix.resolve import load_with_budget
from unmix.bench import bench_steps
name, steps, overrides = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
s = load_with_budget(name, "quick")
if overrides:
    s = s.replace(**overrides)
r = bench_steps(s, s.train.batch_size, steps)
o = s.objective
objective = {"kind": o.kind}
for key in ("tau", "p"):  # where the objective has them
    if hasattr(o, key) and not (key == "p" and o.kind != "lp_infonce"):
        objective[key] = getattr(o, key)
print(json.dumps({
    "seconds_per_step": r.seconds_per_step,
    "stages": r.stages,
    "net": {
        "train.batch_size": s.train.batch_size,
        "model.hidden": list(s.model.hidden),
        "model.standardize_input": bool(s.model.standardize_input),
        "model.space": s.model.space,
        "objective": objective,
    },
}))
"""


def measure(tree: Path, name: str, steps: int, overrides: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(steps), json.dumps(overrides or {})],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{name} on {tree}: {tail}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline-tree", type=Path, required=True)
    ap.add_argument("--tree", type=Path, default=here)
    ap.add_argument("--presets", default=",".join(ROWS))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not (args.baseline_tree / "src" / "unmix").is_dir():
        raise SystemExit(
            f"--baseline-tree {args.baseline_tree}: no src/unmix there; make one with "
            "`git worktree add /tmp/unmix-issue 83fe6b8`."
        )
    print(
        "| preset | issue's setting (objective; batch, hidden) | issue [ms] | "
        "now, issue's setting [ms] | ratio | now, its quick setting [ms] (objective) | ratio |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.presets.split(","):
        old, same, now = [], [], []
        net = None
        for _ in range(args.rounds):
            o = measure(args.baseline_tree, name, args.steps)
            net = o["net"]
            old.append(o["seconds_per_step"])
            same.append(measure(args.tree, name, args.steps, net)["seconds_per_step"])
            n = measure(args.tree, name, args.steps)
            now.append(n["seconds_per_step"])
        t_old, t_same, t_now = (1e3 * statistics.median(v) for v in (old, same, now))
        print(
            f"| {name} | {_objective(net)}; {net['train.batch_size']}, {net['model.hidden']} | "
            f"{t_old:.1f} | {t_same:.1f} | {t_old / t_same:.2f}× | {t_now:.1f} "
            f"({_objective(n['net'])}) | {t_old / t_now:.2f}× |",
            flush=True,
        )


def _objective(net: dict) -> str:
    o = net["objective"]
    return o["kind"] + (f" p = {o['p']:g}" if "p" in o else "")


if __name__ == "__main__":
    main()
