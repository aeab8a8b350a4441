"""Timings of the disentanglement / nonlinear-R² / bootstrap metrics at N = 4096, n = 10. Run with

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_metrics.py

Latents z ~ U(-1, 1)^10 and codes z_hat = tanh(z A) + 0.05·noise (A a fixed Gaussian 10 × 10
matrix), so every metric has informative but mixed codes to work on. Prints seconds per call
(the best of ``REPEATS`` runs) and the value the metric returned (the first key of a dict).

Recorded on the 2-core development machine (load average ≈ 2 from other jobs), one thread:

    r2_affine (reference)               0.002 s   value 0.841
    mcc (reference)                     0.001 s   value 0.549
    dci importance=lasso                0.020 s   value 0.141
    dci importance=gbt (20 trees)       0.920 s   value 0.466
    mig estimator=binned                0.149 s   value 0.031
    mig estimator=continuous            1.515 s   value 0.016
    sap                                 0.001 s   value 0.133
    kernel_r2 (max_train=2000)          0.705 s   value 0.894
    block_r2 kind=linear                0.002 s   value 0.859
    block_r2 kind=kernel                0.712 s   value 0.910
    mcc_ci (n_boot=200)                 0.150 s   value 0.549
    r2_ci (n_boot=200)                  0.646 s   value 0.844
"""

import time

import numpy as np

from unmix.metrics import (
    block_r2,
    dci,
    kernel_r2,
    mcc,
    mcc_ci,
    mig,
    r2_affine,
    r2_ci,
    sap,
)

N, D, REPEATS = 4096, 10, 2


def _first_value(out) -> float:
    if isinstance(out, dict):
        return float(next(iter(out.values())))
    return float(out)


def main() -> None:
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, size=(N, D))
    z_hat = np.tanh(z @ rng.normal(size=(D, D)) / np.sqrt(D)) + 0.05 * rng.normal(size=(N, D))
    cases = {
        "r2_affine (reference)": lambda: r2_affine(z, z_hat).r2,
        "mcc (reference)": lambda: mcc(z, z_hat).mcc,
        "dci importance=lasso": lambda: dci(z, z_hat, importance="lasso"),
        "dci importance=gbt (20 trees)": lambda: dci(z, z_hat, importance="gbt"),
        "mig estimator=binned": lambda: mig(z, z_hat),
        "mig estimator=continuous": lambda: mig(z, z_hat, estimator="continuous"),
        "sap": lambda: sap(z, z_hat),
        "kernel_r2 (max_train=2000)": lambda: kernel_r2(z, z_hat),
        "block_r2 kind=linear": lambda: block_r2(z, z_hat, [0, 1, 2]),
        "block_r2 kind=kernel": lambda: block_r2(z, z_hat, [0, 1, 2], kind="kernel"),
        "mcc_ci (n_boot=200)": lambda: mcc_ci(z, z_hat),
        "r2_ci (n_boot=200)": lambda: r2_ci(z, z_hat),
    }
    print(f"N = {N}, n_factors = n_codes = {D}; best of {REPEATS}")
    for name, fn in cases.items():
        best = np.inf
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        print(f"{name:32s} {best:8.3f} s   value {_first_value(out):.3f}")


if __name__ == "__main__":
    main()
