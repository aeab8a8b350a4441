"""One reproduction driver for every paper: plan → run → rows → report.

``reproduce("zimmermann-table1", budget="quick", seeds=1)`` looks the target up in the papers'
registry (:mod:`unmix.papers`), resolves every planned run's setting (preset → budget → paper
recipe → column → seeds → overrides, :func:`unmix.resolve.resolve`), runs the unfinished ones
(:func:`unmix.sweep.run_jobs`), turns each finished run into a row (every metric of its summary,
timings, and the target's own fields) and writes ``out/<budget>/<target>.csv`` and ``.md`` (plus
the target's figures) from the rows — never from typed-in numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from unmix import runs
from unmix.devices import resolve_device
from unmix.errors import ConfigError
from unmix.papers import PAPERS, PlannedRun, Target, get_target
from unmix.reproduce.common import ReproduceReport, collect_rows, report_dir, write_report
from unmix.resolve import Resolved, resolve
from unmix.sweep import Job, JobOutcome, run_jobs, stale_fields

__all__ = ["ReproduceReport", "plan", "reproduce", "run_row"]

BOOKKEEPING = frozenset(
    {
        "steps",
        "steps_per_s",
        "resumed_from_step",
        "loss",
        "threads",
        "train_time_s",
        "wall_time_s",
        "cpu_time_s",
    }
)


def plan(
    target: str,
    budget: str,
    seeds: int,
    out: str | Path,
    baselines: bool = True,
    device: str = "cpu",
    overrides: dict[str, Any] | None = None,
) -> list[tuple[PlannedRun, Resolved, Job]]:
    """Every run of ``target``: its plan entry, resolved setting and job (run dir
    ``out/budget/<subdir>``)."""
    tgt = get_target(target)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ConfigError(f"--seeds must be a whole number >= 1, got {seeds!r}.")
    # a paper with table columns names every run after its column (…-unsupervised, …-identity)
    has_columns = bool(PAPERS[tgt.paper].columns) if tgt.paper in PAPERS else False
    planned = tgt.plan(seeds, baselines)
    common, scoped = split_scoped_overrides(overrides, target, planned)
    items = []
    for run in planned:
        data_seed = run.seed if run.data_seed is None else run.data_seed
        mine = {k: v for (scope, k), v in scoped.items() if scope in (run.column, run.preset)}
        resolved = resolve(
            run.preset,
            budget,
            column=run.column if has_columns else None,
            seeds={"data": data_seed, "train": run.seed},
            overrides={**common, **mine},
        )
        run_dir = Path(out) / budget / (run.subdir or f"{run.preset}/seed{run.seed}")
        job = Job(resolved.setting, run_dir, device, provenance=resolved.provenance)
        items.append((run, resolved, job))
    return items


def split_scoped_overrides(
    overrides: dict[str, Any] | None, target: str, planned: list[PlannedRun]
) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """``overrides`` split into those for every run and those scoped to a column or a row: a key
    ``SCOPE:path`` (``unsupervised:objective.tau``, ``zimmermann-table4-row1:train.steps``)
    applies to the runs whose column or preset is ``SCOPE``, after the unscoped ones (where a
    column's and a row's scope set one field of a run, the later on the command line wins). A
    scope that names no planned run's column or preset is refused, naming the ones there are."""
    common: dict[str, Any] = {}
    scoped: dict[tuple[str, str], Any] = {}
    columns = sorted({r.column for r in planned if r.column})
    presets = sorted({r.preset for r in planned})
    for key, value in (overrides or {}).items():
        scope, sep, path = key.partition(":")
        if not sep:
            common[key] = value
            continue
        if not path:
            raise ConfigError(
                f"override '{key}' names no field after its scope: write e.g. {scope}:train.lr=1e-3"
            )
        if scope not in columns and scope not in presets:
            names = ", ".join(columns + presets)
            raise ConfigError(
                f"override '{key}' is scoped to {scope!r}, which is no column or row of "
                f"{target} in this plan; scope it to one of: {names} (or drop 'SCOPE:')."
            )
        scoped[(scope, path)] = value
    return common, scoped


def estimate_seconds(jobs: list[Job], workers: int = 1, probe_steps: int = 2) -> float:
    """Rough wall time of the unfinished ``jobs``: each distinct (model, objective, batch) is
    timed for ``probe_steps`` steps (:func:`unmix.bench.bench_steps`), times its steps, plus the
    evaluations, over ``workers`` parallel processes."""
    from unmix.bench import bench_steps
    from unmix.sweep import needs_training

    cache: dict[str, float] = {}
    total = 0.0
    for job in jobs:
        if not needs_training(job):
            continue
        s = job.setting
        key = repr((s.model, s.objective, s.mixing, s.train.batch_size, s.train.threads))
        if key not in cache:
            import torch

            before = torch.get_num_threads()
            torch.set_num_threads(s.train.threads)
            try:
                r = bench_steps(s, s.train.batch_size, probe_steps, warmup=1, device=job.device)
                cache[key] = r.seconds_per_step
            finally:
                torch.set_num_threads(before)
        evals = s.train.steps // s.train.eval_every + 1
        total += s.train.steps * cache[key] + evals * 0.5
    return total / max(1, min(workers, len(jobs) or 1))


def run_row(run: PlannedRun, summary: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The generic row of a finished run: preset, column, seed, every metric in its summary,
    steps and timings, run directory."""
    metrics = {
        k: v
        for k, v in summary.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in BOOKKEEPING
    }
    return {
        "preset": run.preset,
        "column": run.column,
        "seed": run.seed,
        **metrics,
        "steps": summary.get("steps"),
        "train_time_s": summary.get("train_time_s"),
        "wall_time_s": summary.get("wall_time_s"),
        "cpu_time_s": summary.get("cpu_time_s"),
        "threads": summary.get("threads"),
        "run_dir": str(run_dir),
    }


def _finished_outcome(job: Job) -> JobOutcome:
    """``job``'s outcome without training: its summary where it finished with this setting."""
    if runs.is_finished(job.run_dir) and not stale_fields(job):
        return JobOutcome(job, runs.load_summary(job.run_dir), skipped=True)
    return JobOutcome(job, None, error=NOT_FINISHED)


#: The error of a planned run that ``report_only`` found unfinished (or of another setting).
NOT_FINISHED = "not finished (report only: nothing was trained)"


def reproduce(
    target: str,
    budget: str = "quick",
    seeds: int = 1,
    workers: int = 1,
    out: str | Path = "results",
    baselines: bool = True,
    device: str = "cpu",
    backend: str = "local",
    on_done: Callable[[JobOutcome], None] | None = None,
    overrides: dict[str, Any] | None = None,
    tensorboard: bool = False,
    on_plan: Callable[[list[Job]], None] | None = None,
    report_only: bool = False,
) -> ReproduceReport:
    """Run (or reuse) every run of ``target`` and write its report files into ``out/budget``.

    ``report_only``: train nothing — write the report from the runs already finished with the
    planned setting (a sweep still running or cut short); the others are listed in the report and
    in ``failures`` as not finished, and nothing on disk is moved."""
    t0 = time.perf_counter()
    device = resolve_device(device)  # one line now, not one failure per run
    tgt: Target = get_target(target)
    items = plan(target, budget, seeds, out, baselines, device, overrides)
    if tensorboard:
        items = [(run, res, replace(job, tensorboard=True)) for run, res, job in items]
    if on_plan is not None:
        on_plan([job for *_, job in items])
    if report_only:
        outcomes = [_finished_outcome(job) for *_, job in items]
    else:
        outcomes = run_jobs(
            [job for *_, job in items], workers=workers, backend=backend, on_done=on_done
        )

    def row(i: int, summary: dict[str, Any]) -> dict[str, Any]:
        run, resolved, job = items[i]
        out_row = run_row(run, summary, job.run_dir)
        if tgt.row is not None:
            out_row.update(tgt.row(run, resolved.setting, summary, job.run_dir, budget))
        return out_row

    rows, failures = collect_rows([run.label for run, *_ in items], outcomes, row)
    folder = report_dir(out, budget)
    md = tgt.report(rows, folder, budget, seeds)
    if failures:  # named beneath the table: not yet finished (--report-only) or failed
        if report_only:
            head = " (`--report-only`)"
            done = zip(items, outcomes, strict=True)
            which = "not yet finished: " + ", ".join(
                r.label for (r, *_), o in done if not o.summary
            )
        else:
            head = ""
            which = "failed: " + "; ".join(f.splitlines()[0].rstrip(".") for f in failures)
        md += (
            f"\n\n**Partial report**{head}: {len(rows)} of {len(items)} planned runs finished; "
            f"{which}.\n"
        )
    write_report(folder, target, rows, md)
    if tensorboard:
        from unmix.tracking import write_report_figures

        write_report_figures(folder, sorted(folder.glob(f"{target}*.png")))
    return ReproduceReport(target, folder, rows, md, time.perf_counter() - t0, failures)
