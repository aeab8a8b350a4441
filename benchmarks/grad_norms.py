"""Gradient norms of a finished run's training loss, to choose ``train.grad_clip`` (docs/images.md).

For each run directory it rebuilds the experiment from the run's checkpoint, draws ``--batches``
training batches of ``--batch-size`` from a generator seeded with ``--seed``, and prints the
median, smallest and largest global L2 norm of the loss gradient over the model's parameters
(what ``train.grad_clip`` compares with its threshold). Training records the same norms as it goes
(``grad_norm_median``, ``grad_norm_max`` in ``metrics.csv``); this script is for a checkpoint at
hand, or a run older than those columns. Run (one thread, seconds):

    OMP_NUM_THREADS=1 python benchmarks/grad_norms.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse

import torch

from unmix.experiment import Experiment


def grad_norms(run_dir: str, batches: int, batch_size: int, seed: int) -> torch.Tensor:
    """The global gradient norm of the training loss on ``batches`` fresh batches."""
    exp = Experiment.from_run(run_dir)
    params = [p for p in exp.encoder.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(batches):
        grads = torch.autograd.grad(exp.loss(gen, batch_size), params, allow_unused=True)
        out.append(torch.nn.utils.get_total_norm([g for g in grads if g is not None]))
    return torch.stack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=123)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for run in args.runs:
        n = grad_norms(run, args.batches, args.batch_size, args.seed)
        print(
            f"{run}: gradient norm median {n.median():.1f}, "
            f"min {n.min():.1f}, max {n.max():.1f} ({args.batches} batches of {args.batch_size})"
        )


if __name__ == "__main__":
    main()
