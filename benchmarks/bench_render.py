"""Throughput of the image renderers, and the figures of docs/render.md.

Usage::

    python benchmarks/bench_render.py              # throughput table (images / second)
    python benchmarks/bench_render.py --quick      # fewer repeats
    python benchmarks/bench_render.py --figures    # also write docs/figures/{sprites,scenes3d}_*.png

Throughput is wall-clock time of ``renderer.render(z)`` on a batch of latents already in memory
(torch's default thread count, i.e. all cores), best of several repeats so that a momentarily busy
machine does not count; ``cpu img/s`` divides by process CPU time instead (all threads summed),
which is what one core sustains when the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

from unmix.render import SceneRenderer, SpritesLatents, SpritesRenderer

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"


def measure(render, z: torch.Tensor, repeats: int) -> tuple[float, float]:
    """Best wall-clock and CPU-time throughput (images / s) over ``repeats`` calls."""
    render(z[:8])  # warm-up
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        render(z)
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return len(z) / best_wall, len(z) / best_cpu


def bench(quick: bool) -> None:
    reps = 2 if quick else 5
    g = torch.Generator().manual_seed(0)
    rows = []
    lat = SpritesLatents(0)
    b = lat.sample(2000, generator=g)
    for shape in ("triangle", "ellipse"):
        r = SpritesRenderer(64, shape)
        rows.append((f"sprites {shape} 64x64 coverage", 2000, *measure(r.render, b, reps)))
    r = SpritesRenderer(64, antialias="supersample", supersample=4)
    rows.append(("sprites triangle 64x64 supersample 4x4", 500, *measure(r.render, b[:500], reps)))
    u = torch.rand(512, 10, generator=g)
    for size, aa, n in ((64, 1, 512), (64, 2, 256), (128, 1, 128), (224, 1, 64), (224, 2, 32)):
        r = SceneRenderer(size, antialias=aa)
        rows.append((f"scenes3d {size}x{size} antialias={aa}", n, *measure(r.render, u[:n], reps)))
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, cpus {os.cpu_count()}")
    try:
        print(f"load average {os.getloadavg()}")
    except OSError:
        pass
    print(f"{'renderer':42s} {'batch':>6s} {'img/s':>9s} {'cpu img/s':>10s}")
    for name, n, wall, cpu in rows:
        print(f"{name:42s} {n:6d} {wall:9.0f} {cpu:10.0f}")


# --------------------------------------------------------------------------- figures
def _to_grid(imgs: torch.Tensor, rows: int, cols: int, pad: int = 2) -> np.ndarray:
    """(rows*cols, 3, H, W) → one HWC array with white gutters."""
    _, _, H, W = imgs.shape
    out = np.ones((rows * (H + pad) + pad, cols * (W + pad) + pad, 3), dtype=np.float32)
    for k, img in enumerate(imgs):
        i, j = divmod(k, cols)
        y, x = pad + i * (H + pad), pad + j * (W + pad)
        out[y : y + H, x : x + W] = img.permute(1, 2, 0).numpy()
    return out


def _save_grid(imgs: torch.Tensor, rows: int, cols: int, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = _to_grid(imgs, rows, cols)
    zoom = 1.6 if imgs.shape[-1] <= 64 else 1.0  # figure inches per 100 image pixels
    size = (max(4.0, grid.shape[1] / 100 * zoom), grid.shape[0] / 100 * zoom + 0.4)
    fig, ax = plt.subplots(figsize=size, dpi=110)
    ax.imshow(grid, interpolation="nearest")
    ax.set_axis_off()
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print("wrote", path.relative_to(ROOT))


def _save_traversal(
    render, names, base: torch.Tensor, path: Path, title: str, steps: int = 8
) -> None:
    """Row i: factor i from 0 to 1 (unit box), every other factor at its value in ``base``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_factors = len(base)
    z = base.repeat(n_factors, steps, 1)
    vals = torch.linspace(0, 1, steps)
    for i in range(n_factors):
        z[i, :, i] = vals
    imgs = render(z.reshape(-1, n_factors))
    grid = _to_grid(imgs, n_factors, steps)
    H = imgs.shape[-1]
    fig, ax = plt.subplots(figsize=(steps * 1.1 + 1.6, n_factors * 1.1 + 0.5), dpi=110)
    ax.imshow(grid, interpolation="nearest")
    ax.set_yticks([2 + i * (H + 2) + H / 2 for i in range(n_factors)])
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xticks([2 + j * (H + 2) + H / 2 for j in range(steps)])
    ax.set_xticklabels([f"{v:.2f}" for v in vals.tolist()], fontsize=7)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print("wrote", path.relative_to(ROOT))


# others at the box centre, but distinct hues so that object, light and ground stand apart
SCENE_TRAVERSAL_BASE = torch.tensor([0.5] * 7 + [0.15, 0.85, 0.7])


def figures() -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    # Sprites: samples of the Beta latents of data seed 0, and a traversal
    lat = SpritesLatents(0)
    sr = SpritesRenderer(64)
    _save_grid(
        sr.render(lat.sample(48, generator=g)),
        6,
        8,
        FIGURES / "sprites_grid.png",
        "Sprites 64×64, B ~ Beta(α, β) of data seed 0",
    )
    _save_traversal(
        sr.render,
        ["x", "y", "scale", "hue"],
        torch.full((4,), 0.5),
        FIGURES / "sprites_traversal.png",
        "Sprites: one factor (B-value) from 0 to 1, others 0.5",
    )
    shapes = SpritesRenderer(64, "square", rotation=True)
    b = torch.rand(8, 5, generator=g)
    imgs = [shapes.render(b)]
    for shape in ("ellipse", "triangle"):
        imgs.append(SpritesRenderer(64, shape, rotation=True).render(b))
    imgs.append(SpritesRenderer(64, "circle").render(b[:, :4]))
    _save_grid(
        torch.cat(imgs),
        4,
        8,
        FIGURES / "sprites_shapes.png",
        "Other shapes (square, ellipse, triangle with rotation=True; circle)",
    )
    # 3D scenes: uniform latents in the unit box
    u = torch.rand(48, 10, generator=g)
    scene = SceneRenderer(64)
    _save_grid(
        scene.render(u), 6, 8, FIGURES / "scenes3d_grid.png", "3D scenes 64×64 (default settings)"
    )
    _save_grid(
        SceneRenderer(224, antialias=2).render(u[:6]),
        2,
        3,
        FIGURES / "scenes3d_grid_224.png",
        "3D scenes 224×224, antialias=2 (first six latents of the grid above)",
    )
    _save_traversal(
        SceneRenderer(96, antialias=2).render,
        [
            "object x",
            "object y",
            "object z",
            "α (about x)",
            "β (about y)",
            "γ (about z)",
            "light angle",
            "object hue",
            "light hue",
            "ground hue",
        ],
        SCENE_TRAVERSAL_BASE,
        FIGURES / "scenes3d_traversal.png",
        "3D scenes (96×96, antialias=2): one factor from 0 to 1 (unit box); others 0.5,\n"
        "except object / light / ground hue 0.15 / 0.85 / 0.7",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--figures", action="store_true", help="also write the docs figures")
    ap.add_argument("--no-bench", action="store_true", help="skip the throughput table")
    args = ap.parse_args()
    if not args.no_bench:
        bench(args.quick)
    if args.figures:
        figures()


if __name__ == "__main__":
    main()
