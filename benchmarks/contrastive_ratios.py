"""Seconds per training step: the 2021 reference code's step vs unmix's, in one process, A/B/A/B.

For each preset (Table 1 rows 1, 5, 7 and Table 2 row 1 of Zimmermann et al.) both arms draw the
same kind of batch with unmix's latent sampler and mixing (so sampling costs the same in both) and
then run their own step: the reference (``benchmarks/reference_step.py``: its MLP, a B × B — and for
Lp a B × B × n — loss, Adam) and unmix (``Experiment.loss(generator, batch_size)``, backward, Adam
with lr 1e-4). Arms alternate step by step after a warm-up step each; the medians are reported,
with each arm's peak resident memory during its steps (sampled every 2 ms; in brackets the largest
rise during one step, i.e. what the step itself allocates), unmix's stage split
(``unmix.bench.bench_steps``: sample, mixing + encoder forward, loss, backward + Adam), a measured
fp32 GEMM peak (the faster of PyTorch's BLAS and oneDNN, each printed) and each step's matmul
GFLOP as a fraction of it. unmix's linear layers run on ``--cpu-gemm`` (``train.cpu_gemm``; default
auto = oneDNN where PyTorch has it); the reference's ``nn.Linear`` on PyTorch's own path.

    python benchmarks/contrastive_ratios.py [--batch-size 6144] [--threads 2] [--rounds 3]
        [--presets zimmermann-table1-row1,...] [--cpu-gemm auto|onednn|blas]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import threading
import time

import torch
from reference_step import ReferenceStep, encoder_matmul_flop

from unmix import papers as presets
from unmix.bench import bench_steps, gemm_peaks
from unmix.experiment import Experiment
from unmix.models.linear import cpu_gemm, resolve_cpu_gemm

PRESETS = (
    "zimmermann-table1-row1",
    "zimmermann-table1-row5",
    "zimmermann-table1-row7",
    "zimmermann-table2-row1",
)
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class PeakRSS:
    """Peak resident set size while the ``with`` block runs (sampled every ``interval`` s), and its
    rise over the size at entry (``growth``)."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval, self.peak, self.start = interval, 0, 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss())
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self._stop = threading.Event()
        self.peak = self.start = _rss()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())

    @property
    def growth(self) -> int:
        return self.peak - self.start


def _mib(peak: tuple[int, int]) -> str:
    return f"{peak[0] / 2**20:.0f} MiB (+{peak[1] / 2**20:.0f})"


def loss_matmul_flop(kind: str, p: float | None, batch: int, n: int, arm: str) -> float:
    """Matmul FLOPs of the loss (forward + backward) for one step; 0 where no matmul is used.

    unmix (fused, one candidate block of B columns): a B × B × n matmul forward, and in the
    backward the recomputation plus one matmul per gradient (anchors, candidates): 4 in all — for
    the dot product and for ‖·‖₂² (its matmul form); the other Lp use difference blocks.
    Reference: the dot product's einsum forward and its two gradients (3); Lp has no matmul."""
    one = 2.0 * batch * batch * n
    if arm == "unmix":
        return 4 * one if kind == "infonce" or p == 2.0 else 0.0
    return 3 * one if kind == "infonce" else 0.0


def run_preset(name: str, batch: int, rounds: int, split_steps: int, cpu: str = "auto"):
    """A/B timing of one preset: the table row and unmix's stage split (unmix's linear layers on
    the CPU library ``cpu``: auto, onednn or blas)."""
    setting = presets.get(name).setting.replace(**{"train.cpu_gemm": cpu})
    obj, n = setting.objective, setting.latent.dim
    p = obj.p if obj.kind == "lp_infonce" else None
    exp = Experiment.build(setting)
    opt = torch.optim.Adam(exp.encoder.parameters(), lr=1e-4)
    gen_unmix = exp.stream_generator("train/batches")
    gen_ref = torch.Generator().manual_seed(1)
    ref = ReferenceStep(n, setting.model.space, p)

    def unmix_step() -> None:
        loss = exp.loss(gen_unmix, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def ref_step() -> None:
        z, z_pos = exp.process.sample_pairs(batch, gen_ref)
        with torch.no_grad():
            x = exp.mixing(torch.cat([z, z_pos]))
        ref.step(*x.split(batch))

    times: dict[str, list[float]] = {"ref": [], "unmix": []}
    peaks = {"ref": (0, 0), "unmix": (0, 0)}  # (peak RSS, largest rise during a step)
    for i in range(1 + rounds):
        for arm, step in (("ref", ref_step), ("unmix", unmix_step)):
            with PeakRSS() as mem:
                t0 = time.perf_counter()
                step()
                dt = time.perf_counter() - t0
            peaks[arm] = (max(peaks[arm][0], mem.peak), max(peaks[arm][1], mem.growth))
            if i > 0:
                times[arm].append(dt)
    t_ref, t_unmix = (statistics.median(times[k]) for k in ("ref", "unmix"))
    enc = encoder_matmul_flop(n, 2 * batch)
    gflop = {
        arm: (enc + loss_matmul_flop(obj.kind, p, batch, n, arm)) / 1e9 for arm in ("ref", "unmix")
    }
    label = "InfoNCE (dot)" if obj.kind == "infonce" else f"Lp p={obj.p:g}"
    split = bench_steps(setting, batch_size=batch, steps=split_steps, warmup=1)
    return (name, label, t_ref, t_unmix, peaks, gflop), split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=6144)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="timed A/B rounds per preset")
    parser.add_argument("--split-steps", type=int, default=2, help="timed steps of the split")
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument(
        "--cpu-gemm",
        default="auto",
        choices=("auto", "onednn", "blas"),
        help="the library of unmix's linear layers (train.cpu_gemm); the reference step always "
        "uses PyTorch's nn.Linear",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batch = args.batch_size

    peaks = gemm_peaks(torch.device("cpu"))  # 2048² float32, best of 5, each CPU library
    peak = max(peaks.values())
    print(
        f"batch size {batch}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
        f"{args.rounds} A/B rounds after 1 warm-up step each; median s/step; unmix's linear "
        f"layers on {resolve_cpu_gemm(args.cpu_gemm)}"
    )
    each = ", ".join(f"{lib} {v:.1f}" for lib, v in peaks.items())
    print(
        f"measured fp32 GEMM peak (2048×2048 @ 2048×2048, best of 5): {peak:.1f} GFLOP/s "
        f"({each}; the fractions below are of the best)\n"
    )

    rows, splits = [], []
    for name in args.presets.split(","):
        with cpu_gemm(args.cpu_gemm):
            row, split = run_preset(name, batch, args.rounds, args.split_steps, args.cpu_gemm)
        rows.append(row)
        splits.append((name, split))
        _, _, t_ref, t_unmix, _, _ = row
        print(
            f"  {name}: reference {t_ref:.3f} s, unmix {t_unmix:.3f} s, ratio {t_ref / t_unmix:.2f}",
            flush=True,
        )

    print()
    print(
        "| preset | loss | reference s/step | unmix s/step | ratio ref/unmix | "
        "reference peak RSS | unmix peak RSS | matmul GFLOP ref / unmix | "
        "% of GEMM peak ref / unmix |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, label, t_ref, t_unmix, peaks, gflop in rows:
        frac_ref = 100 * gflop["ref"] / t_ref / peak
        frac_unmix = 100 * gflop["unmix"] / t_unmix / peak
        print(
            f"| {name} | {label} | {t_ref:.3f} | {t_unmix:.3f} | {t_ref / t_unmix:.2f} | "
            f"{_mib(peaks['ref'])} | {_mib(peaks['unmix'])} | "
            f"{gflop['ref']:.2f} / {gflop['unmix']:.2f} | {frac_ref:.0f} % / {frac_unmix:.0f} % |"
        )
    print()
    print("unmix stage split (unmix.bench.bench_steps, median s):\n")
    print("| preset | sample | forward (mixing + encoder) | loss | backward + Adam | total |")
    print("|---|---|---|---|---|---|")
    for name, r in splits:
        s = r.stages
        print(
            f"| {name} | {s['sample']:.3f} | {s['forward']:.3f} | {s['loss']:.3f} | "
            f"{s['backward']:.3f} | {r.seconds_per_step:.3f} |"
        )
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
    print(f"\nprocess peak RSS (ru_maxrss): {max_rss:.0f} MiB")


if __name__ == "__main__":
    main()
