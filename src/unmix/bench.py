"""Throughput benchmark: seconds per training step at the paper's architecture and batch size.

Times each stage of a step (sampling — for a finite image data set: reading the anchor and
positive images —, mixing + encoder forward, loss, backward + Adam) separately,
after warm-up steps, and reports the median over ``steps`` timed steps.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from unmix.devices import resolve_device
from unmix.errors import ConfigError
from unmix.experiment import Experiment
from unmix.objectives.base import Contrastive
from unmix.settings import Setting

BENCH_IMAGES = 2048
"""Smallest training set rendered for timing a ``data.kind: rendered`` setting."""


@dataclass
class BenchResult:
    setting: str
    batch_size: int
    device: str
    threads: int
    seconds_per_step: float
    stages: dict[str, float]

    @property
    def steps_per_second(self) -> float:
        return 1.0 / self.seconds_per_step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_steps(
    setting: Setting, batch_size: int = 6144, steps: int = 5, warmup: int = 2, device: str = "cpu"
) -> BenchResult:
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
    exp = Experiment.build(setting, device)
    opt = torch.optim.Adam(exp.encoder.parameters(), lr=1e-4)
    gen = exp.stream_generator("train/batches")
    dev = exp.device
    obj = exp.objective
    split = isinstance(obj, Contrastive) and not obj.n_negatives
    times: dict[str, list[float]] = {"sample": [], "forward": [], "loss": [], "backward": []}
    for i in range(warmup + steps):
        _sync(dev)
        t0 = time.perf_counter()
        batch = exp.batch(batch_size, gen)  # latents + mixing (or images read from disk)
        _sync(dev)
        t1 = time.perf_counter()
        if split:  # time the encoder and the loss apart
            h, h_pos = exp.encoder(torch.cat([batch.x, batch.x_pos])).split(batch_size)
            _sync(dev)
            t2 = time.perf_counter()
            loss = obj.loss(h, h_pos)
        else:
            t2 = t1
            loss = obj(exp.encoder, batch)
        _sync(dev)
        t3 = time.perf_counter()
        opt.zero_grad()
        loss.backward()
        opt.step()
        _sync(dev)
        t4 = time.perf_counter()
        if i >= warmup:
            for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                times[key].append(dt)
    stages = {k: statistics.median(v) for k, v in times.items()}
    return BenchResult(
        setting.name, batch_size, str(dev), torch.get_num_threads(), sum(stages.values()), stages
    )
