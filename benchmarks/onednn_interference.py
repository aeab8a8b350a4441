"""Does running oneDNN in a process slow PyTorch's BLAS or elementwise kernels afterwards?

Times a float32 GEMM on PyTorch's BLAS (12,288 × 500 by 500 × 500, the paper encoder's widest
layer at batch 6144) and the 2021 reference loss's B × B work (einsum, cat, logsumexp at
B = 6144) before and after a few oneDNN products, then again after a one-second pause.

    OMP_NUM_THREADS=2 python benchmarks/onednn_interference.py [--threads 2]
"""

import argparse
import time

import torch


def _best(fn, repeats: int = 3) -> float:
    fn()
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(6144, 10, generator=gen)
    x = torch.randn(12288, 500, generator=gen)
    w = torch.randn(500, 500, generator=gen)
    b = torch.randn(500, generator=gen)
    flop = 2 * 12288 * 500 * 500 / 1e9

    def ref_loss():
        neg = torch.einsum("ij,kj->ik", h, h)
        return torch.logsumexp(torch.cat([neg[:, :1], neg], 1), 1).mean()

    def report(tag: str) -> None:
        gemm = flop / _best(lambda: torch.addmm(b, x, w.t()))
        print(
            f"{tag:>22}: BLAS GEMM {gemm:6.1f} GFLOP/s, reference B×B loss {_best(ref_loss):.3f} s"
        )

    report("before oneDNN")
    for _ in range(5):
        torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
        torch.ops.mkldnn._linear_pointwise(x.t(), x.t(), None, "none", [], "")
    report("after oneDNN")
    time.sleep(1.0)
    report("after a 1 s pause")


if __name__ == "__main__":
    main()
