"""Train a preset starting from the encoder of a finished run (e.g. InfoNCE from an AU solution).

python benchmarks/warm_start.py RUN_DIR PRESET [key=value ...]

RUN_DIR's checkpoint is loaded with ``weights_only=True`` and its encoder weights replace the
freshly built encoder of PRESET's quick setting (the overrides applied); the optimiser and the
learning-rate schedule start afresh. Prints the held-out R²/MCC at every evaluation. Used for the
row-1 warm-start probe in docs/quick_budget_search.md (fourth search).
"""

import sys
import time

import yaml

from unmix import experiment, runs
from unmix.resolve import resolve
from unmix.train import train


def main() -> None:
    init_dir, name, *pairs = sys.argv[1:]
    state = runs.load_checkpoint(f"{init_dir}/{runs.CHECKPOINT}")
    build = experiment.Experiment.build.__func__

    def warm_build(cls, setting, *args, **kwargs):
        exp = build(cls, setting, *args, **kwargs)
        exp.encoder.load_state_dict(state["encoder"])
        return exp

    experiment.Experiment.build = classmethod(warm_build)
    setting = resolve(name, "quick").setting
    setting = setting.replace(**{k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in pairs)})
    t0 = time.perf_counter()

    def show(row):
        print(
            f"step {row['step']:6d}  loss {row['loss']:.5f}  R² {row['r2']:.4f}  "
            f"MCC {row['mcc']:.4f}  t {time.perf_counter() - t0:6.1f}s",
            flush=True,
        )

    result = train(setting, on_eval=show)
    print("summary", {k: result.summary[k] for k in ("r2", "mcc", "train_time_s")})


if __name__ == "__main__":
    main()
