"""How loudly does each Sprites factor speak to a γ² = 1 decoder? (docs/images.md, Fig. 5)

A VAE with a Gaussian decoder of precision γ² learns a factor only as far as encoding it pays in
reconstruction: γ²/2 times the squared pixel change the factor causes. For each factor this
prints, over ``--n`` sprites drawn from the data seed's Beta marginal:

* ``px``: the median number of pixels that change by more than 0.02 when the factor moves by
  ``--step`` (0.05 of its [0, 1] range);
* ``nats/step``: the median of γ²/2 · ‖x(b + step·e_k) − x(b)‖² — the reconstruction gain of
  telling two such sprites apart, at γ² = 1 on [0, 1] pixels (paper 004's convention);
* ``prior sd``: the standard deviation of the factor's Beta marginal (the ``reizinger-fig5``
  setting's: the reference data set's shapes, or with ``--draw-shapes`` the shapes
  α, β ~ U(2, 15) that data seed ``--seeds`` draws), so that
  ``(sd / step)² · nats/step`` is the order of what encoding the factor is worth in all.

Run (one thread, seconds):

    OMP_NUM_THREADS=1 python benchmarks/sprites_signal.py --seeds 0 1 2 [--draw-shapes]
"""

from __future__ import annotations

import argparse

from unmix.experiment import Experiment
from unmix.render.sprites import SPRITES_FACTOR_NAMES
from unmix.resolve import load_with_budget


def factor_signal(
    seed: int, n: int, step: float, gamma2: float = 1.0, draw_shapes: bool = False
) -> list[dict]:
    updates: dict = {"seeds.data": seed}
    if draw_shapes:  # the per-data-seed draw α, β ~ U(2, 15) instead of the reference's shapes
        updates |= {"latent.marginal.shapes": None, "latent.marginal.shape_range": [2.0, 15.0]}
    setting = load_with_budget("reizinger-fig5", "quick").replace(**updates)
    exp = Experiment.build(setting)
    marginal, render = exp.process.marginal, exp.mixing
    b = exp.process.sample(n, exp.stream_generator("data/eval"))
    b = b.clamp(0.0, 1.0 - step)  # so that b + step stays in the box
    x = render(b)
    rows = []
    for k, name in enumerate(SPRITES_FACTOR_NAMES[:4]):
        moved = b.clone()
        moved[:, k] += step
        d = (render(moved) - x).reshape(n, 3, 64, 64)
        a, c = float(marginal.alpha[k]), float(marginal.beta[k])
        sd = (a * c / ((a + c) ** 2 * (a + c + 1))) ** 0.5
        nats = 0.5 * gamma2 * (d**2).sum((1, 2, 3))
        rows.append(
            {
                "seed": seed,
                "factor": name,
                "px": float((d.abs().amax(1) > 0.02).sum((1, 2)).float().median()),
                "nats_per_step": float(nats.median()),
                "prior_sd": sd,
                "nats_total": float(nats.median()) * (sd / step) ** 2,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument(
        "--draw-shapes",
        action="store_true",
        help="Beta shapes drawn per data seed (U(2, 15)) instead of the reference data set's",
    )
    args = ap.parse_args()
    print("| seed | factor | px changed | nats / step | prior sd | (sd/step)² · nats/step |")
    print("|---|---|---|---|---|---|")
    for seed in args.seeds:
        for r in factor_signal(seed, args.n, args.step, draw_shapes=args.draw_shapes):
            print(
                f"| {r['seed']} | {r['factor']} | {r['px']:.0f} | {r['nats_per_step']:.2f} | "
                f"{r['prior_sd']:.3f} | {r['nats_total']:.1f} |"
            )


if __name__ == "__main__":
    main()
