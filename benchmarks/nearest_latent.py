"""How coarse is the nearest-latent positive of a finite data set? (docs/images.md)

For n uniform latents in the unit box [0, 1]^10 (Table 4's data sets): the median distance to the
nearest other latent, and for a Normal(σ) conditional the median ‖z̃′ − z‖ of the nominal draw
versus ‖z̃ − z‖ of the positive actually used (nearest latent to z̃′, anchor excluded), and how
often the anchor itself would have been the nearest. Run: python benchmarks/nearest_latent.py
"""

import numpy as np
from sklearn.neighbors import NearestNeighbors


def main(sigma: float = 0.1, queries: int = 2000) -> None:
    rng = np.random.default_rng(0)
    for n in (20_000, 250_000):
        z = rng.random((n, 10))
        index = NearestNeighbors(n_neighbors=2).fit(z)
        q = z[:queries]
        d, _ = index.kneighbors(q)
        z_prime = np.clip(q + rng.normal(0, sigma, q.shape), 0, 1)
        _, nearest = index.kneighbors(z_prime)
        own = nearest[:, 0] == np.arange(queries)
        pos = np.where(own, nearest[:, 1], nearest[:, 0])
        print(
            f"n = {n:>7,}: nearest-neighbour distance {np.median(d[:, 1]):.3f}; σ = {sigma}: "
            f"‖z̃′ − z‖ {np.median(np.linalg.norm(z_prime - q, axis=1)):.3f}, "
            f"‖positive − z‖ {np.median(np.linalg.norm(z[pos] - q, axis=1)):.3f}, "
            f"anchor nearest to z̃′ in {own.mean():.0%} of draws"
        )


if __name__ == "__main__":
    main()
