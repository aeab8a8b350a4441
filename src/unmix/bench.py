"""Throughput benchmark: seconds per training step at the paper's architecture and batch size.

Times each stage of a step (sampling — for a finite image data set: reading the anchor and
positive images —, mixing + encoder forward, loss, backward + Adam) separately,
after warm-up steps, and reports the median over ``steps`` timed steps.
"""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass

import torch

from unmix.devices import bf16_warning, native_bf16, resolve_device, set_heap_pad
from unmix.errors import ConfigError
from unmix.experiment import Experiment
from unmix.models.linear import cpu_gemm, onednn_available
from unmix.objectives._compiled import loss_kernels
from unmix.objectives.base import Contrastive
from unmix.settings import Setting

BENCH_IMAGES = 2048
"""Smallest training set rendered for timing a ``data.kind: rendered`` setting."""


@dataclass
class BenchResult:
    """One benchmark: median seconds per step and per stage, and what bounds them — the step's
    matmul GFLOP (:func:`matmul_gflop`) beside the GEMM peak measured in the same process
    (:func:`gemm_peak_gflops`), so ``fraction_of_peak`` is a measured figure. The peak is
    float32's (the faster library's, on CPU), or bfloat16's for a bf16 step on hardware with
    bf16 arithmetic (:func:`unmix.devices.native_bf16`)."""

    setting: str
    batch_size: int
    device: str
    threads: int
    seconds_per_step: float
    stages: dict[str, float]
    precision: str = "fp32"
    peak_rss_mb: float = float("nan")
    gflops: float = float("nan")
    gemm_peak_gflops: float = float("nan")
    cpu_gemm: str = "blas"
    gemm_peaks: dict[str, float] | None = None
    loss_kernels: str = "-"

    @property
    def steps_per_second(self) -> float:
        return 1.0 / self.seconds_per_step

    @property
    def fraction_of_peak(self) -> float:
        """Achieved matmul throughput of the whole step over the measured GEMM peak."""
        return self.gflops / self.seconds_per_step / self.gemm_peak_gflops

    def to_dict(self) -> dict:
        from dataclasses import asdict

        out = asdict(self)
        out["steps_per_second"] = self.steps_per_second
        out["fraction_of_peak"] = self.fraction_of_peak
        return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (MiB; Linux ``ru_maxrss`` is in KiB)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def gemm_peak_gflops(
    device: torch.device,
    dtype: torch.dtype = torch.float32,
    n: int = 2048,
    repeats: int = 5,
    library: str = "best",
) -> float:
    """Best-of-``repeats`` GFLOP/s of an n×n matmul on ``device`` in ``dtype`` (2n³ flops).

    On CPU in float32, ``library`` picks PyTorch's BLAS (``"blas"``), oneDNN (``"onednn"``, the
    library :class:`unmix.models.linear.Linear` uses) or the faster of the two (``"best"``, the
    machine's peak as far as this process can reach it)."""
    if device.type == "cpu" and dtype == torch.float32 and library == "best":
        return max(gemm_peaks(device, n, repeats).values())
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    use_dnn = library == "onednn" and device.type == "cpu" and dtype == torch.float32
    best = float("inf")
    for _ in range(repeats + 1):
        _sync(device)
        t0 = time.perf_counter()
        if use_dnn:
            torch.ops.mkldnn._linear_pointwise(a, b, None, "none", [], "")
        else:
            a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def gemm_peaks(device: torch.device, n: int = 2048, repeats: int = 5) -> dict[str, float]:
    """float32 :func:`gemm_peak_gflops` on CPU of each library this build has: ``blas`` and,
    where available, ``onednn``."""
    libs = ["blas"] + (["onednn"] if onednn_available() else [])
    return {lib: gemm_peak_gflops(device, torch.float32, n, repeats, lib) for lib in libs}


def matmul_gflop(model: torch.nn.Module, rows: int) -> float:
    """GFLOP of the linear layers of ``model`` for a training step on ``rows`` inputs: forward
    2·rows·in·out per layer, backward twice that (input and weight gradients)."""
    total = sum(
        m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear)
    )
    return 3 * 2 * rows * total / 1e9


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_steps(
    setting: Setting,
    batch_size: int = 6144,
    steps: int = 5,
    warmup: int = 2,
    device: str = "cpu",
    precision: str | None = None,
) -> BenchResult:
    """Time ``steps`` training steps (after ``warmup``) of ``setting`` at ``batch_size`` on
    ``device`` with ``precision`` (default: the setting's ``train.precision``)."""
    if setting.data is not None and setting.data.kind == "rendered":
        # The step time does not depend on the data set's size (beyond the nearest-neighbour
        # lookup, logarithmically): time on a small rendered set, not the paper's 250k images.
        setting = setting.replace(
            **{"data.n_train": max(4 * batch_size, BENCH_IMAGES), "data.n_test": 64}
        )
    for name, value, low in (
        ("batch_size", batch_size, 2),
        ("steps", steps, 1),
        ("warmup", warmup, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(
                f"--{name.replace('_', '-')} must be a whole number >= {low}, got {value!r}."
            )
    device = resolve_device(device)
    precision = precision or setting.train.precision
    if precision not in ("fp32", "bf16"):
        raise ConfigError(f"--precision must be fp32 or bf16, got {precision!r}.")
    if message := bf16_warning(precision, device):
        warnings.warn(message, stacklevel=2)
    set_heap_pad(setting.train.heap_pad_mb)  # as a training run does
    with (
        cpu_gemm(setting.train.cpu_gemm) as lib,
        loss_kernels(setting.train.loss_kernels, device.split(":")[0]) as kernels,
    ):
        exp = Experiment.build(setting, device)
        autocast = torch.autocast(
            exp.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"
        )
        trainable = [p for p in exp.encoder.parameters() if p.requires_grad]
        # A model with nothing to train (``model.kind: identity``, the papers' Identity column) is
        # timed for sampling, forward and loss only, as the trainer does with it.
        opt = torch.optim.Adam(trainable, lr=1e-4) if trainable else None
        gen = exp.stream_generator("train/batches")
        dev = exp.device
        obj = exp.objective
        # (a negatives queue is filled by the objective itself: timed as one call)
        split = isinstance(obj, Contrastive) and not obj.n_negatives and not obj.queue_size
        times: dict[str, list[float]] = {"sample": [], "forward": [], "loss": [], "backward": []}
        for i in range(warmup + steps):
            _sync(dev)
            t0 = time.perf_counter()
            batch = exp.batch(batch_size, gen)  # latents + mixing (or images read from disk)
            _sync(dev)
            t1 = time.perf_counter()
            if split:  # time the encoder and the loss apart
                with autocast:
                    h = exp.encoder(torch.cat([batch.x, batch.x_pos]))
                h, h_pos = h.float().split(batch_size)
                _sync(dev)
                t2 = time.perf_counter()
                loss = obj.loss(h, h_pos)
            else:
                t2 = t1
                with autocast:
                    loss = obj(exp.encoder, batch)
            _sync(dev)
            t3 = time.perf_counter()
            if opt is not None:
                opt.zero_grad()
                loss.backward()
                opt.step()
            _sync(dev)
            t4 = time.perf_counter()
            if i >= warmup:
                for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                    times[key].append(dt)
        stages = {k: statistics.median(v) for k, v in times.items()}
        m = int(getattr(obj, "n_negatives", 0))
        rows = 2 * batch_size + (m if getattr(obj, "shared_negatives", False) else batch_size * m)
    # bf16 steps are measured against the bf16 peak where the hardware has bf16 arithmetic;
    # without it PyTorch's bf16 products are slow generic code, and the float32 peak is the
    # machine's (the step's fraction of it then says how much bf16 costs)
    bf16_peak = precision == "bf16" and native_bf16(dev)
    peak_dtype = torch.bfloat16 if bf16_peak else torch.float32
    peaks = gemm_peaks(dev) if dev.type == "cpu" and peak_dtype == torch.float32 else None
    return BenchResult(
        setting.name,
        batch_size,
        str(dev),
        torch.get_num_threads(),
        sum(stages.values()),
        stages,
        precision,
        peak_rss_mb(),
        matmul_gflop(exp.encoder, rows),
        max(peaks.values()) if peaks else gemm_peak_gflops(dev, peak_dtype),
        lib if dev.type == "cpu" and precision == "fp32" else "-",
        peaks,
        "+".join(sorted(kernels.used)) or "-",  # the general-p losses' block kernels, if any ran
    )
