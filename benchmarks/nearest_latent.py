"""How coarse is the nearest-latent positive of a finite data set? (docs/images.md)

For n uniform latents in the unit box [0, 1]^10 (Table 4's data sets): the median distance to the
nearest other latent, and for a Normal(σ) conditional the median ‖z̃′ − z‖ of the nominal draw
versus ‖z̃ − z‖ of the positive actually used (nearest latent to z̃′, anchor excluded), and how
often the anchor itself would have been the nearest. The latents and their index are built once
per n (generator seeded 0); each σ draws its noise from the generator's state after the latents,
so its figures do not depend on the other σ asked for. Run: python benchmarks/nearest_latent.py [--n 20000 60000 250000]
[--sigma 0.05 0.1]
"""

import argparse

import numpy as np
from sklearn.neighbors import NearestNeighbors


def measure(n: int, sigmas: list[float], queries: int = 2000) -> dict[float, dict[str, float]]:
    """The four medians of the docstring for n latents, for each conditional scale σ."""
    rng = np.random.default_rng(0)
    z = rng.random((n, 10))
    after_latents = rng.bit_generator.state
    index = NearestNeighbors(n_neighbors=2).fit(z)
    q = z[:queries]
    d, _ = index.kneighbors(q)
    out = {}
    for sigma in sigmas:
        rng.bit_generator.state = after_latents
        z_prime = np.clip(q + rng.normal(0, sigma, q.shape), 0, 1)
        _, nearest = index.kneighbors(z_prime)
        own = nearest[:, 0] == np.arange(queries)
        pos = np.where(own, nearest[:, 1], nearest[:, 0])
        out[sigma] = {
            "neighbour": float(np.median(d[:, 1])),
            "nominal": float(np.median(np.linalg.norm(z_prime - q, axis=1))),
            "positive": float(np.median(np.linalg.norm(z[pos] - q, axis=1))),
            "anchor_nearest": float(own.mean()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[20_000, 60_000, 250_000])
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.05, 0.1])
    args = parser.parse_args()
    for n in args.n:
        for sigma, m in measure(n, args.sigma).items():
            print(
                f"n = {n:>7,}: nearest-neighbour distance {m['neighbour']:.3f}; σ = {sigma}: "
                f"‖z̃′ − z‖ {m['nominal']:.3f}, ‖positive − z‖ {m['positive']:.3f}, "
                f"anchor nearest to z̃′ in {m['anchor_nearest']:.0%} of draws"
            )


if __name__ == "__main__":
    main()
