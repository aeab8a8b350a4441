"""Try training overrides on a preset and print the R²/MCC curve (used to choose the quick budget).

python benchmarks/tune.py zimmermann-table1-row1 train.steps=2000 train.lr=1e-3 ...
"""

import sys
import time

import yaml

from unmix.resolve import resolve
from unmix.train import train


def run(name: str, pairs: list[str]) -> None:
    """Train preset ``name`` at the quick budget with ``key=value`` overrides, printing the curve."""
    setting = resolve(name, "quick").setting
    updates = {k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in pairs)}
    setting = setting.replace(**updates)
    t0 = time.perf_counter()

    def show(row):
        print(
            f"step {row['step']:6d}  loss {row['loss']:.5f}  R² {row['r2']:.4f}  "
            f"MCC {row['mcc']:.4f}  t {time.perf_counter() - t0:6.1f}s",
            flush=True,
        )

    result = train(setting, on_eval=show)
    print("summary", {k: result.summary[k] for k in ("r2", "mcc", "train_time_s", "steps_per_s")})


def main() -> None:
    name, *pairs = sys.argv[1:]
    run(name, pairs)


if __name__ == "__main__":
    main()
