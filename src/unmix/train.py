"""One trainer for every model and objective: loop, schedule, evaluation cadence, checkpoints, resume.

``train(setting, out_dir)`` runs Adam for ``setting.train.steps`` steps, evaluating R²/MCC every
``eval_every`` steps on a fixed held-out set (drawn with the data seed), and writes the run directory
described in :mod:`unmix.runs`. With ``resume=True`` it continues from ``checkpoint.pt`` — model,
optimiser, schedule and the batch generator's state are all restored, so a resumed run ends with the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from unmix import plugins, runs, seeds
from unmix.errors import CheckpointError, ConfigError, TrainingError
from unmix.experiment import Experiment
from unmix.settings import Setting, TrainSpec


@dataclass
class RunResult:
    """What a finished run returns; the same numbers are in ``summary.json``."""

    summary: dict[str, Any]
    history: list[dict[str, Any]]
    experiment: Experiment
    run_dir: Path | None


def lr_factor(spec: TrainSpec) -> Callable[[int], float]:
    """Multiplier of the base learning rate at step s: linear warm-up, then constant or cosine."""

    def factor(step: int) -> float:
        if spec.warmup_steps and step < spec.warmup_steps:
            return (step + 1) / spec.warmup_steps
        if spec.lr_schedule == "constant":
            return 1.0
        span = max(1, spec.steps - spec.warmup_steps)
        t = min(1.0, (step - spec.warmup_steps) / span)
        return spec.final_lr_factor + (1 - spec.final_lr_factor) * 0.5 * (1 + math.cos(math.pi * t))

    return factor


def _resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"device '{device}' requested but CUDA is not available: use --device cpu."
        )
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise ConfigError(f"device must be cpu, cuda, cuda:N or auto; got '{device}'.")
    return device


def train(
    setting: Setting,
    out_dir: str | Path | None = None,
    *,
    device: str = "cpu",
    resume: bool = False,
    progress: bool = False,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
    provenance: dict[str, str] | None = None,
) -> RunResult:
    """Train the setting's model with its objective; return the summary and history.

    ``out_dir`` = None keeps everything in memory (no files). ``progress`` shows a rich progress
    bar with the loss and the latest R²/MCC. Raises :class:`TrainingError` if the loss becomes
    non-finite (the metrics so far and the last checkpoint are kept on disk).

    ``provenance`` (from :func:`unmix.resolve.resolve`) maps each field that differs from its
    default to the layer that set it; it is written into ``manifest.json``. The run uses
    ``setting.train.threads`` torch threads (restored afterwards).
    """
    device = _resolve_device(device)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(setting.train.threads)
    try:
        if out_dir is None:
            return _train(setting, None, device, resume, progress, on_eval, provenance)
        run_dir = _prepare_run_dir(Path(out_dir))
        with runs.run_lock(run_dir):  # a second process on this directory is refused
            runs.clean_temp_files(run_dir)  # left by a write that was killed
            return _train(setting, run_dir, device, resume, progress, on_eval, provenance)
    finally:
        torch.set_num_threads(threads_before)


def _prepare_run_dir(path: Path) -> Path:
    """``path`` created as a directory, or one readable ConfigError naming it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.touch()
        probe.unlink()
    except FileExistsError:
        raise ConfigError(f"--out {path} is a file (or under one): give a directory.") from None
    except NotADirectoryError:
        raise ConfigError(f"--out {path} is under a file: give a directory.") from None
    except OSError as err:
        raise ConfigError(
            f"--out {path} cannot be written ({err.strerror}): choose another directory."
        ) from None
    return path


def _train(setting, out_dir, device, resume, progress, on_eval, provenance) -> RunResult:
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    spec = setting.train
    run_dir = Path(out_dir) if out_dir is not None else None
    exp = Experiment.build(setting, device, progress=progress)  # (renders a data set first)
    trainable = [p for p in exp.encoder.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable, lr=spec.lr) if trainable else None
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(spec)) if opt else None
    gen = exp.stream_generator("train/batches")
    z_eval = exp.eval_data()
    history: list[dict[str, Any]] = []
    start_step, elapsed_before = 0, 0.0
    manifest = runs.environment_info(device)
    manifest.update(
        setting=setting.name,
        seeds=setting.seeds.model_dump(),
        streams=seeds.manifest_streams(setting.seeds),
        metrics=list(setting.metric_names),
        provenance=dict(provenance) if provenance is not None else {},
        plugins=list(plugins.LOADED),
        started=runs.now(),
    )

    if run_dir is not None:
        ckpt_path = run_dir / runs.CHECKPOINT
        if resume:
            start_step, elapsed_before, history = _restore(ckpt_path, setting, exp, opt, sched, gen)
        elif ckpt_path.exists() or (run_dir / runs.SUMMARY).exists():
            raise CheckpointError(
                f"{run_dir} already holds a run: pass --resume to continue it, "
                "or choose another --out directory."
            )
        run_dir.mkdir(parents=True, exist_ok=True)
        runs.atomic_write_text(run_dir / runs.CONFIG, setting.to_yaml())
        runs.write_json(run_dir / runs.MANIFEST, manifest)

    def evaluate(step: int, loss: float) -> dict[str, Any]:
        t0 = time.perf_counter()
        row = {
            "step": step,
            "loss": loss,
            "lr": opt.param_groups[0]["lr"] if opt else 0.0,
            **exp.evaluate(z_eval),  # every metric the setting names
        }
        row["eval_s"] = time.perf_counter() - t0
        row["elapsed_s"] = elapsed_before + (time.perf_counter() - t_start)
        history.append(row)
        if on_eval:
            on_eval(row)
        return row

    def checkpoint(step: int) -> None:
        if run_dir is None:
            return
        runs.save_checkpoint(
            run_dir / runs.CHECKPOINT,
            {
                "step": step,
                "setting": setting.to_dict(),
                "encoder": exp.encoder.state_dict(),
                "optimizer": opt.state_dict() if opt else None,
                "scheduler": sched.state_dict() if sched else None,
                "generator": gen.get_state(),
                "history": history,
                "elapsed_s": elapsed_before + (time.perf_counter() - t_start),
            },
        )
        runs.write_csv(run_dir / runs.METRICS, history)

    t_start = time.perf_counter()
    train_time = 0.0
    bar = _progress_bar(progress, spec.steps, start_step, setting.name)
    last_loss = float("nan")
    exp.encoder.train()
    try:
        for step in range(start_step, spec.steps if opt else 0):
            t0 = time.perf_counter()
            loss = exp.loss(gen, spec.batch_size)
            if not torch.isfinite(loss):
                checkpoint(step)
                raise TrainingError(
                    f"Loss became {loss.item()} at step {step} of '{setting.name}'. Try a smaller "
                    f"train.lr (now {spec.lr:g}), set train.grad_clip, or check the objective's "
                    f"tau. Metrics so far are in {run_dir or 'memory'}."
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if spec.grad_clip:
                torch.nn.utils.clip_grad_norm_(trainable, spec.grad_clip)
            opt.step()
            sched.step()  # the learning-rate schedule
            for advance in exp.schedules:  # the model's own schedules (a VAE's γ² warm-up)
                advance()
            train_time += time.perf_counter() - t0
            last_loss = loss.item()
            done = step + 1
            if done % spec.eval_every == 0 or done == spec.steps:
                row = evaluate(done, last_loss)
                if bar:
                    bar.update(r2=row["r2"], mcc=row["mcc"])
            if done % spec.checkpoint_every == 0 and done != spec.steps:
                checkpoint(done)
            if bar:
                bar.advance(loss=last_loss)
    finally:
        if bar:
            bar.close()

    if not history or history[-1]["step"] != spec.steps or not opt:
        evaluate(spec.steps if opt else 0, last_loss)
    final = history[-1]
    summary = {
        "setting": setting.name,
        "status": "finished",
        "steps": spec.steps,
        **{k: v for k, v in final.items() if k not in ("step", "lr", "eval_s", "elapsed_s")},
        "metrics": list(setting.metric_names),
        "seeds": setting.seeds.model_dump(),
        "train_time_s": train_time,
        "wall_time_s": elapsed_before + time.perf_counter() - t_start,
        "steps_per_s": (spec.steps - start_step) / train_time if train_time > 0 else None,
        "resumed_from_step": start_step or None,
        "device": device,
        "git_commit": manifest["git_commit"],
        "packages": manifest["packages"],
        "threads": torch.get_num_threads(),
        "finished": runs.now(),
    }
    if run_dir is not None:
        checkpoint(spec.steps)
        runs.write_json(run_dir / runs.SUMMARY, summary)
        manifest["finished"] = summary["finished"]
        runs.write_json(run_dir / runs.MANIFEST, manifest)
    return RunResult(summary, history, exp, run_dir)


def _as_setting(data: Any) -> Setting | None:
    """The checkpoint's setting, validated (so a checkpoint written before a defaulted field was
    added to the settings still matches); None if it is not a valid setting."""
    try:
        return Setting.from_dict(data)
    except (ConfigError, TypeError):
        return None


def _restore(path: Path, setting: Setting, exp: Experiment, opt, sched, gen):
    state = runs.load_checkpoint(path)
    if _as_setting(state.get("setting")) != setting:
        raise CheckpointError(
            f"{path} was written for a different setting; resume with the same "
            "setting (its config.yaml) or use a new --out directory."
        )
    try:
        exp.encoder.load_state_dict(state["encoder"])
        if opt and state["optimizer"]:
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
        gen.set_state(state["generator"])
    except (KeyError, RuntimeError) as err:
        raise CheckpointError(f"Checkpoint {path} does not match this model ({err}).") from None
    return int(state["step"]), float(state.get("elapsed_s", 0.0)), list(state["history"])


class _Bar:
    def __init__(self, total: int, start: int, name: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn(
                "loss {task.fields[loss]:.4f}  R² {task.fields[r2]}  MCC {task.fields[mcc]}"
            ),
            transient=False,
        )
        self.task = self.progress.add_task(
            name, total=total, completed=start, loss=float("nan"), r2="–", mcc="–"
        )
        self.progress.start()

    def update(self, r2: float, mcc: float) -> None:
        self.progress.update(self.task, r2=f"{r2:.4f}", mcc=f"{mcc:.4f}")

    def advance(self, loss: float) -> None:
        self.progress.update(self.task, advance=1, loss=loss)

    def close(self) -> None:
        self.progress.stop()


def _progress_bar(enabled: bool, total: int, start: int, name: str) -> _Bar | None:
    return _Bar(total, start, name) if enabled and total > 0 else None
