"""Module-level job functions for tests/test_sweep_reliability.py (spawned workers import them).

Run as ``python -c "import sweep_jobs; sweep_jobs.main()" OUT N_JOBS WORKERS`` it starts a sweep of
:func:`slow` jobs and, if interrupted, writes the outcomes to ``OUT/outcomes.json``.
"""

import os
import signal
import sys
import time
from pathlib import Path

from unmix import runs
from unmix.settings import Setting
from unmix.sweep import Job, SweepInterrupted, run_jobs, train_job

PID_FILE = "worker.pid"


def tiny(steps: int = 10) -> Setting:
    return Setting.from_dict(
        {
            "name": "tiny",
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5.0}},
            "model": {"hidden": [4]},
            "train": {
                "steps": steps,
                "batch_size": 32,
                "eval_every": 5,
                "eval_samples": 128,
                "checkpoint_every": 5,
            },
        }
    )


def die_or_train(job: Job) -> dict:
    """Kill this worker with SIGKILL for a run directory named ``die*``; else train."""
    if job.run_dir.name.startswith("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    return train_job(job)


def slow(job: Job) -> dict:
    """Write this worker's pid into the run directory, then sleep (until killed)."""
    runs.atomic_write_text(job.run_dir / PID_FILE, str(os.getpid()))
    time.sleep(600)
    return {"status": "finished"}


def main() -> None:
    out, n_jobs, workers = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    jobs = [Job(tiny(), out / f"run{k}") for k in range(n_jobs)]
    try:
        run_jobs(jobs, workers=workers, run_fn=slow)
    except SweepInterrupted as err:
        rows = [{"run": o.job.run_dir.name, "error": o.error} for o in err.outcomes]
        runs.write_json(out / "outcomes.json", {"signal": err.signal_name, "outcomes": rows})
        print(err, flush=True)
        sys.exit(130)
