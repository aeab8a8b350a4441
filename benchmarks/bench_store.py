"""Image-store and nearest-latent timings (docs/data.md). Run with one thread:

    OMP_NUM_THREADS=1 python benchmarks/bench_store.py

Writes 2,000 SceneRenderer(size=64) images (chunk 256) into a temporary store, reads random
batches of 256, and builds / queries the sklearn nearest-latent index over 250,000 10-D latents.
"""

import statistics
import tempfile
import time
from pathlib import Path

import torch

from unmix.data.pairs import NearestLatent
from unmix.data.store import write_image_store
from unmix.render import SceneRenderer


def main() -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    z = torch.rand(2000, 10, generator=g)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        store = write_image_store(
            Path(tmp) / "s", z, SceneRenderer(size=64).render, chunk=256, progress=False
        )
        write_s = time.perf_counter() - t0
        reads = []
        for _ in range(20):
            idx = torch.randint(len(store), (256,), generator=g)
            t0 = time.perf_counter()
            store.images(idx)
            reads.append(time.perf_counter() - t0)
    print(
        f"write 2,000 scenes at 64 px: {write_s:.2f} s; read 256 random images: "
        f"{1e3 * statistics.median(reads):.1f} ms median (first {1e3 * reads[0]:.1f} ms)"
    )
    lat = torch.rand(250_000, 10, generator=g)
    t0 = time.perf_counter()
    index = NearestLatent(lat, backend="sklearn")
    build_s = time.perf_counter() - t0
    q = (lat[:512] + 0.05 * torch.randn(512, 10, generator=g)).clamp(0, 1)
    t0 = time.perf_counter()
    index.query(q)
    print(
        f"nearest-latent index over 250,000 latents: build {build_s:.2f} s, "
        f"query 512 points {time.perf_counter() - t0:.3f} s"
    )


if __name__ == "__main__":
    main()
