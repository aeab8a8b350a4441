"""Runs as objects: load a run directory, gather many into one table.

:func:`load_run` reads a run directory (:mod:`unmix.runs`) into a :class:`Run`: its validated
:class:`~unmix.settings.Setting` (``config.yaml``), ``manifest.json``, ``summary.json`` and
``metrics.csv`` (a pandas DataFrame). ``run.model()`` rebuilds the trained
:class:`~unmix.experiment.Experiment` from its checkpoint (``Experiment.from_run``: loaded with
``weights_only=True``) and ``run.encode(x)`` runs the trained encoder on observations — the
posterior mean for a VAE — and returns NumPy features::

    from unmix.results import gather, load_run

    run = load_run("runs/row1")
    run.summary["mcc"], run.metrics.tail(1)
    z_hat = run.encode(x)                 # x: (n, dim) observations, NumPy or torch
    table = gather(["runs/"])             # one row per run directory found below runs/

A missing or damaged directory is one readable line: :class:`~unmix.errors.ConfigError` for a path
that is not a run directory, :class:`~unmix.errors.CheckpointError` for a damaged file in one.
``unmix results DIR...`` prints :func:`gather`'s table as Markdown (``--csv``, ``--json``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from unmix import runs
from unmix.errors import CheckpointError, ConfigError
from unmix.settings import Setting

if TYPE_CHECKING:
    from unmix.experiment import Experiment

__all__ = ["Run", "load_run", "find_runs", "gather", "to_markdown"]

_CHUNK = 8192


@dataclass
class Run:
    """One run directory, loaded: ``setting``, ``manifest``, ``summary``, ``metrics`` (the rows
    of ``metrics.csv``) and ``path``."""

    setting: Setting
    manifest: dict[str, Any]
    summary: dict[str, Any]
    metrics: pd.DataFrame
    path: Path
    _experiment: Experiment | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.setting.name

    def model(self, device: str = "cpu") -> Experiment:
        """The trained :class:`~unmix.experiment.Experiment` (weights from ``checkpoint.pt``, eval
        mode); built once and kept."""
        from unmix.experiment import Experiment

        if self._experiment is None or str(self._experiment.device) != str(device):
            self._experiment = Experiment.from_run(self.path, device)
        return self._experiment

    def encode(self, x: Any, chunk: int = _CHUNK) -> np.ndarray:
        """Features of observations ``x`` (``(n, dim)`` or images ``(n, C, H, W)``; NumPy or
        torch) from the trained encoder — for a VAE the posterior mean E_q[z | x] — as a float64
        NumPy array ``(n, dim)``."""
        import torch

        exp = self.model()
        model = exp.encoder
        param = next(iter(model.parameters()), None)
        dtype = param.dtype if param is not None else torch.get_default_dtype()
        xt = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
        xt = xt.to(device=exp.device, dtype=dtype)
        is_vae = self.setting.model.kind == "vae"
        out = []
        with torch.no_grad():
            for c in xt.split(chunk):
                if is_vae:
                    mu, logvar = model.encode(c.flatten(1) if c.ndim > 2 else c)
                    out.append(model.prior.posterior_mean(mu, logvar))
                else:
                    out.append(model(c))
        if not out:
            return np.zeros((0, self.setting.latent.dim))
        return torch.cat(out).double().cpu().numpy()


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())


def load_run(path: str | Path) -> Run:
    """The run in directory ``path`` (see the module docstring). Raises a one-line
    :class:`ConfigError` if ``path`` is not a run directory and :class:`CheckpointError` if one of
    its files is damaged."""
    path = Path(path)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise ConfigError(f"{path} {what}: give a run directory (one that holds summary.json)")
    if not (path / runs.SUMMARY).is_file() or not (path / runs.CONFIG).is_file():
        missing = [n for n in (runs.SUMMARY, runs.CONFIG) if not (path / n).is_file()]
        raise ConfigError(
            f"{path} is not a finished run directory (it has no {' or '.join(missing)}): "
            "train into it with `unmix train ... --out` first"
        )
    try:
        setting = Setting.from_yaml(path / runs.CONFIG)
    except ConfigError as err:
        raise CheckpointError(f"{path / runs.CONFIG}: {_one_line(err)}") from None
    summary = runs.load_summary(path)
    manifest = runs.read_json(path / runs.MANIFEST) if (path / runs.MANIFEST).exists() else {}
    metrics = _read_metrics(path / runs.METRICS)
    return Run(setting, manifest, summary, metrics, path)


def _read_metrics(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path} is not a readable CSV ({_one_line(err)})") from None


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Every run directory (a directory holding ``summary.json``) at or below ``paths``, sorted,
    each once. A path that does not exist is a :class:`ConfigError`."""
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ConfigError(f"{p} does not exist: give run directories or folders that hold them")
        if p.is_file():
            if p.name != runs.SUMMARY:
                raise ConfigError(f"{p} is a file: give a run directory or a folder of runs")
            found.add(p.parent)
            continue
        found.update(s.parent for s in p.rglob(runs.SUMMARY) if s.is_file())
    return sorted(found)


_TIMINGS = ("train_time_s", "wall_time_s", "steps_per_s")


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def gather(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run directory at or below ``paths``: ``name``, ``seed_data``, ``seed_train``,
    ``status``, every scalar number of the summary (the metrics, ``loss``, ``steps``), the timings
    and ``path``. Only ``summary.json`` is read (a damaged one is a one-line
    :class:`CheckpointError` naming it)."""
    rows = []
    for run_dir in find_runs(paths):
        sm = runs.load_summary(run_dir)
        seeds = sm.get("seeds") or {}
        row: dict[str, Any] = {
            "name": sm.get("setting"),
            "seed_data": seeds.get("data"),
            "seed_train": seeds.get("train"),
            "status": sm.get("status"),
        }
        metrics = [k for k in sm if _scalar(sm[k]) and k not in _TIMINGS and k != "threads"]
        for k in metrics:
            row[k] = sm[k]
        for k in _TIMINGS:
            row[k] = sm.get(k)
        row["path"] = str(run_dir)
        rows.append(row)
    columns = ["name", "seed_data", "seed_train", "status"]
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=[*columns, *_TIMINGS, "path"])
    rest = [c for c in df.columns if c not in (*columns, *_TIMINGS, "path")]
    return df[[*columns, *rest, *_TIMINGS, "path"]]


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def to_markdown(df: pd.DataFrame) -> str:
    """``df`` as a Markdown table (no truncation; floats to 4 significant digits)."""
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])
