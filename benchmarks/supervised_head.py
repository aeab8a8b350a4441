"""The Supervised column of Table 2 row 1 (a regression onto box latents) under a given box head.

    OMP_NUM_THREADS=1 python benchmarks/supervised_head.py box|box_sigmoid SEED

Prints the head, the seed, held-out R² and MCC and the CPU-seconds (docs/quick_budget_search.md,
seventh search: the L∞ head's outputs lie on the cube's surface and cap the fit).
"""

import sys

from unmix.resolve import resolve
from unmix.train import train


def main() -> None:
    space, seed = sys.argv[1], int(sys.argv[2])
    s = resolve("zimmermann-table2-row1", "quick", column="supervised").setting
    s = s.replace(
        **{"model.space": space, "train.threads": 1, "seeds.data": seed, "seeds.train": seed}
    )
    r = train(s)
    scores = {k: round(r.summary[k], 4) for k in ("r2", "mcc")}
    print(space, seed, scores, round(r.summary["cpu_time_s"], 1))


if __name__ == "__main__":
    main()
