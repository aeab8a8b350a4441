"""Sampling throughput of unmix's VonMisesFisher vs scipy.stats.vonmises_fisher (same run).

Setting: d = 10, κ = 1, n = 10**6 draws around one mean, best of 3 repeats each; prints both rates
(samples/second) and their ratio. Both samplers are exact (Wood 1994 rejection in float64). Then
the training use case: one draw around each of 6144 different means (scipy takes one mean per call).

    python benchmarks/bench_vmf.py [--n 1000000] [--d 10] [--kappa 1] [--repeats 3] [--threads T]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from scipy import stats

from unmix.distributions.vmf import VonMisesFisher


def best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--kappa", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--batch-means", type=int, default=6144, help="means in the batched test")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    mu = np.zeros(args.d)
    mu[0] = 1.0
    ours = VonMisesFisher(torch.from_numpy(mu), args.kappa)
    gen = torch.Generator().manual_seed(0)
    ours.sample((1000,), generator=gen)  # warm-up (lazy initialisation)
    ref = stats.vonmises_fisher(mu, args.kappa)
    rng = np.random.default_rng(0)
    ref.rvs(1000, random_state=rng)

    t_ours = best_time(lambda: ours.sample((args.n,), generator=gen), args.repeats)
    t_ref = best_time(lambda: ref.rvs(args.n, random_state=rng), args.repeats)
    r_ours, r_ref = args.n / t_ours, args.n / t_ref
    print(
        f"vMF sampling, d={args.d}, kappa={args.kappa:g}, n={args.n}, best of {args.repeats}, "
        f"torch threads={torch.get_num_threads()}"
    )
    print(f"  unmix VonMisesFisher.sample : {r_ours:12.4g} samples/s ({t_ours:.3f} s)")
    print(f"  scipy vonmises_fisher.rvs   : {r_ref:12.4g} samples/s ({t_ref:.3f} s)")
    print(f"  ratio unmix / scipy         : {r_ours / r_ref:.2f}")

    # The training use case: one positive per anchor, i.e. one draw around each of B means.
    b = args.batch_means
    means = torch.nn.functional.normalize(
        torch.randn(b, args.d, generator=gen, dtype=torch.float64), dim=1
    )
    batched = VonMisesFisher(means, args.kappa)
    t_ours_b = best_time(lambda: batched.sample(generator=gen), args.repeats)
    means_np = means.numpy()
    t_ref_b = best_time(
        lambda: [stats.vonmises_fisher(m, args.kappa).rvs(1, random_state=rng) for m in means_np],
        1,
    )
    print(f"one draw around each of {b} different means (a training batch of positives):")
    print(f"  unmix, one batched call     : {t_ours_b * 1e3:10.1f} ms")
    print(f"  scipy, one call per mean    : {t_ref_b * 1e3:10.1f} ms")
    print(f"  speed-up                    : {t_ref_b / t_ours_b:.0f}x")


if __name__ == "__main__":
    main()
