"""Does a trained encoder lose information, or only linearity? Linear and k-NN R² of z from its
features (held out), and the learned head magnitude — for finished run directories.

OMP_NUM_THREADS=1 python benchmarks/feature_probe.py RUN_DIR [RUN_DIR ...]
OMP_NUM_THREADS=1 python benchmarks/feature_probe.py --radial   # the L∞ surface itself
OMP_NUM_THREADS=1 python benchmarks/feature_probe.py --scale RUN_DIR [RUN_DIR ...]

``--radial``: the linear R² of uniform z ∈ [0, 1]¹⁰ from its radial projection onto the cube's
surface, (z − ½)/‖z − ½‖∞ — what a head whose outputs all lie on that surface can keep at best
with a perfect encoder (50,000 points).

``--scale``: whether an unbounded encoder inflated its output scale — the singular values of the
affine map fitted from z to the features h on 4,096 fresh positive pairs (1 everywhere = the
moment-matched scale of an Lp loss at its matched τ), and the pairs' mean ‖h − h̃‖² beside
‖z − z̃‖².
"""

import argparse

import numpy as np
import torch
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor

from unmix.results import load_run


def radial() -> None:
    z = np.random.default_rng(0).uniform(0, 1, (50_000, 10))
    y = z - 0.5
    h = y / np.abs(y).max(axis=1, keepdims=True)
    print(f"radial L∞ projection: linear R² {LinearRegression().fit(h, z).score(h, z):.4f}")


def probe(path: str, n: int = 8000, fit: int = 6000) -> None:
    run = load_run(path)
    exp = run.model()
    z = exp.eval_data(n)
    h = exp.encode_eval(z).double().numpy()
    z = z.double().numpy()
    lin = LinearRegression().fit(h[:fit], z[:fit]).score(h[fit:], z[fit:])
    knn = KNeighborsRegressor(10).fit(h[:fit], z[:fit]).score(h[fit:], z[fit:])
    mags = [
        p.detach().numpy().round(2).tolist()
        for name, p in exp.encoder.named_parameters()
        if "magnitude" in name or "radius" in name
    ]
    print(f"{path}: linear R² {lin:.3f}, 10-NN R² {knn:.3f}, head magnitude {mags or '—'}")


def scale(path: str, n: int = 4096) -> None:
    exp = load_run(path).model()
    batch = exp.batch(n, torch.Generator().manual_seed(5))
    with torch.no_grad():
        h, h_pos = exp.encoder(batch.x), exp.encoder(batch.x_pos)
    z1 = torch.cat([batch.z, torch.ones(n, 1)], 1)
    a = torch.linalg.lstsq(z1, h).solution[:-1]  # h ≈ z a + b
    sv = [round(v, 2) for v in torch.linalg.svdvals(a).tolist()]
    dh = (h - h_pos).square().sum(1).mean().item()
    dz = (batch.z - batch.z_pos).square().sum(1).mean().item()
    print(f"{path}: singular values of z → h {sv}; mean ‖h − h̃‖² {dh:.4f}, ‖z − z̃‖² {dz:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--radial", action="store_true")
    ap.add_argument("--scale", action="store_true", help="the output scale instead of the R²s")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.radial:
        radial()
    for path in args.runs:
        if args.scale:
            scale(path)
        else:
            probe(path)


if __name__ == "__main__":
    main()
