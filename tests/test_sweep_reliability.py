"""Sweeps survive dead workers, signals, a dead parent and a second sweep in the same folders."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sweep_jobs

from unmix import runs
from unmix.sweep import DEFAULT_THREADS, Job, needs_training, run_jobs

SRC = Path(__file__).resolve().parents[1] / "src"
HERE = Path(__file__).resolve().parent


def _gone(pid: int) -> bool:
    """True if process ``pid`` has exited (a zombie nobody reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return state in ("Z", "X")


def _wait_for(pred, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def _start_sweep(out: Path, n_jobs: int, workers: int) -> tuple[subprocess.Popen, list[int]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)]),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sweep_jobs; sweep_jobs.main()",
            str(out),
            str(n_jobs),
            str(workers),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, like a shell job
    )
    pid_files = [out / f"run{k}" / sweep_jobs.PID_FILE for k in range(workers)]
    ok = _wait_for(lambda: all(p.exists() for p in pid_files), timeout=90)
    if not ok:
        proc.kill()
        pytest.fail(f"workers did not start: {proc.communicate()[0]}")
    return proc, [int(p.read_text()) for p in pid_files]


def test_a_killed_worker_fails_only_its_job(tmp_path):
    jobs = [Job(sweep_jobs.tiny(), tmp_path / name) for name in ("ok0", "die", "ok1")]
    seen = []
    outcomes = run_jobs(jobs, workers=2, run_fn=sweep_jobs.die_or_train, on_done=seen.append)
    ok0, die, ok1 = outcomes
    assert ok0.summary["status"] == "finished" and ok1.summary["status"] == "finished"
    assert die.summary is None and "died (killed by SIGKILL)" in die.error
    assert "rerun the same command" in die.error
    assert len(seen) == 3 and runs.is_finished(tmp_path / "ok1")
    # the rerun trains the failed run only
    again = run_jobs(jobs, workers=1)
    assert [o.skipped for o in again] == [True, False, True]
    assert again[1].summary["status"] == "finished"


@pytest.mark.parametrize(
    "sig,workers", [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 1)]
)
def test_a_signal_stops_every_worker_and_reports_the_interrupted_runs(tmp_path, sig, workers):
    proc, pids = _start_sweep(tmp_path, n_jobs=3, workers=workers)
    t0 = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # Ctrl-C: the whole foreground group gets it
    else:
        os.kill(proc.pid, sig)
    out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 10, out
    assert proc.returncode == 130, out
    assert "rerun the same command" in out
    assert all(_wait_for(lambda p=p: _gone(p), timeout=2) for p in pids)
    report = json.loads((tmp_path / "outcomes.json").read_text())
    assert report["signal"] == sig.name
    errors = [r["error"] for r in report["outcomes"]]
    started = [f"interrupted by {sig.name}"] * workers
    assert errors == started + [f"interrupted by {sig.name} before it started"] * (3 - workers)


def test_workers_exit_when_the_sweep_process_dies(tmp_path):
    proc, pids = _start_sweep(tmp_path, n_jobs=2, workers=2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert all(_wait_for(lambda p=p: _gone(p), timeout=30) for p in pids)


def test_a_locked_run_directory_is_skipped(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen(  # another process holds the lock
        [
            sys.executable,
            "-c",
            "import sys, filelock; l = filelock.FileLock(sys.argv[1]); "
            "l.acquire(); print('held', flush=True); sys.stdin.read()",
            str(run_dir / runs.LOCK),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        (outcome,) = run_jobs([Job(sweep_jobs.tiny(), run_dir)], workers=1)
        assert outcome.skipped and outcome.summary is None
        assert "locked by another process" in outcome.error
        assert not (run_dir / runs.CHECKPOINT).exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    (outcome,) = run_jobs([Job(sweep_jobs.tiny(), run_dir)], workers=1)  # released: it runs
    assert not outcome.skipped and outcome.summary["status"] == "finished"


def test_threads_default_to_one_whatever_the_workers(tmp_path):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        (outcome,) = run_jobs([Job(sweep_jobs.tiny(), tmp_path / "run")], workers=1)
        assert torch.get_num_threads() == 2  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)
    assert DEFAULT_THREADS == 1 and outcome.summary["status"] == "finished"
    manifest = json.loads((tmp_path / "run" / runs.MANIFEST).read_text())
    assert manifest["torch_threads"] == 1


def test_a_finished_run_of_another_setting_is_kept_aside_and_retrained(tmp_path):
    """Reusing a finished run whose config.yaml no longer matches the job (the recipe changed)
    would be a silent wrong result: it is renamed ``<run>.stale-<time>`` (nothing lost), a
    warning names the fields, and the job trains afresh. An unchanged job is skipped as before."""
    run_dir = tmp_path / "run"
    first = sweep_jobs.tiny()
    (done,) = run_jobs([Job(first, run_dir)], workers=1)
    assert not done.skipped
    (again,) = run_jobs([Job(first, run_dir)], workers=1)
    assert again.skipped  # same setting: reused, no warning
    changed = first.replace(**{"train.steps": first.train.steps + 2})
    # counted as a run to train before the sweep starts (the progress line, the time estimate)
    assert not needs_training(Job(first, run_dir)) and needs_training(Job(changed, run_dir))
    with pytest.warns(UserWarning, match=r"trained with another setting \(train.steps\)"):
        (fresh,) = run_jobs([Job(changed, run_dir)], workers=1)
    assert not fresh.skipped and fresh.summary["steps"] == first.train.steps + 2
    (kept,) = list(tmp_path.glob("run.stale-*"))
    assert json.loads((kept / runs.SUMMARY).read_text())["steps"] == first.train.steps


def test_an_unfinished_run_of_another_setting_is_kept_aside_not_refused(tmp_path):
    """A sweep cut short leaves a checkpoint; if the recipe then changes a field other than
    ``train.*`` the checkpoint cannot resume, so the run is renamed ``<run>.stale-<time>`` and
    trained afresh (not reported as a failed resume). A change of ``train.*`` alone resumes it."""
    run_dir = tmp_path / "run"
    first = sweep_jobs.tiny()
    run_jobs([Job(first, run_dir)], workers=1)
    (run_dir / runs.SUMMARY).unlink()  # as if cut short after its last checkpoint
    assert not runs.is_finished(run_dir)
    longer = first.replace(**{"train.steps": first.train.steps + 2})
    (resumed,) = run_jobs([Job(longer, run_dir)], workers=1)
    assert resumed.error is None and resumed.summary["resumed_from_step"] == first.train.steps
    assert not list(tmp_path.glob("run.stale-*"))
    (run_dir / runs.SUMMARY).unlink()
    wider = longer.replace(**{"model.hidden": [6]})
    with pytest.warns(UserWarning, match=r"trained with another setting \(model.hidden\)"):
        (fresh,) = run_jobs([Job(wider, run_dir)], workers=1)
    assert fresh.error is None and fresh.summary["resumed_from_step"] is None
    (kept,) = list(tmp_path.glob("run.stale-*"))
    assert (kept / runs.CHECKPOINT).exists()


def _raise_training_error(job):
    from unmix.errors import TrainingError

    raise TrainingError("'tiny' diverged at step 7: the loss became nan; set train.grad_clip.")


def _raise_key_error(job):
    raise KeyError("a bug")


def test_unmix_errors_are_reported_in_one_line_other_errors_with_their_traceback(tmp_path):
    jobs = [Job(sweep_jobs.tiny(), tmp_path / "a"), Job(sweep_jobs.tiny(), tmp_path / "b")]
    (own,) = run_jobs(jobs[:1], workers=1, run_fn=_raise_training_error)
    assert own.summary is None
    assert own.error == (
        "TrainingError: 'tiny' diverged at step 7: the loss became nan; set train.grad_clip."
    )
    (bug,) = run_jobs(jobs[1:], workers=1, run_fn=_raise_key_error)
    assert bug.error.startswith("KeyError: 'a bug'\n") and "Traceback" in bug.error
