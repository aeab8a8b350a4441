"""Identity R² of g(z) (held-out linear regression z ← g(z)) over mixing seeds.

Paper 000, Table 1 row 1, Identity column: 66.98 ± 2.79 (sphere S⁹, uniform marginal, 5 seeds).

    python benchmarks/identity_r2.py [--preset zimmermann-table1-row1] [--seeds 5]
"""

import argparse

import numpy as np

from unmix import papers as presets
from unmix.resolve import resolve
from unmix.train import train


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="zimmermann-table1-row1")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    preset = presets.get(args.preset)
    scores = []
    for seed in range(args.seeds):
        s = resolve(
            preset.name, "quick", column="identity", seeds={"data": seed, "train": seed}
        ).setting
        summary = train(s).summary
        scores.append(100 * summary["r2"])
        print(
            f"data seed {seed}: R² {scores[-1]:.2f}  (in-sample {100 * summary['r2_in_sample']:.2f})"
        )
    paper = preset.paper.get("identity")
    print(
        f"{args.preset} identity R² = {np.mean(scores):.2f} ± {np.std(scores, ddof=1):.2f} "
        f"over {args.seeds} mixing seeds" + (f"; paper {paper[0]} ± {paper[1]}" if paper else "")
    )


if __name__ == "__main__":
    main()
