"""Does a trained encoder lose information, or only linearity? Linear and k-NN R² of z from its
features (held out), and the learned head magnitude — for finished run directories.

OMP_NUM_THREADS=1 python benchmarks/feature_probe.py RUN_DIR [RUN_DIR ...]
OMP_NUM_THREADS=1 python benchmarks/feature_probe.py --radial   # the L∞ surface itself
OMP_NUM_THREADS=1 python benchmarks/feature_probe.py --scale RUN_DIR [RUN_DIR ...]
OMP_NUM_THREADS=1 python benchmarks/feature_probe.py --factors RUN_DIR [RUN_DIR ...]

``--radial``: the linear R² of uniform z ∈ [0, 1]¹⁰ from its radial projection onto the cube's
surface, (z − ½)/‖z − ½‖∞ — what a head whose outputs all lie on that surface can keep at best
with a perfect encoder (50,000 points).

``--factors``: the same per true factor (held-out linear and 10-NN R² of each factor from all
features, on the run's own evaluation latents — the test split of an image data set), the
correlation of every feature with every factor, and how much of each feature the factors explain
linearly (R² of the feature from the ten factors): a feature that reads one factor shows one
|r| near 1 and an R² near 1; one that mixes factors nonlinearly shows neither. For 3D scenes
(``mixing.kind: scenes3d``) a last column fits each feature from the other seven factors and the
nine entries of the object's rotation matrix R = R_z(γ)R_y(β)R_x(α) instead of the three Euler
angles: a feature that reads the orientation as R does, not as its angles, fits better there;
and each of R's nine entries is fitted from all features (held out, linear and 10-NN): what of
the orientation itself, whatever its coordinates, the code keeps.

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

from unmix.models.heads import BoxHead
from unmix.results import load_run


def radial() -> None:
    z = np.random.default_rng(0).uniform(0, 1, (50_000, 10))
    y = z - 0.5
    h = y / np.abs(y).max(axis=1, keepdims=True)
    print(f"radial L∞ projection: linear R² {LinearRegression().fit(h, z).score(h, z):.4f}")


def face_share(h: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The share of the rows of ``h`` = b ⊙ y/‖y‖∞ that lie on each feature's face: the feature
    j with |h_j| / b_j = 1, the largest of |y| (ties go to the first)."""
    face = np.abs(h / b).argmax(1)
    return np.bincount(face, minlength=h.shape[1]) / len(h)


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


def factors(path: str) -> None:
    exp = load_run(path).model()
    z = exp.eval_data(None if exp.data is not None else 8000)
    h = exp.encode_eval(z).double().numpy()
    z = z.double().numpy()
    half = len(z) // 2
    names = getattr(getattr(exp.mixing, "renderer", None), "factor_names", None)
    names = names or [f"z{k}" for k in range(z.shape[1])]
    mu, sd = h[:half].mean(0), h[:half].std(0) + 1e-12
    hs = (h - mu) / sd  # the k-NN distance on standardised features
    lin = LinearRegression().fit(h[:half], z[:half]).predict(h[half:])
    knn = KNeighborsRegressor(10).fit(hs[:half], z[:half]).predict(hs[half:])
    var = z[half:].var(0)
    r2_lin = 1 - ((lin - z[half:]) ** 2).mean(0) / var
    r2_knn = 1 - ((knn - z[half:]) ** 2).mean(0) / var
    print(f"{path}: {len(z)} evaluation latents, fitted on the first half, scored on the second")
    print(f"{'factor':>16s} {'linear R²':>10s} {'10-NN R²':>9s}")
    for k, name in enumerate(names):
        print(f"{name:>16s} {100 * r2_lin[k]:10.1f} {100 * r2_knn[k]:9.1f}")
    corr = np.corrcoef(np.c_[h, z].T)[: h.shape[1], h.shape[1] :]
    short = [n.replace("object_", "").replace("spotlight_", "sp_")[:7] for n in names]
    print("correlation of each feature (row) with each factor (column); R² of the feature from")
    print("the factors (linear, in sample); the feature's standard deviation")
    rot = None
    renderer = getattr(exp.mixing, "renderer", None)
    if renderer is not None and list(names[3:6]) == ["object_alpha", "object_beta", "object_gamma"]:
        from unmix.render.scenes3d import euler_xyz_matrix

        angles = renderer.to_physical(torch.as_tensor(z))[:, 3:6].double()
        rot = np.c_[z[:, :3], z[:, 6:], euler_xyz_matrix(angles).reshape(len(z), 9).numpy()]
    tail = f"{'R² w/ R':>9s}" if rot is not None else ""
    print(" " * 4 + "".join(f"{n:>8s}" for n in short) + f"{'R²':>8s}{'sd':>8s}" + tail)
    for j in range(h.shape[1]):
        r2 = LinearRegression().fit(z, h[:, j]).score(z, h[:, j])
        cells = "".join(f"{c:8.2f}" for c in corr[j])
        extra = ""
        if rot is not None:
            extra = f"{LinearRegression().fit(rot, h[:, j]).score(rot, h[:, j]):9.2f}"
        print(f"h{j:<3d}{cells}{r2:8.2f}{h[:, j].std():8.3f}{extra}")
    head = getattr(exp.encoder, "head", None)
    if isinstance(head, BoxHead):
        # ẑ = b ⊙ y/‖y‖∞ lies on a face of the box: the one of the largest |y_j|. A feature that is
        # that maximum for nearly every image is stuck at ±b_j and carries nothing (a locked face)
        share = face_share(h, head.magnitude.detach().double().numpy())
        print("L∞ head: share of images on each feature's face (|ĥ_j| = b_j) [%]:")
        print("    " + " ".join(f"h{j} {100 * v:.1f}" for j, v in enumerate(share)))
    if rot is not None:
        # can the orientation itself be read back? each entry of R from all features, held out
        r = rot[:, -9:]
        lin = LinearRegression().fit(h[:half], r[:half]).predict(h[half:])
        knn = KNeighborsRegressor(10).fit(hs[:half], r[:half]).predict(hs[half:])
        var = r[half:].var(0)
        r2_lin = 1 - ((lin - r[half:]) ** 2).mean(0) / var
        r2_knn = 1 - ((knn - r[half:]) ** 2).mean(0) / var
        print("entries of R from all features, held out: linear R² / 10-NN R² [%]")
        for a in range(3):
            cells = "  ".join(
                f"R{a}{b} {100 * r2_lin[3 * a + b]:5.1f} / {100 * r2_knn[3 * a + b]:5.1f}"
                for b in range(3)
            )
            print("    " + cells)


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
    ap.add_argument("--factors", action="store_true", help="per factor, and features × factors")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.radial:
        radial()
    for path in args.runs:
        if args.scale:
            scale(path)
        elif args.factors:
            factors(path)
        else:
            probe(path)


if __name__ == "__main__":
    main()
