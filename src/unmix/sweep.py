"""Sweeps: many (setting, seed) runs, in parallel worker processes, skipping finished ones.

A sweep is a list of :class:`Job` s, each a fully specified setting and its own run directory.
:func:`run_jobs` runs the unfinished ones with a local process pool (``workers`` processes, torch
limited to ``threads`` threads each so the pool does not oversubscribe the CPU) or, with
``backend="ray"``, as Ray tasks on whatever cluster ``ray.init()`` connects to (optional extra:
``pip install unmix[ray]``). A job that fails is reported, and the others go on. Rendered image
data sets the unfinished jobs need are rendered first, once each, in the calling process.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unmix import runs
from unmix.errors import ConfigError
from unmix.settings import Setting


@dataclass(frozen=True)
class Job:
    setting: Setting
    run_dir: Path
    device: str = "cpu"


@dataclass
class JobOutcome:
    job: Job
    summary: dict[str, Any] | None
    error: str | None = None
    skipped: bool = False


def _run_one(job: Job, threads: int) -> dict[str, Any]:
    import torch

    from unmix.train import train

    if threads:
        torch.set_num_threads(threads)
    resume = (job.run_dir / runs.CHECKPOINT).exists()
    return train(job.setting, job.run_dir, device=job.device, resume=resume).summary


def _safe_run(job: Job, threads: int) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return _run_one(job, threads), None
    except Exception as err:  # reported per job; the sweep goes on
        return None, f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}"


def run_jobs(
    jobs: list[Job],
    workers: int = 1,
    threads: int | None = None,
    backend: str = "local",
    on_done: Callable[[JobOutcome], None] | None = None,
) -> list[JobOutcome]:
    """Run every unfinished job; return one outcome per job in the input order."""
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}.")
    outcomes: dict[int, JobOutcome] = {}
    todo: list[tuple[int, Job]] = []
    for i, job in enumerate(jobs):
        if runs.is_finished(job.run_dir):
            outcomes[i] = JobOutcome(job, runs.load_summary(job.run_dir), skipped=True)
            if on_done:
                on_done(outcomes[i])
        else:
            todo.append((i, job))
    if todo:
        from unmix.datasets import prepare_rendered

        prepare_rendered([job.setting for _, job in todo])
    if threads is None:
        import os

        threads = max(1, (os.cpu_count() or 1) // workers)

    def finish(i: int, job: Job, result: tuple[dict | None, str | None]) -> None:
        outcomes[i] = JobOutcome(job, result[0], result[1])
        if on_done:
            on_done(outcomes[i])

    if backend == "ray":
        _run_ray(todo, threads, finish)
    elif backend != "local":
        raise ConfigError(f"backend must be 'local' or 'ray', got '{backend}'.")
    elif workers == 1:
        for i, job in todo:
            finish(i, job, _safe_run(job, threads))
    else:
        ctx = mp.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_safe_run, job, threads): (i, job) for i, job in todo}
            for fut in cf.as_completed(futures):
                i, job = futures[fut]
                finish(i, job, fut.result())
    return [outcomes[i] for i in range(len(jobs))]


def _run_ray(todo, threads, finish) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError("backend 'ray' needs Ray: pip install 'unmix[ray]'.") from None
    if not ray.is_initialized():
        ray.init()
    remote = ray.remote(num_cpus=threads)(_safe_run)
    refs = {remote.remote(job, threads): (i, job) for i, job in todo}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i, job = refs[done[0]]
        finish(i, job, ray.get(done[0]))
