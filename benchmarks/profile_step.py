"""Profile training steps of a preset at a budget (torch.profiler, CPU), heaviest operators first.

OMP_NUM_THREADS=1 python benchmarks/profile_step.py zimmermann-table1-row1 --budget quick
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from unmix.experiment import Experiment
from unmix.resolve import resolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset")
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    setting = resolve(args.preset, args.budget).setting
    exp = Experiment.build(setting)
    opt = torch.optim.Adam([p for p in exp.encoder.parameters() if p.requires_grad], lr=1e-3)
    gen = exp.stream_generator("train/batches")

    def step() -> None:
        loss = exp.loss(gen, setting.train.batch_size)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(5):  # warm-up
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
