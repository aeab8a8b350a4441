"""Run directories: every result is a file a user can load with pandas, written atomically.

A run directory holds::

    config.yaml     the full validated setting (seeds included) — rerun with `unmix train config.yaml`
    manifest.json   package versions, git commit, platform, device, seeds, start/end times
    metrics.csv     one row per evaluation: step, loss, lr, r2, r2_in_sample, mcc, elapsed_s …
    summary.json    final numbers (r2, r2_in_sample, mcc, …), timings, seeds, status
    checkpoint.pt   model/optimizer/scheduler/RNG state for --resume

Files are written to a temporary name and renamed into place, so an interrupted run never leaves a
half-written result behind.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from unmix.errors import CheckpointError

CONFIG, MANIFEST, METRICS, SUMMARY, CHECKPOINT = (
    "config.yaml",
    "manifest.json",
    "metrics.csv",
    "summary.json",
    "checkpoint.pt",
)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(
        path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n"
    )


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist.") from None
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{path} is not valid JSON ({err}); the file is corrupt.") from None


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


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())


def load_checkpoint(path: Path) -> dict[str, Any]:
    if not Path(path).exists():
        raise CheckpointError(
            f"No checkpoint at {path}: start without --resume, or point --out at "
            "the run directory that holds checkpoint.pt."
        )
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # torch raises many types for a damaged file
        raise CheckpointError(
            f"Checkpoint {path} is corrupt or unreadable ({type(err).__name__}: {err}). Nothing was "
            "changed: to start afresh, train into a new --out directory (the old metrics.csv and "
            "summary.json stay where they are)."
        ) from None


def git_commit() -> str | None:
    """The commit of the unmix source tree, with '+dirty' if it has uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return sha.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
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
    """True if ``run_dir`` holds a summary of a completed run."""
    path = Path(run_dir) / SUMMARY
    if not path.exists():
        return False
    try:
        return json.loads(path.read_text()).get("status") == "finished"
    except (json.JSONDecodeError, OSError):
        return False


def load_summary(run_dir: Path) -> dict[str, Any]:
    return read_json(Path(run_dir) / SUMMARY)
