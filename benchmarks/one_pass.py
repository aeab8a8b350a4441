"""The fused loss's one pass against its recomputing backward, A/B in one process.

Forward + backward of ``LpInfoNCE(p)`` at batch B (features uniform in [0, 1)ⁿ, positives 0.05
away), alternating the one pass (the forward forms the gradients) with the recomputing backward
(``unmix.objectives._chunked._one_pass`` patched to refuse), ``--repeats`` times each; seconds.

    OMP_NUM_THREADS=1 python benchmarks/one_pass.py [--threads 1] [--p 2 3] [--batch-size 6144]
"""

import argparse
import time

import torch

import unmix.objectives._chunked as chunked
from unmix.objectives import LpInfoNCE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--p", type=float, nargs="+", default=[2.0, 3.0])
    ap.add_argument("--batch-size", type=int, default=6144)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    h = torch.rand(args.batch_size, args.n, generator=gen)
    hp = h + 0.05 * torch.randn(args.batch_size, args.n, generator=gen)
    one_pass = chunked._one_pass
    try:
        for p in args.p:
            loss = LpInfoNCE(p=p)
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeats):
                for on in (True, False):
                    chunked._one_pass = one_pass if on else (lambda *a: False)
                    a, b = h.clone().requires_grad_(True), hp.clone().requires_grad_(True)
                    t0 = time.perf_counter()
                    loss(a, b).backward()
                    times[on].append(time.perf_counter() - t0)
            fmt = " ".join
            print(
                f"threads {args.threads} p {p:g}: one pass "
                f"{fmt(f'{t:.3f}' for t in times[True])} | recompute "
                f"{fmt(f'{t:.3f}' for t in times[False])}"
            )
    finally:
        chunked._one_pass = one_pass


if __name__ == "__main__":
    main()
