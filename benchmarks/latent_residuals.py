"""What else does a factor's latent encode? (docs/images.md, Fig. 5)

For a trained run, each true factor k is matched to the latent that correlates with it most
(|Pearson r|, as the MCC matches them). The script then bins the factor into ``--bins`` quantile
bins and subtracts the latent's mean in each bin: what is left (the *residual*) is the part of
the latent that the factor does not explain, monotone or not. It prints, per factor,

* ``r``: the latent's correlation with the factor (the MCC entry);
* ``resid sd / sd``: the residual's spread against the latent's (0: a function of the factor);
* for every factor j, the residual's correlation with f_j and with (f_j − mean f_j)², so that a
  latent that also reads, say, the distance from the mean position shows up in the squares;
* for a VAE with a learned Beta prior (``model.vae.learn_prior``), the matched latent's learned
  shapes (α, β).

The sprites are fresh draws of the run's own latent process (``--n``, seed ``--seed``), not its
evaluation set. Run (one thread, seconds):

    OMP_NUM_THREADS=1 python benchmarks/latent_residuals.py RUN_DIR [--n 4096] [--bins 20]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from unmix.experiment import Experiment


def latent_residuals(run_dir: str, n: int, bins: int, seed: int) -> list[dict]:
    exp = Experiment.from_run(run_dir)
    z = exp.process.sample(n, torch.Generator().manual_seed(seed))
    z_hat = exp.encode_eval(z).double().numpy()
    f = z.double().numpy()
    d = f.shape[1]
    corr = np.corrcoef(f.T, z_hat.T)[:d, d:]
    named = getattr(exp.mixing, "factor_names", None) or getattr(
        getattr(exp.mixing, "renderer", None), "factor_names", None
    )
    names = list(named or [f"f{j}" for j in range(d)])[:d]
    prior = getattr(exp.encoder, "prior", None)
    learned = None
    if getattr(prior, "learn", False):
        learned = [t.detach().double().numpy() for t in prior.shapes()[:2]]
    rows = []
    for k in range(d):
        j_lat = int(np.argmax(np.abs(corr[k])))
        lat = z_hat[:, j_lat]
        edges = np.quantile(f[:, k], np.linspace(0, 1, bins + 1))
        idx = np.clip(np.searchsorted(edges, f[:, k], side="right") - 1, 0, bins - 1)
        means = np.array([lat[idx == b].mean() if np.any(idx == b) else 0.0 for b in range(bins)])
        resid = lat - means[idx]
        with_f = [float(np.corrcoef(resid, f[:, j])[0, 1]) for j in range(d)]
        sq = (f - f.mean(0)) ** 2
        with_sq = [float(np.corrcoef(resid, sq[:, j])[0, 1]) for j in range(d)]
        rows.append(
            {
                "factor": names[k],
                "latent": j_lat,
                "r": float(corr[k, j_lat]),
                "resid_ratio": float(resid.std() / lat.std()),
                "with_f": with_f,
                "with_sq": with_sq,
                "names": names,
                "prior": None if learned is None else (learned[0][j_lat], learned[1][j_lat]),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--bins", type=int, default=20)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = latent_residuals(args.run_dir, args.n, args.bins, args.seed)
    names = rows[0]["names"]
    head = " | ".join(f"resid~{m} | resid~({m}−mean)²" for m in names)
    learned = rows[0]["prior"] is not None
    extra = " learned prior (α, β) |" if learned else ""
    print(f"| factor | latent | r | resid sd / sd | {head} |{extra}")
    print("|" + "---|" * (4 + 2 * len(names) + learned))
    for r in rows:
        cells = " | ".join(
            f"{a:+.2f} | {b:+.2f}" for a, b in zip(r["with_f"], r["with_sq"], strict=True)
        )
        shapes = f" ({r['prior'][0]:.2f}, {r['prior'][1]:.2f}) |" if learned else ""
        print(
            f"| {r['factor']} | {r['latent']} | {r['r']:+.3f} | {r['resid_ratio']:.2f} | {cells} |"
            + shapes
        )


if __name__ == "__main__":
    main()
