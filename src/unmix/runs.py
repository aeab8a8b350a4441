"""Run directories: every result is a file a user can load with pandas, written atomically.

A run directory holds::

    config.yaml     the full validated setting (seeds included) — rerun with `unmix train config.yaml`
    manifest.json   package versions, git commit, platform, device, seeds, start/end times
    metrics.csv     one row per evaluation: step, loss, lr, r2, r2_in_sample, mcc, grad_norm_median,
                    grad_norm_max, elapsed_s, cpu_s …
    summary.json    final numbers (r2, r2_in_sample, mcc, …), timings, seeds, status
    checkpoint.pt   model/optimizer/scheduler/RNG state for --resume

Files are written to a temporary name, flushed to disk (``fsync``) and renamed into place, so an
interrupted run never leaves a half-written result behind; :func:`clean_temp_files` removes the
temporary files a killed writer leaves. Files get the permissions the umask allows (like ``open``),
JSON is strict (NaN and ±inf are written as ``null``), and checkpoints are loaded with
``torch.load(weights_only=True)``: nothing in a run directory is executed. ``.lock`` (see
:func:`run_lock`) marks the directory as in use by one process. docs/reliability.md lists the
guarantees and the tests that check them.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import pickle
import platform
import re
import subprocess
import sys
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from unmix.errors import CheckpointError
from unmix.safeio import first_refused_global

CONFIG, MANIFEST, METRICS, SUMMARY, CHECKPOINT = (
    "config.yaml",
    "manifest.json",
    "metrics.csv",
    "summary.json",
    "checkpoint.pt",
)


LOCK = ".lock"
#: the keys every checkpoint written by :func:`unmix.train.train` holds
CHECKPOINT_KEYS = ("step", "setting", "encoder", "optimizer", "scheduler", "generator", "history")
#: the keys :func:`load_summary` requires of a ``summary.json``
SUMMARY_KEYS = ("setting", "status", "r2", "mcc")


def _umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore (briefly process-wide)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every platform can)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a mix.

    The bytes go to a temporary ``.<name>.*.tmp`` beside ``path``, are fsynced, and the file is
    renamed into place; the directory is then fsynced (best effort) so the rename survives a power
    cut. The file gets ``0o666 & ~umask`` permissions, as ``open(path, "w")`` would give it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


_TEMP_NAME = re.compile(r"^\..+\.tmp$")


def clean_temp_files(run_dir: Path) -> list[Path]:
    """Remove the temporary ``.<name>.*.tmp`` files that a killed write left in ``run_dir``.

    Call it when a run starts, while holding :func:`run_lock` (a concurrent writer's temporary
    file would be removed too). Returns the removed paths; a missing ``run_dir`` is no error.
    """
    removed = []
    try:
        entries = list(Path(run_dir).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        if _TEMP_NAME.match(entry.name) and entry.is_file() and not entry.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed.append(entry)
    return removed


class RunLocked(CheckpointError):
    """Another process holds the run directory's lock (``.lock``)."""


_LOCKS: dict[str, Any] = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir/.lock`` for the duration; raise :class:`RunLocked` at once if another
    process (or another thread) holds it.

    Re-entrant within one thread, so a caller that holds it may call code that takes it again
    (e.g. a sweep worker calling ``train``). The lock is an OS file lock: it is released when its
    holder exits, however it exits (``kill -9`` included), and the ``.lock`` file itself stays.
    """
    from filelock import FileLock, Timeout

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    key = str((run_dir / LOCK).resolve())
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, FileLock(key, timeout=0))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunLocked(
            f"{run_dir} is locked by another process (it holds {run_dir / LOCK}): wait for that "
            "run to end, or train into another directory."
        ) from None
    try:
        yield
    finally:
        lock.release()


def _jsonable(obj: Any, where: str = "") -> Any:
    """``obj`` as strict JSON data: NaN/±inf → None, numpy/torch scalars → numbers, Path → str."""
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and getattr(obj, "ndim", 0) == 0:
        return _jsonable(obj.item(), where)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__} at {where or 'top level'}")


def strict_json(obj: Any) -> Any:
    """``obj`` with NaN/±inf as None and numpy/torch scalars as numbers (RFC 8259 JSON)."""
    return _jsonable(obj)


def write_json(path: Path, obj: Any) -> None:
    """Strict JSON (RFC 8259): non-finite floats are written as ``null``, atomically."""
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


def read_json(path: Path, required: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON object from ``path``; :class:`CheckpointError` (one line) if the file is missing,
    not JSON, not an object, or lacks one of the ``required`` keys."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist.") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path} is a directory, not a JSON file.") from None
    except OSError as err:
        raise CheckpointError(f"{path} cannot be read ({err.strerror or err}).") from None
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not UTF-8 text; the file is corrupt.") from None
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"{path} is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); "
            "the file is corrupt."
        ) from None
    if not isinstance(data, dict):
        raise CheckpointError(
            f"{path} holds a JSON {_json_kind(data)}, not an object; the file is corrupt or was "
            "not written by unmix."
        )
    missing = [k for k in required if k not in data]
    if missing:
        raise CheckpointError(
            f"{path} lacks the key{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(k) for k in missing)}; the file is incomplete or was not written "
            "by unmix."
        )
    return data


def _json_kind(data: Any) -> str:
    if isinstance(data, list):
        return "array"
    if isinstance(data, str):
        return "string"
    if isinstance(data, bool):
        return "boolean"
    if data is None:
        return "null"
    return "number"


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows as CSV; the header is the union of keys in first-seen order."""
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def _plain(obj: Any) -> Any:
    """numpy scalars inside containers → Python numbers, so ``weights_only`` loading needs no
    allow-list; tensors and everything else are kept as they are."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_plain(v) for v in obj)
    if type(obj).__module__ == "numpy" and hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return obj.item()
    return obj


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(_plain(state), buf)
    atomic_write_bytes(path, buf.getvalue())


_GLOBAL_IN_ERROR = re.compile(r"GLOBAL ([\w.]+)")


def _refuse(path: Path, names: list[str]) -> CheckpointError:
    return CheckpointError(
        f"Checkpoint {path}: unmix refuses to load objects of type {', '.join(names)} (a checkpoint "
        "holds only tensors, numbers, strings, lists and dicts, and nothing in it was run); it was "
        "not written by unmix: train into a new --out directory."
    )


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The state dict :func:`save_checkpoint` wrote, loaded with ``torch.load(weights_only=True)``:
    tensors, numbers, strings, lists and dicts only, nothing executed. Raises a one-line
    :class:`CheckpointError` if the file is missing, damaged, refers to any other type, is not a
    dict or lacks one of :data:`CHECKPOINT_KEYS`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(
            f"No checkpoint at {path}: start without --resume, or point --out at "
            "the run directory that holds checkpoint.pt."
        )
    try:
        scan = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)  # ≥ 2.5
        if scan is not None and zipfile.is_zipfile(path):  # torch.save's format: scan first
            unsafe = scan(path)
            if unsafe:
                raise _refuse(path, unsafe)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except CheckpointError:
        raise
    except Exception as err:  # torch raises many types for a damaged file
        names = (
            _GLOBAL_IN_ERROR.findall(str(err)) if isinstance(err, pickle.UnpicklingError) else []
        )
        names = list(dict.fromkeys(names)) or [n for n in [first_refused_global(path)] if n]
        if names:
            raise _refuse(path, names) from None
        raise CheckpointError(
            f"Checkpoint {path} is corrupt or unreadable (not a complete torch.save archive of "
            "tensors, numbers and strings). Nothing was changed: to start afresh, train into a new "
            "--out directory (the old metrics.csv and summary.json stay where they are)."
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(
            f"Checkpoint {path} holds a {type(state).__name__}, not the dict unmix writes; it was "
            "not written by unmix: train into a new --out directory."
        )
    missing = [k for k in CHECKPOINT_KEYS if k not in state]
    if missing:
        raise CheckpointError(
            f"Checkpoint {path} lacks the key{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(k) for k in missing)} that every unmix checkpoint holds; it is "
            "incomplete or was not written by unmix: train into a new --out directory."
        )
    return state


def git_commit() -> str | None:
    """The commit of the unmix source: of the tree this module runs from (an editable install
    or a checkout, with '+dirty' for uncommitted changes), else of the install's origin as pip
    recorded it (``direct_url.json``: a VCS install's commit, or the commit of the local
    directory a wheel was built from). None when none is known."""
    here = Path(__file__).resolve().parent
    return _commit_of(here) or _installed_commit()


_COMMIT_CACHE: dict[Path, str | None] = {}


def _commit_of(directory: Path) -> str | None:
    if directory in _COMMIT_CACHE:
        return _COMMIT_CACHE[directory]
    out = None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=5
        )
        if sha.returncode == 0:
            dirty = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=directory,
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            out = sha.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        out = None
    _COMMIT_CACHE[directory] = out
    return out


def _installed_commit() -> str | None:
    from urllib.parse import unquote, urlparse

    try:
        text = metadata.distribution("unmix").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        return None
    commit = (info.get("vcs_info") or {}).get("commit_id")
    if commit:
        return str(commit)
    url = urlparse(str(info.get("url", "")))
    if url.scheme == "file" and Path(unquote(url.path)).is_dir():
        return _commit_of(Path(unquote(url.path)))
    return None


def environment_info(device: str = "cpu") -> dict[str, Any]:
    versions = {}
    for pkg in ("unmix", "torch", "numpy", "scipy", "scikit-learn", "pydantic"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "git_commit": git_commit(),
        "device": device,
        "torch_threads": torch.get_num_threads(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name()
    return info


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def is_finished(run_dir: Path) -> bool:
    """True if ``run_dir`` holds a readable summary (see :func:`load_summary`) of a completed run;
    a missing, damaged or incomplete summary means not finished."""
    try:
        return load_summary(run_dir).get("status") == "finished"
    except CheckpointError:
        return False


def load_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json``; one-line :class:`CheckpointError` if it is missing, not a JSON
    object or lacks one of :data:`SUMMARY_KEYS`."""
    return read_json(Path(run_dir) / SUMMARY, required=SUMMARY_KEYS)
