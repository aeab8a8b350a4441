"""What are the rotation angles worth to Table 4's contrastive loss? (docs/images.md)

An *oracle* code reads the true latents: h = c ⊙ z_S for a subset S of the ten scene factors,
with one scale c_k per kept factor fitted to minimise the loss (the model's learnable box
magnitude plays that part). Its loss, on the preset's own positive pairs (the nearest of
``data.n_train`` uniform latents to a draw of the conditional, the anchor excluded, through
unmix's ``NearestLatent`` and ``LatentProcess.sample_positive``) and with the preset's own
objective (unmix's ``LpInfoNCE`` from the resolved setting), is printed for S = all ten factors,
all but α, all but α and γ, and all but the three angles. The difference between two rows is how
much lower the loss can go once the code also holds those factors: what the angles can earn a
network that already holds the rest. Latents only, no images: about a minute on one thread.

    OMP_NUM_THREADS=1 python benchmarks/oracle_loss.py \\
        --variant recipe: \\
        --variant lever:train.batch_size=256,objective.same_view_negatives=true,objective.symmetric=true
"""

from __future__ import annotations

import argparse

import torch

from unmix.data.pairs import NearestLatent
from unmix.latents import build_latent_process
from unmix.registry import OBJECTIVES
from unmix.render.scenes3d import SCENE_FACTOR_NAMES
from unmix.resolve import parse_overrides, resolve

SUBSETS = {
    "all ten": (),
    "all but α": (3,),
    "all but α, γ": (3, 5),
    "all but α, β, γ": (3, 4, 5),
}


def oracle_losses(preset: str, overrides: dict, fit_steps: int, eval_batches: int, seed: int):
    setting = resolve(
        preset, "quick", seeds={"data": seed, "train": seed}, overrides=overrides
    ).setting
    g = torch.Generator().manual_seed(seed)
    process = build_latent_process(setting.latent, seed=seed)
    train = process.sample(setting.data.n_train, g)
    index = NearestLatent(train)
    loss_fn = OBJECTIVES.build(setting.objective).loss  # the pair loss (LpInfoNCE) itself
    batch = setting.train.batch_size

    def draw():
        idx = torch.randint(len(train), (batch,), generator=g)
        z = train[idx]
        return z, train[index.query(process.sample_positive(z, g), exclude=idx)]

    fit_pairs = [draw() for _ in range(64)]
    eval_pairs = [draw() for _ in range(eval_batches)]
    out = {}
    for label, drop in SUBSETS.items():
        keep = [k for k in range(len(SCENE_FACTOR_NAMES)) if k not in drop]
        log_c = torch.zeros(len(keep), requires_grad=True)
        opt = torch.optim.Adam([log_c], lr=0.05)
        for step in range(fit_steps):
            z, zp = fit_pairs[step % len(fit_pairs)]
            c = log_c.exp()
            loss = loss_fn(z[:, keep] * c, zp[:, keep] * c)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            c = log_c.exp()
            vals = torch.stack([loss_fn(z[:, keep] * c, zp[:, keep] * c) for z, zp in eval_pairs])
        out[label] = (float(vals.mean()), float(vals.std() / len(vals) ** 0.5))
    n_cand = loss_fn.n_candidates(batch)
    return out, n_cand


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="zimmermann-table4-row1")
    ap.add_argument("--variant", action="append", default=[], help="NAME:key=value,key=value")
    ap.add_argument("--fit-steps", type=int, default=400)
    ap.add_argument("--eval-batches", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    variants = args.variant or ["recipe:"]
    print(f"| variant | candidates an anchor | {' | '.join(SUBSETS)} |")
    print("|---|---|" + "---|" * len(SUBSETS))
    for v in variants:
        name, _, over = v.partition(":")
        overrides = parse_overrides([o for o in over.split(",") if o])
        res, n_cand = oracle_losses(
            args.preset, overrides, args.fit_steps, args.eval_batches, args.seed
        )
        cells = " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in res.values())
        print(f"| {name} | {n_cand} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
