"""Time the thin products of the fused loss's backward (one ``(rows, N)`` block against ``n``
features) in their plain and reshaped forms, CPU time per call, one thread.

OMP_NUM_THREADS=1 python benchmarks/thin_products.py [--rows 256] [--cols 1024]

``w @ c`` plain vs against ``c`` zero-padded to 16 columns; ``wᵀ @ x`` plain vs as ``(xᵀ @ w)ᵀ``
(what :mod:`unmix.objectives._chunked` uses below 16 and 64 features).
"""

import argparse
import time

import torch


def cpu_us(f, reps: int = 300) -> float:
    for _ in range(10):
        f()
    t = time.process_time()
    for _ in range(reps):
        f()
    return (time.process_time() - t) / reps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=1024)
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    print("n    w@c plain  w@c padded   wT@x plain  (xT@w)T   [µs per call]")
    for n in (3, 10, 20, 40, 64):
        print(f"{n:<4d}" + "".join(f"{v:11.0f}" for v in _row(args.rows, args.cols, n, g)))


def _row(rows: int, cols: int, n: int, g: torch.Generator) -> list[float]:
    w = torch.randn(rows, cols, generator=g)
    c, x = torch.randn(cols, n, generator=g), torch.randn(rows, n, generator=g)
    padded = torch.zeros(cols, max(16, n))
    padded[:, :n] = c
    gx, gc = torch.zeros(rows, n), torch.zeros(cols, n)
    return [
        cpu_us(lambda: gx.addmm_(w, c)),
        cpu_us(lambda: gx.add_(torch.mm(w, padded)[:, :n])),
        cpu_us(lambda: gc.addmm_(w.T, x)),
        cpu_us(lambda: gc.add_(torch.mm(x.T, w).T)),
    ]


if __name__ == "__main__":
    main()
