"""Train a preset starting from the encoder of a finished run (e.g. InfoNCE from an AU solution).

python benchmarks/warm_start.py RUN_DIR PRESET [key=value ...]

RUN_DIR's checkpoint is loaded with ``weights_only=True`` and its encoder weights replace the
freshly built encoder of PRESET's quick setting (the overrides applied); the optimiser and the
learning-rate schedule start afresh. Prints the held-out R²/MCC at every evaluation, as
``benchmarks/tune.py`` does. Used for the row-1 warm-start probe in docs/quick_budget_search.md
(fourth search).
"""

import sys

from tune import run

from unmix import experiment, runs


def main() -> None:
    init_dir, name, *pairs = sys.argv[1:]
    state = runs.load_checkpoint(f"{init_dir}/{runs.CHECKPOINT}")
    build = experiment.Experiment.build.__func__

    def warm_build(cls, setting, *args, **kwargs):
        exp = build(cls, setting, *args, **kwargs)
        exp.encoder.load_state_dict(state["encoder"])
        return exp

    experiment.Experiment.build = classmethod(warm_build)
    run(name, pairs)


if __name__ == "__main__":
    main()
