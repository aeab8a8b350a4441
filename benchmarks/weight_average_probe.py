"""Does an exponential moving average (EMA) of the weights raise the held-out R² of a quick run?

    OMP_NUM_THREADS=1 python benchmarks/weight_average_probe.py PRESET SEED DECAYS [field=value ...]
    e.g. … zimmermann-table1-row5 0 0.99,0.999 train.batch_size=2048

Trains PRESET at ``--budget quick`` (data and training seed SEED, overrides as in ``unmix
train``) with the trainer's own pieces (optimiser, schedule, objective progress), keeps one EMA
of the trainable weights per decay (warm start min(d, (1+t)/(10+t))), and prints every 2,000 steps
and at the end the held-out R² of the raw weights and of each EMA. The raw column equals
``unmix train PRESET --budget quick --seed SEED --data-seed SEED`` (same draws, same numbers);
docs/quick_budget_search.md, eighth search, has what it measured.
"""

import sys
import time

import torch

from unmix.experiment import Experiment
from unmix.resolve import resolve
from unmix.train import lr_factor, make_optimizer


def main(argv: list[str]) -> None:
    preset, seed = argv[0], int(argv[1])
    decays = [float(d) for d in argv[2].split(",")]
    over: dict[str, object] = dict(a.split("=", 1) for a in argv[3:])
    over.update({"seeds.data": seed, "seeds.train": seed})
    s = resolve(preset, "quick", overrides=over).setting
    torch.set_num_threads(s.train.threads)
    exp = Experiment.build(s, "cpu")
    params = [p for p in exp.encoder.parameters() if p.requires_grad]
    opt = make_optimizer(params, s.train)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(s.train))
    gen = exp.stream_generator("train/batches")
    z_eval = exp.eval_data()
    emas = {d: [p.detach().clone() for p in params] for d in decays}
    set_progress = getattr(exp.objective, "set_progress", None)

    def r2(weights: list[torch.Tensor] | None = None) -> float:
        if weights is None:
            return exp.evaluate(z_eval)["r2"]
        saved = [p.detach().clone() for p in params]
        with torch.no_grad():
            for p, w in zip(params, weights, strict=True):
                p.copy_(w)
        value = exp.evaluate(z_eval)["r2"]
        with torch.no_grad():
            for p, w in zip(params, saved, strict=True):
                p.copy_(w)
        return value

    t0 = time.time()
    exp.encoder.train()
    for step in range(s.train.steps):
        if set_progress is not None:
            set_progress(step, s.train.steps)
        loss = exp.loss(gen, s.train.batch_size)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():
            for d, ws in emas.items():
                dd = min(d, (1 + step) / (10 + step))
                for w, p in zip(ws, params, strict=True):
                    w.lerp_(p, 1 - dd)
        done = step + 1
        if done % 2000 == 0 or done == s.train.steps:
            line = f"{done} raw r2 {r2():.4f}"
            for d, ws in emas.items():
                line += f" ema{d} r2 {r2(ws):.4f}"
            print(line, f"{time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
