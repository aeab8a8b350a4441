"""How many latent directions a trained code carries: the canonical correlations between a
finished run's code h and its latents z on held-out draws (used in docs/quick_budget_search.md,
fourteenth search).

python benchmarks/canonical_directions.py RUN_DIR [N]

With isotropic latents the held-out R² of the affine fit h → z is ≈ (Σ ρ_k²) / n over the n
canonical correlations ρ_k, so an R² stuck near k/n with k correlations ≈ 1 and the rest ≈ 0 means
the code holds a k-dimensional subspace of the latents and nothing of the rest.
"""

import sys

import numpy as np
import torch

from unmix.experiment import Experiment


def canonical_correlations(z: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The canonical correlations of the columns of ``z`` and ``h`` (rows are samples), largest
    first: the singular values of Q_zᵀ Q_h for orthonormal bases of the centred columns."""
    qz, _ = np.linalg.qr(z - z.mean(0))
    qh, _ = np.linalg.qr(h - h.mean(0))
    return np.linalg.svd(qz.T @ qh, compute_uv=False)


def main() -> None:
    run_dir, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    exp = Experiment.from_run(run_dir)
    z = exp.eval_data(n)
    with torch.no_grad():
        h = exp.encode_eval(z)
    rho = canonical_correlations(z.double().numpy(), h.double().numpy())
    print("canonical correlations", np.round(rho, 3))
    print("sum of squares / n", round(float((rho**2).sum() / len(rho)), 4))
    print("held-out metrics", {k: round(v, 4) for k, v in exp.evaluate(z).items()})


if __name__ == "__main__":
    main()
