"""Do unmix's scenes carry each factor? A supervised probe per renderer variant (docs/images.md).

For each renderer variant, train Table 4's Supervised column (conv net + 10·N, unbounded model,
regression on the true factors) at ``--budget quick`` for ``--steps`` steps, and print the
held-out R² of every factor. A factor the supervised model cannot read off the images bounds what
any unsupervised model can recover; comparing variants separates "the pixels do not show it"
from "the objective does not find it". Also prints, per variant, how many pixels the object
covers and how many change when one factor moves by 0.02 (finite differences, 256 scenes).

Run (one thread, ≈ 0.15 s per step on this CPU):

    OMP_NUM_THREADS=1 python benchmarks/scene_probe.py --steps 1000 \\
        --variant base: --variant two_tone:mixing.two_tone=true
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch

from unmix.render.scenes3d import SCENE_FACTOR_NAMES
from unmix.resolve import parse_overrides, resolve
from unmix.train import train


def pixel_stats(mixing_spec, n: int = 256, du: float = 0.02) -> dict[str, float]:
    """Object coverage (median pixels), rendering throughput (images/s, best of 3 renders of 512
    scenes on this process's threads) and, per factor, the median number of pixels whose value
    changes by more than 0.02 when the factor moves by ``du``."""
    from unmix.registry import MIXINGS

    r = MIXINGS.build(mixing_spec).renderer
    u = torch.rand(n, 10, generator=torch.Generator().manual_seed(0)) * 0.9 + 0.05
    buf = r.render_buffers(u)
    k2 = r.antialias**2
    out = {"object_px": float((buf["hit"] < len(r.primitives)).sum(1).median()) / k2}
    batch = torch.rand(512, 10, generator=torch.Generator().manual_seed(1))
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        r.render(batch)
        best = min(best, time.perf_counter() - t0)
    out["img_per_s"] = round(512 / best)
    x0 = buf["image"]
    for i, name in enumerate(SCENE_FACTOR_NAMES):
        step = torch.zeros(10)
        step[i] = du
        changed = ((r.render(u + step) - x0).abs().amax(1) > 0.02).sum((1, 2))
        out[f"changed_px_{name}"] = float(changed.median())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000, help="0: pixel statistics only, no training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME:key=value,key=value (overrides of the supervised setting; may be empty)",
    )
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    variants = args.variant or ["base:"]
    results = []
    for v in variants:
        name, _, over = v.partition(":")
        overrides = parse_overrides([o for o in over.split(",") if o])
        overrides.update({"train.steps": args.steps})
        res = resolve(
            "zimmermann-table4-row2",
            "quick",
            column="supervised",
            seeds={"data": args.seed, "train": args.seed},
            overrides=overrides,
        )
        setting = res.setting
        stats = pixel_stats(setting.mixing)
        row = {"variant": name, "overrides": over, "steps": args.steps, **stats}
        if args.steps:
            t0 = time.perf_counter()
            summary = train(setting).summary
            row["wall_s"] = round(time.perf_counter() - t0, 1)
            row["r2"] = summary["r2"]
            row.update({n: summary[f"r2_factor{i}"] for i, n in enumerate(SCENE_FACTOR_NAMES)})
        results.append(row)
        print(json.dumps(row), flush=True)
    head = "| variant | steps | R² | " + " | ".join(SCENE_FACTOR_NAMES) + " | object px | img/s |"
    print("\n" + head + "\n|" + "---|" * (head.count("|") - 1))
    for r in results:
        cells = " | ".join(
            f"{100 * r[n]:.1f}" if n in r else "" for n in ["r2", *SCENE_FACTOR_NAMES]
        )
        print(
            f"| {r['variant']} | {r['steps']} | {cells} | {r['object_px']:.0f} | {r['img_per_s']} |"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
