"""Why the generalised-normal rows of Table 2 saturate (docs/quick_budget_search.md, ninth search).

OMP_NUM_THREADS=1 python benchmarks/saturation_probe.py

1. Row 7's sampled pairs against scipy's generalised normal (coordinates away from the faces).
2. At the matched solution (h = z, τ the matched temperature, so δ/τ is the conditional's
   log-density), a positive's δ/τ against the nearest of the other 1,023 anchors of a batch.
"""

import numpy as np
import scipy.stats as st
import torch

from unmix.resolve import resolve
from unmix.sampling import sample_dataset


def data_check() -> None:
    s = resolve("zimmermann-table2-row7", "quick").setting
    d = sample_dataset(s, 50000, seed=1)
    z, zp = d["z"], d["z_pos"]
    x = (zp - z)[(z > 0.2) & (z < 0.8)]
    lam, beta = 0.05, 3.0
    print(
        f"row 7 pairs: std {x.std():.5f} (closed form {st.gennorm(beta, scale=lam).std():.5f}), "
        f"excess kurtosis {st.kurtosis(x):.3f} (scipy {float(st.gennorm(beta).stats('k')):.3f}), "
        f"KS vs gennorm: {st.kstest(x / lam, st.gennorm(beta).cdf)}"
    )


def nearest_negatives(n: int = 10, batch: int = 1024) -> None:
    torch.manual_seed(0)
    z = torch.rand(batch, n)
    # (name, p, matched τ, mean positive δ/τ = n·E|ε/s|^p)
    cases = [
        ("Laplace λ=0.05, p=1", 1, 0.05, n * 1.0),
        ("Normal σ=0.05, p=2", 2, 2 * 0.05**2, n * 0.5),
        ("GenNorm β=3 λ=0.05, p=3", 3, 0.05**3, n / 3),
    ]
    for name, p, tau, pos in cases:
        d = (z[:, None, :] - z[None, :, :]).abs().pow(p).sum(-1) / tau
        d.fill_diagonal_(float("inf"))
        nn = d.min(1).values
        print(
            f"{name}: positive δ/τ {pos:.1f}; nearest negative median {nn.median():.1f}, "
            f"10 % quantile {nn.quantile(0.1):.1f}"
        )


if __name__ == "__main__":
    torch.set_num_threads(1)
    np.set_printoptions(precision=4)
    data_check()
    nearest_negatives()
