"""Wang & Isola's losses against InfoNCE on Table 1, rows 1–4, at the same quick budget.

Does optimising alignment and uniformity directly (``objective: align_uniform``, α = 2, t = 2)
identify the latents as well as InfoNCE? Each row runs with the quick budget of its InfoNCE preset
(same encoder, batch, steps, lr — the paper's rule is chosen by the preset's content and the
objective is swapped last), so only the loss differs. The alignment weight is tuned once, on
row 2 (the cheapest), over ``--weights`` (one weight: no tuning); rows 1, 3, 4 (``--rows``) use
the best. InfoNCE's numbers are read
from a finished ``unmix reproduce zimmermann-table1 --budget quick`` folder when given
(``--infonce results/quick``), else trained here.

    OMP_NUM_THREADS=1 python benchmarks/align_uniform_table1.py --infonce results/quick
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from unmix.resolve import resolve
from unmix.train import train

ROWS = (1, 2, 3, 4)


def run(row: int, seed: int, objective: dict | None) -> dict:
    overrides = {"objective": objective} if objective else {}
    setting = resolve(
        f"zimmermann-table1-row{row}",
        "quick",
        seeds={"data": seed, "train": seed},
        overrides=overrides,
    ).setting
    s = train(setting).summary
    return {"r2": s["r2"], "mcc": s["mcc"], "cpu_s": s["cpu_time_s"]}


def infonce_result(row: int, seed: int, folder: Path | None) -> dict:
    if folder is not None:
        path = folder / f"zimmermann-table1-row{row}" / f"unsupervised-seed{seed}" / "summary.json"
        if path.exists():
            s = json.loads(path.read_text())
            return {"r2": s["r2"], "mcc": s["mcc"], "cpu_s": s.get("cpu_time_s")}
    return run(row, seed, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    ap.add_argument("--rows", type=int, nargs="+", default=list(ROWS), help="rows other than 2")
    ap.add_argument("--infonce", type=Path, default=None, help="a quick results folder")
    args = ap.parse_args()
    au = lambda w: {"kind": "align_uniform", "align_weight": w, "alpha": 2.0, "t": 2.0}  # noqa: E731
    tuning = {w: run(2, args.seed, au(w)) for w in args.weights}
    for w, r in tuning.items():
        print(json.dumps({"row": 2, "align_weight": w, **r}), flush=True)
    best = max(tuning, key=lambda w: tuning[w]["r2"])
    rows = {}
    for row in [2] + [r for r in args.rows if r != 2]:
        ours = tuning[best] if row == 2 else run(row, args.seed, au(best))
        rows[row] = (ours, infonce_result(row, args.seed, args.infonce))
        print(json.dumps({"row": row, "align_uniform": ours, "infonce": rows[row][1]}), flush=True)
    print(f"\nalign_weight tuned on row 2 over {args.weights}: {best:g}\n")
    print("| row | align_uniform R² | MCC | InfoNCE R² | MCC |")
    print("|---|---|---|---|---|")
    for row, (a, b) in rows.items():
        print(
            f"| {row} | {100 * a['r2']:.2f} | {100 * a['mcc']:.2f} | "
            f"{100 * b['r2']:.2f} | {100 * b['mcc']:.2f} |"
        )


if __name__ == "__main__":
    main()
