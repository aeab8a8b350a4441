"""What a trained sigmoid·b box head does with its code (docs/table3.md, "Box rows").

For each run directory (a model with ``model.space: box_sigmoid``, e.g. a Table 3 box row trained
with ``unmix train … --out DIR``), on the run's held-out evaluation data: the learned magnitude b
(mean over dimensions), the share of sigmoid units saturated (< 0.02 or > 0.98), the mean per-unit
std of the sigmoid outputs, and the share of the code's variance in its top 3 principal components.

    OMP_NUM_THREADS=1 python benchmarks/box_head_probe.py RUN_DIR [RUN_DIR ...]
"""

import argparse

import numpy as np
import torch

from unmix.experiment import Experiment


def probe(run_dir: str) -> dict[str, float]:
    exp = Experiment.from_run(run_dir)  # the checkpoint is read with weights_only=True
    head = exp.encoder.head
    pre: list[torch.Tensor] = []
    hook = head.register_forward_hook(lambda m, i, o: pre.append(i[0].detach()))
    try:
        code = exp.encode_eval(exp.eval_data()).double().numpy()
    finally:
        hook.remove()
    sig = torch.sigmoid(torch.cat(pre).double()).numpy()
    ev = np.linalg.eigvalsh(np.cov(code.T))[::-1]
    return {
        "b_mean": float(head.magnitude.detach().mean()),
        "saturated": float(((sig < 0.02) | (sig > 0.98)).mean()),
        "sigmoid_std": float(sig.std(axis=0).mean()),
        "top3_variance": float(ev[:3].sum() / ev.sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("run\tb_mean\tsaturated\tsigmoid_std\ttop3_variance")
    for run in args.runs:
        r = probe(run)
        print(
            f"{run}\t{r['b_mean']:.2f}\t{r['saturated']:.2f}\t{r['sigmoid_std']:.3f}\t"
            f"{r['top3_variance']:.2f}"
        )


if __name__ == "__main__":
    main()
