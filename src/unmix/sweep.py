"""Sweeps: many (setting, seed) runs, in parallel worker processes, skipping finished ones.

A sweep is a list of :class:`Job` s, each a fully specified setting and its own run directory.
:func:`run_jobs` runs the unfinished ones — in the calling process with ``workers=1``, else in up
to ``workers`` spawned worker processes — or, with ``backend="ray"``, as Ray tasks on whatever
cluster ``ray.init()`` connects to (optional extra: ``pip install unmix[ray]``). Rendered image
data sets the unfinished jobs need are rendered first, once each, in the calling process.

What survives what (docs/reliability.md):

* A job that raises is reported in its :class:`JobOutcome`, and the others go on. A worker
  process that dies (``kill -9``, a segfault, the OOM killer) fails only the job it was running;
  a new worker takes the next job.
* SIGINT (Ctrl-C) or SIGTERM to the calling process stops every worker within a few seconds and
  raises :class:`SweepInterrupted` (a ``KeyboardInterrupt``) holding the outcomes, the running
  jobs' marked ``"interrupted"``. Every run keeps its last checkpoint: rerunning the same sweep
  resumes them and skips the finished ones.
* Workers exit by themselves within about a second if the calling process dies.
* Whoever runs a job holds its run directory's lock (:func:`unmix.runs.run_lock`); a job whose
  directory is locked by another process is skipped (``skipped=True``, ``error`` says so), so
  two sweeps never write into one run directory.
* Each job runs with ``threads`` torch threads, 1 by default, whatever ``workers`` and the host:
  the numbers of a run do not depend on how it was scheduled. ``threads=0`` leaves torch's own
  default (host-dependent). The count is recorded in each run's ``manifest.json``
  (``torch_threads``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from unmix import runs
from unmix.errors import ConfigError, UnmixError
from unmix.settings import Setting

#: torch threads per job when ``run_jobs`` is not told otherwise
DEFAULT_THREADS = 1
#: seconds a worker's watchdog waits between checks that the sweep process is alive
WATCHDOG_PERIOD_S = 0.5
#: seconds workers get to exit after SIGTERM before they are killed (on an interrupt)
TERMINATE_GRACE_S = 4.0

INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Job:
    """One run of a sweep: a resolved setting, its run directory, the device, and the
    provenance of its fields (written into ``manifest.json``)."""

    setting: Setting
    run_dir: Path
    device: str = "cpu"
    provenance: dict[str, str] | None = field(default=None, compare=False, hash=False)
    tensorboard: bool = False

    def __reduce__(self):
        # a worker process rebuilds the job after importing the parent's plugins, so that a
        # setting of user-registered kinds validates there too
        from unmix.plugins import LOADED

        state = (
            self.setting.to_dict(),
            self.run_dir,
            self.device,
            self.provenance,
            self.tensorboard,
            list(LOADED),
        )
        return (_rebuild_job, state)


def _rebuild_job(setting, run_dir, device, provenance, tensorboard, plugins) -> Job:
    from unmix.plugins import load_plugins

    load_plugins(plugins)
    return Job(Setting.from_dict(setting), run_dir, device, provenance, tensorboard)


@dataclass
class JobOutcome:
    job: Job
    summary: dict[str, Any] | None
    error: str | None = None
    skipped: bool = False


class SweepInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a sweep. ``outcomes`` has one entry per job (input order): the
    finished and skipped ones as usual, the others with ``error`` starting ``"interrupted"``.
    Rerunning the same sweep resumes the interrupted runs from their last checkpoints."""

    def __init__(self, signal_name: str, outcomes: list[JobOutcome]) -> None:
        self.signal_name = signal_name
        self.outcomes = outcomes
        n = sum(1 for o in outcomes if o.error and o.error.startswith(INTERRUPTED))
        super().__init__(
            f"{signal_name}: sweep stopped, {n} run(s) interrupted; rerun the same command to "
            "resume them (finished runs are skipped)."
        )

    @property
    def interrupted(self) -> list[JobOutcome]:
        return [o for o in self.outcomes if o.error and o.error.startswith(INTERRUPTED)]


def train_job(job: Job) -> dict[str, Any]:
    """The default job: train ``job.setting`` into ``job.run_dir``, resuming a checkpoint there."""
    from unmix.train import train

    resume = (job.run_dir / runs.CHECKPOINT).exists()
    summary = job.run_dir / runs.SUMMARY
    if not resume and summary.exists() and not runs.is_finished(job.run_dir):
        # an unfinished or corrupt summary with no checkpoint: nothing to resume; keep the file
        # (renamed, nothing is lost) and train afresh instead of refusing forever
        summary.rename(summary.with_name(f"{runs.SUMMARY}.unfinished-{int(time.time())}"))
    return train(
        job.setting,
        job.run_dir,
        device=job.device,
        resume=resume,
        provenance=job.provenance,
        tensorboard=job.tensorboard,
    ).summary


Result = tuple[dict[str, Any] | None, str | None, bool]  # (summary, error, skipped)


def _safe_run(
    job: Job, threads: int, run_fn: Callable[[Job], dict[str, Any]] | None = None
) -> Result:
    """Run one job under its run directory's lock; every failure becomes an error string."""
    import torch

    before = torch.get_num_threads()
    try:
        if threads:
            torch.set_num_threads(threads)
        with runs.run_lock(job.run_dir):
            if runs.is_finished(job.run_dir):  # finished by someone else meanwhile
                return runs.load_summary(job.run_dir), None, True
            runs.clean_temp_files(job.run_dir)
            return (run_fn or train_job)(job), None, False
    except runs.RunLocked as err:
        return None, str(err), True
    except UnmixError as err:  # unmix's own errors are one readable line: no traceback
        return None, f"{type(err).__name__}: {err}", False
    except Exception as err:  # reported per job, with where it came from; the sweep goes on
        return None, f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}", False
    finally:
        torch.set_num_threads(before)


def stale_fields(job: Job) -> list[str]:
    """The fields in which a finished run's config.yaml differs from the job's setting (the
    recipe changed since it was trained); [] when they agree or there is no config to compare."""
    import yaml

    from unmix.settings import changed_fields

    path = job.run_dir / runs.CONFIG
    try:
        trained = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return []
    if not isinstance(trained, dict):
        return []
    try:  # both through the same validation, so defaults and YAML spellings compare equal
        trained = Setting.from_dict(trained).to_dict()
    except Exception:
        return ["config.yaml"]
    return changed_fields(trained, job.setting.to_dict())


def needs_training(job: Job) -> bool:
    """True unless the job's run directory holds a finished run *of the job's setting* (an
    unfinished run, or a finished one of another setting, see :func:`stale_fields`, trains)."""
    return not runs.is_finished(job.run_dir) or bool(stale_fields(job))


def _move_stale(job: Job, fields: list[str]) -> None:
    """Keep a finished run whose setting is no longer the job's (nothing is lost): rename it to
    ``<run>.stale-<time>`` and say so, so the job trains afresh instead of reusing a result of
    another setting."""
    import warnings

    dest = job.run_dir.with_name(f"{job.run_dir.name}.stale-{int(time.time())}")
    job.run_dir.rename(dest)
    shown = ", ".join(fields[:4]) + (" …" if len(fields) > 4 else "")
    warnings.warn(
        f"{job.run_dir} was trained with another setting ({shown}); kept as {dest.name}, "
        "training it again with the current one.",
        stacklevel=3,
    )


def _set_aside_if_stale(job: Job) -> None:
    """Move a run of another setting out of the job's way (:func:`_move_stale`): a finished one
    whatever changed; an unfinished one (a sweep cut short) when a field other than ``train.*``
    changed, since its checkpoint cannot resume into the job's setting (the resume rule,
    :func:`unmix.train.blocks_resume`). A run another process holds is left alone (that job
    reports it locked)."""
    from unmix.train import blocks_resume

    stale = stale_fields(job)
    if not runs.is_finished(job.run_dir):
        stale = [f for f in stale if blocks_resume(f)]
    if not stale:
        return
    try:
        with runs.run_lock(job.run_dir):
            _move_stale(job, stale)
    except runs.RunLocked:
        pass


def run_jobs(
    jobs: list[Job],
    workers: int = 1,
    threads: int | None = None,
    backend: str = "local",
    on_done: Callable[[JobOutcome], None] | None = None,
    *,
    run_fn: Callable[[Job], dict[str, Any]] | None = None,
) -> list[JobOutcome]:
    """Run every unfinished job; return one outcome per job in the input order.

    ``threads``: torch threads per job (default :data:`DEFAULT_THREADS`; 0 = torch's default).
    ``on_done`` is called once per job as its outcome is known (also for the jobs an interrupt
    stopped while running). ``run_fn(job) -> summary`` replaces the trainer (default
    :func:`train_job`); with ``workers > 1`` it must be a module-level function (it is pickled
    into spawned processes). Raises :class:`SweepInterrupted` on SIGINT/SIGTERM.
    """
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}.")
    if backend not in ("local", "ray"):
        raise ConfigError(f"backend must be 'local' or 'ray', got '{backend}'.")
    threads = DEFAULT_THREADS if threads is None else threads
    if threads < 0:
        raise ConfigError(f"threads must be >= 0, got {threads}.")
    outcomes: dict[int, JobOutcome] = {}
    todo: list[tuple[int, Job]] = []
    for i, job in enumerate(jobs):
        _set_aside_if_stale(job)
        if runs.is_finished(job.run_dir):
            outcomes[i] = JobOutcome(job, runs.load_summary(job.run_dir), skipped=True)
            if on_done:
                on_done(outcomes[i])
        else:
            todo.append((i, job))
    if todo:
        from unmix.datasets import prepare_rendered

        prepare_rendered([job.setting for _, job in todo])

    def finish(i: int, job: Job, result: Result) -> None:
        summary, error, skipped = result
        outcomes[i] = JobOutcome(job, summary, error, skipped)
        if on_done:
            on_done(outcomes[i])

    running: dict[int, Job] = {}
    with _Signals() as signals:
        try:
            if backend == "ray":
                _run_ray(todo, threads, finish, run_fn)
            elif workers == 1:
                for i, job in todo:
                    running[i] = job
                    finish(i, job, _safe_run(job, threads, run_fn))
                    del running[i]
            else:
                _run_pool(todo, workers, threads, run_fn, finish, running)
        except KeyboardInterrupt:
            name = signals.received or "SIGINT"
            for i, job in sorted(running.items()):
                finish(i, job, (None, f"{INTERRUPTED} by {name}", False))
            for i, job in todo:
                if i not in outcomes:
                    outcomes[i] = JobOutcome(
                        job, None, f"{INTERRUPTED} by {name} before it started"
                    )
            raise SweepInterrupted(name, [outcomes[i] for i in range(len(jobs))]) from None
    return [outcomes[i] for i in range(len(jobs))]


class _Signals:
    """While active (in the main thread), SIGINT and SIGTERM raise KeyboardInterrupt once and
    remember which signal it was; later ones are ignored until the sweep has cleaned up."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.received is None:
            self.received = signal.Signals(signum).name
            raise KeyboardInterrupt

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


# ---------------------------------------------------------------------------------------------
# local worker processes


def _watch_parent(parent_pid: int) -> None:
    """Exit the worker as soon as the sweep process that started it is gone."""
    while True:
        if os.getppid() != parent_pid:
            os._exit(70)
        time.sleep(WATCHDOG_PERIOD_S)


def _worker_main(conn: Connection, parent_pid: int, threads: int, run_fn: Any) -> None:
    """A worker: run the jobs the parent sends, one at a time, and send back each result."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent; it stops us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        i, job = msg
        result = _safe_run(job, threads, run_fn)
        try:
            conn.send((i, result))
        except (OSError, EOFError):
            return
        except Exception as err:  # a summary that does not pickle
            conn.send((i, (None, f"{type(err).__name__}: result not transferable: {err}", False)))


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    current: tuple[int, Job] | None = None


def _death(proc: Any) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    return (
        f"worker process {proc.pid} died ({how}) while running this job; its run directory keeps "
        "the last checkpoint: rerun the same command to resume it."
    )


def _run_pool(
    todo: list[tuple[int, Job]],
    workers: int,
    threads: int,
    run_fn: Any,
    finish: Callable[[int, Job, Result], None],
    running: dict[int, Job],
) -> None:
    """At most ``workers`` spawned processes; a dead one fails its job and is replaced."""
    ctx = mp.get_context("spawn")
    queue = deque(todo)
    pool: list[_Worker] = []

    def start() -> _Worker:
        mine, theirs = ctx.Pipe(duplex=True)
        proc = ctx.Process(
            target=_worker_main,
            args=(theirs, os.getpid(), threads, run_fn),
            name="unmix-sweep-worker",
            daemon=False,  # a job may start processes of its own
        )
        proc.start()
        theirs.close()
        w = _Worker(proc, mine)
        pool.append(w)
        return w

    def assign(w: _Worker) -> bool:
        i, job = queue.popleft()
        try:
            w.conn.send((i, job))
        except (OSError, EOFError):  # died before it got the job: the job goes back
            queue.appendleft((i, job))
            return False
        w.current = (i, job)
        running[i] = job
        return True

    def retire(w: _Worker) -> None:
        pool.remove(w)
        w.conn.close()
        w.proc.join(timeout=1)

    try:
        while queue or any(w.current for w in pool):
            for w in [w for w in pool if w.current is None]:
                if queue and not assign(w):
                    retire(w)
            while queue and len(pool) < workers:
                assign(start())
            ready = set(wait([w.conn for w in pool] + [w.proc.sentinel for w in pool], 1.0))
            for w in list(pool):
                got = False
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.current is not None and w.conn.poll():
                            _, result = w.conn.recv()
                            (i, job), w.current, got = w.current, None, True
                            del running[i]
                            finish(i, job, result)
                    except (EOFError, OSError):
                        pass
                if not got and not w.proc.is_alive():
                    w.proc.join(timeout=1)
                    if w.current is not None:
                        i, job = w.current
                        w.current = None
                        del running[i]
                        finish(i, job, (None, _death(w.proc), False))
                    retire(w)
    except BaseException:
        _stop(pool)
        raise
    for w in pool:  # all idle: ask them to exit
        try:
            w.conn.send(None)
        except (OSError, EOFError):
            pass
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for w in pool:
        w.proc.join(timeout=max(0.1, deadline - time.monotonic()))
    _stop(pool)


def _stop(pool: list[_Worker]) -> None:
    """SIGTERM every live worker, SIGKILL those still there after the grace period; reap all."""
    for w in pool:
        if w.proc.is_alive():
            w.proc.terminate()
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for w in pool:
        w.proc.join(timeout=max(0.0, deadline - time.monotonic()))
    for w in pool:
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join(timeout=2)
        w.conn.close()


def _run_ray(todo, threads, finish, run_fn=None) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError("backend 'ray' needs Ray: pip install 'unmix[ray]'.") from None
    if not ray.is_initialized():
        ray.init()
    remote = ray.remote(num_cpus=max(1, threads))(_safe_run)
    refs = {remote.remote(job, threads, run_fn): (i, job) for i, job in todo}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i, job = refs[done[0]]
        finish(i, job, ray.get(done[0]))
