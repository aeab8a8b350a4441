"""Loss + backward time of the contrastive losses: fused (default) vs unfused (``fused=False``).

Features are random ``(B, n)`` (on the sphere for InfoNCE); each configuration is timed
``--repeats`` times, alternating unfused and fused, and the best time of each is printed with the
bytes autograd saved and the largest gradient difference between the two paths.

    python benchmarks/fused_loss.py [--batch-size 6144] [--n 10] [--threads 1] [--repeats 2]
    python benchmarks/fused_loss.py --fused-only --batch-size 16384   # the fused path alone
"""

from __future__ import annotations

import argparse
import time

import torch

from unmix.objectives import InfoNCE, LpInfoNCE

CONFIGS = {
    "InfoNCE (dot)": lambda fused: InfoNCE(fused=fused),
    "Lp p=2": lambda fused: LpInfoNCE(p=2.0, fused=fused),
    "Lp p=3": lambda fused: LpInfoNCE(p=3.0, fused=fused),
    "Lp p=1": lambda fused: LpInfoNCE(p=1.0, fused=fused),
}


def run(fn, h, hp):
    saved = {}

    def pack(t):
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    a, b = h.clone().requires_grad_(), hp.clone().requires_grad_()
    t0 = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn(a, b)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, sum(saved.values()), a.grad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=6144)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--fused-only", action="store_true", help="time the fused path alone (large batches)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(args.batch_size, args.n, generator=gen)
    hp = h + 0.1 * torch.randn(args.batch_size, args.n, generator=gen)
    print(
        f"B = {args.batch_size}, n = {args.n}, float32, threads {torch.get_num_threads()}, "
        f"best of {args.repeats}\n"
    )
    if args.fused_only:
        print("| loss | fused fwd + bwd s (best) |\n|---|---|")
        for label, make in CONFIGS.items():
            x, y = h, hp
            if label.startswith("InfoNCE"):
                x, y = h / h.norm(dim=1, keepdim=True), hp / hp.norm(dim=1, keepdim=True)
            best = min(sum(run(make(True), x, y)[:2]) for _ in range(args.repeats))
            print(f"| {label} | {best:.3f} |", flush=True)
        return
    print(
        "| loss | unfused fwd + bwd s | fused fwd + bwd s | speed-up | "
        "autograd saved unfused / fused | max grad difference |"
    )
    print("|---|---|---|---|---|---|")
    for label, make in CONFIGS.items():
        x, y = h, hp
        if label.startswith("InfoNCE"):
            x, y = h / h.norm(dim=1, keepdim=True), hp / hp.norm(dim=1, keepdim=True)
        best = {False: None, True: None}
        for _ in range(args.repeats):
            for fused in (False, True):
                fwd, bwd, saved, grad = run(make(fused), x, y)
                if best[fused] is None or fwd + bwd < sum(best[fused][:2]):
                    best[fused] = (fwd, bwd, saved, grad)
        old, new = best[False], best[True]
        diff = float((old[3] - new[3]).abs().max() / old[3].abs().max())
        print(
            f"| {label} | {old[0]:.3f} + {old[1]:.3f} | {new[0]:.3f} + {new[1]:.3f} | "
            f"{sum(old[:2]) / sum(new[:2]):.1f}× | {old[2] / 2**20:.0f} MiB / "
            f"{new[2] / 2**20:.2f} MiB | {diff:.1e} (relative to max) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
