"""One trainer for every model and objective: loop, schedule, evaluation cadence, checkpoints, resume.

``train(setting, out_dir)`` runs Adam for ``setting.train.steps`` steps, evaluating R²/MCC every
``eval_every`` steps on a fixed held-out set (drawn with the data seed), and writes the run directory
described in :mod:`unmix.runs`. With ``resume=True`` it continues from ``checkpoint.pt`` — model,
optimiser, schedule and the batch generator's state are all restored, so a resumed run ends with the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from unmix import plugins, runs, seeds
from unmix.devices import bf16_warning, resolve_device, set_heap_pad
from unmix.errors import CheckpointError, ConfigError, TrainingError
from unmix.experiment import Experiment
from unmix.models.linear import cpu_gemm, current_cpu_gemm
from unmix.objectives._compiled import current_choice, loss_kernels
from unmix.settings import Setting, TrainSpec, changed_fields, flat_fields
from unmix.tracking import Callback


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


def train(
    setting: Setting,
    out_dir: str | Path | None = None,
    *,
    device: str = "cpu",
    resume: bool = False,
    progress: bool = False,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
    provenance: dict[str, str] | None = None,
    callbacks: list[Callback] | None = None,
    tensorboard: bool = False,
) -> RunResult:
    """Train the setting's model with its objective; return the summary and history.

    ``out_dir`` = None keeps everything in memory (no files). ``progress`` shows a rich progress
    bar with the loss and the latest R²/MCC. Raises :class:`TrainingError` if the loss becomes
    non-finite (the metrics so far and the last checkpoint are kept on disk).

    ``provenance`` (from :func:`unmix.resolve.resolve`) maps each field that differs from its
    default to the layer that set it; it is written into ``manifest.json``. The run uses
    ``setting.train.threads`` torch threads (restored afterwards).

    ``callbacks`` (:class:`unmix.tracking.Callback`) see the run start, every step, every
    evaluation and the end; ``on_eval`` is a shorthand for one ``on_eval`` hook.
    ``tensorboard=True`` adds a :class:`unmix.tracking.TensorBoard` writer into
    ``out_dir/tensorboard``. ``train.keep_checkpoint`` says what stays on disk at the end.
    """
    device = resolve_device(device)
    hooks = list(callbacks or [])
    if on_eval is not None:
        hooks.append(_EvalHook(on_eval))
    threads_before = torch.get_num_threads()
    torch.set_num_threads(setting.train.threads)
    set_heap_pad(setting.train.heap_pad_mb)  # process-wide; unlike the threads, not restored
    try:
        with (
            cpu_gemm(setting.train.cpu_gemm),  # the encoder's CPU products (oneDNN / BLAS)
            loss_kernels(setting.train.loss_kernels, device.split(":")[0]),  # general-p losses
        ):
            if out_dir is None:
                if tensorboard:
                    raise ConfigError("--tensorboard writes into the run directory: give --out")
                return _train(setting, None, device, resume, progress, hooks, provenance)
            run_dir = _prepare_run_dir(Path(out_dir))
            with runs.run_lock(run_dir):  # a second process on this directory is refused
                runs.clean_temp_files(run_dir)  # left by a write that was killed
                if tensorboard:
                    from unmix.tracking import TensorBoard

                    hooks.append(TensorBoard(run_dir / "tensorboard"))
                return _train(setting, run_dir, device, resume, progress, hooks, provenance)
    finally:
        torch.set_num_threads(threads_before)


class _EvalHook(Callback):
    def __init__(self, fn: Callable[[dict[str, Any]], None]) -> None:
        self.fn = fn

    def on_eval(self, row: dict[str, Any]) -> None:
        self.fn(row)


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


def make_optimizer(params: list[torch.nn.Parameter], spec: TrainSpec) -> torch.optim.Optimizer:
    """Adam at ``spec.lr`` (the papers' optimiser), with decoupled weight decay (AdamW's: each
    step ``θ ← θ − lr·λ·θ`` beside Adam's update) when ``spec.weight_decay`` λ > 0; at λ = 0 the
    decay is skipped and the steps are plain Adam's."""
    return torch.optim.Adam(
        params, lr=spec.lr, weight_decay=spec.weight_decay, decoupled_weight_decay=True
    )


def _train(setting, out_dir, device, resume, progress, hooks, provenance) -> RunResult:
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    spec = setting.train
    run_dir = Path(out_dir) if out_dir is not None else None
    exp = Experiment.build(setting, device, progress=progress)  # (renders a data set first)
    trainable = [p for p in exp.encoder.parameters() if p.requires_grad]
    opt = make_optimizer(trainable, spec) if trainable else None
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(spec)) if opt else None
    gen = exp.stream_generator("train/batches")
    z_eval = exp.eval_data()
    history: list[dict[str, Any]] = []
    start_step, elapsed_before, cpu_before = 0, 0.0, 0.0
    manifest = runs.environment_info(device)
    manifest["cpu_gemm"] = current_cpu_gemm()  # the CPU linear layers' library ("auto" resolved)
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
            start_step, elapsed_before, cpu_before, history, changed = _restore(
                ckpt_path, setting, exp, opt, sched, gen
            )
            if changed:
                manifest["resumed_with_changes"] = {"step": start_step, "fields": changed}
                if "train.threads" in changed:
                    warnings.warn(
                        f"resuming {run_dir} with {setting.train.threads} threads (it ran with "
                        f"{changed['train.threads'][0]}): float rounding, and so the numbers, "
                        "may differ from an uninterrupted run",
                        stacklevel=3,
                    )
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
        if norms:  # the gradient norms (before clipping) of the steps since the last evaluation
            row["grad_norm_median"] = statistics.median(norms)
            row["grad_norm_max"] = max(norms)
            norms.clear()
        row["eval_s"] = time.perf_counter() - t0
        row["elapsed_s"] = elapsed_before + (time.perf_counter() - t_start)
        row["cpu_s"] = cpu_before + (time.process_time() - cpu_start)  # this process, all threads
        history.append(row)
        if spec.keep_checkpoint == "best":  # by the setting's first metric (higher is better)
            key = setting.metric_names[0]
            value = row.get(key, math.nan)
            if math.isfinite(value) and value > best.get("value", -math.inf):
                best.update(value=value, step=step, metric=key, state=_copy_state(exp.encoder))
        for hook in hooks:
            hook.on_eval(row)
        return row

    def checkpoint(step: int) -> None:
        nonlocal last_checkpoint
        last_checkpoint = time.perf_counter()
        if run_dir is None:
            return
        runs.save_checkpoint(
            run_dir / runs.CHECKPOINT,
            {
                "step": step,
                "setting": setting.to_dict(),
                "encoder": exp.encoder.state_dict(),
                "objective": exp.objective.state_dict(),  # its own state (a negatives queue)
                "optimizer": opt.state_dict() if opt else None,
                "scheduler": sched.state_dict() if sched else None,
                "generator": gen.get_state(),
                "history": history,
                "elapsed_s": elapsed_before + (time.perf_counter() - t_start),
                "cpu_s": cpu_before + (time.process_time() - cpu_start),
            },
        )
        runs.write_csv(run_dir / runs.METRICS, history)

    for hook in hooks:
        hook.on_start(
            {
                "setting": setting.name,
                "flat_setting": flat_fields(setting.to_dict()),
                "run_dir": run_dir,
                "start_step": start_step,
            }
        )
    best: dict[str, Any] = {}
    bf16_steps = spec.bf16_steps()  # bf16 autocast before, float32 from there (train.fp32_tail)

    def autocast(step: int):
        return torch.autocast(exp.device.type, dtype=torch.bfloat16, enabled=step < bf16_steps)

    if message := bf16_warning(spec.precision, exp.device):
        warnings.warn(message, stacklevel=2)
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    last_checkpoint = t_start
    train_time = 0.0
    bar = _progress_bar(progress, spec.steps, start_step, setting.name)
    set_progress = getattr(exp.objective, "set_progress", None)
    last_loss = float("nan")
    norms: list[float] = []
    exp.encoder.train()
    try:
        for step in range(start_step, spec.steps if opt else 0):
            t0 = time.perf_counter()
            if set_progress is not None:  # an objective's own schedule (alignment warm-up)
                set_progress(step, spec.steps)
            with autocast(step):
                loss = exp.loss(gen, spec.batch_size)
            bad = None if torch.isfinite(loss) else f"the loss became {loss.item()}"
            if bad is None:
                opt.zero_grad(set_to_none=True)
                loss.backward()
                # the gradient's norm (clipped to grad_clip if set): non-finite = diverged
                norm = float(_grad_norm(trainable, spec.grad_clip))  # one device sync a step
                if not math.isfinite(norm):
                    bad = f"the gradient became {norm}{_where_non_finite(exp.encoder)}"
                norms.append(norm)
            if bad is not None:  # stop before the step: weights and checkpoint stay finite
                _diverged(run_dir, setting, history, step, bad, manifest)
            opt.step()
            sched.step()  # the learning-rate schedule
            for advance in exp.schedules:  # the model's own schedules (a VAE's γ² warm-up)
                advance()
            train_time += time.perf_counter() - t0
            last_loss = loss.item()
            done = step + 1
            for hook in hooks:
                hook.on_step(done, last_loss, opt.param_groups[0]["lr"])
            if done % spec.eval_every == 0 or done == spec.steps:
                row = evaluate(done, last_loss)
                if bar:
                    bar.update(r2=row.get("r2", math.nan), mcc=row.get("mcc", math.nan))
            due = done % spec.checkpoint_every == 0
            due = due or time.perf_counter() - last_checkpoint >= spec.checkpoint_seconds
            if due and done != spec.steps:
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
        **{k: v for k, v in final.items() if k not in _DIAGNOSTICS},
        "metrics": list(setting.metric_names),
        "seeds": setting.seeds.model_dump(),
        "train_time_s": train_time,
        "wall_time_s": elapsed_before + time.perf_counter() - t_start,
        "cpu_time_s": cpu_before + time.process_time() - cpu_start,
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
        if spec.keep_checkpoint == "none":  # results stay; the run can no longer be resumed
            (run_dir / runs.CHECKPOINT).unlink(missing_ok=True)
        elif spec.keep_checkpoint == "best" and best:
            state = runs.load_checkpoint(run_dir / runs.CHECKPOINT)
            state.update(encoder=best["state"], best_step=best["step"])
            runs.save_checkpoint(run_dir / runs.CHECKPOINT, state)
            summary.update(best_step=best["step"], best_metric=best["metric"])
            summary["best_value"] = best["value"]
            runs.write_json(run_dir / runs.SUMMARY, summary)
        manifest["finished"] = summary["finished"]
        manifest["loss_kernels"] = _kernels_used(spec.loss_kernels)
        runs.write_json(run_dir / runs.MANIFEST, manifest)
    for hook in hooks:
        hook.on_end(summary)
    return RunResult(summary, history, exp, run_dir)


def _kernels_used(mode: str) -> dict[str, Any]:
    """``train.loss_kernels`` and the block kernels the general-p losses took in this run
    (``[]``: no general-p loss ran)."""
    choice = current_choice()
    return {"setting": mode, "used": sorted(choice.used) if choice is not None else []}


_DIAGNOSTICS = ("step", "lr", "eval_s", "elapsed_s", "cpu_s", "grad_norm_median", "grad_norm_max")
"""Columns of an evaluation row that describe the training, not its result: in ``metrics.csv``,
left out of ``summary.json``."""


def _copy_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _grad_norm(params: list[torch.nn.Parameter], clip: float | None) -> torch.Tensor:
    """The gradients' total 2-norm; with ``clip`` set, the gradients are then scaled down to a
    norm of at most ``clip``.

    Without ``clip`` the norm is summed in the gradients' dtype, so float32 entries above
    ≈ 1.8e19 overflow it: the step is refused as diverged, since Adam's squared moments would
    overflow the same way. With ``clip`` the norm is summed in float64, so huge but finite entries
    are scaled down rather than zeroed (``torch.nn.utils.clip_grad_norm_`` in float32 returns an
    infinite norm for them and multiplies every gradient by 0); only non-finite entries diverge.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not clip:
        return torch.nn.utils.get_total_norm(grads)
    if not grads:
        return torch.zeros((), dtype=torch.float64)
    norm = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g, dtype=torch.float64) for g in grads])
    )
    if torch.isfinite(norm):
        coef = clip / (float(norm) + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.mul_(coef)
    return norm


def _where_non_finite(model: torch.nn.Module) -> str:
    """Where a non-finite gradient norm comes from, for the divergence message: `` (first in
    NAME[, and k more])`` for the parameters whose gradient has a non-finite entry, in the model's
    order; if every entry is finite (their squares overflowed the norm), `` (finite entries, the
    largest |g| = V in NAME)``; empty for a model without gradients."""
    grads = [(n, p.grad) for n, p in model.named_parameters() if p.grad is not None]
    names = [n for n, g in grads if not bool(torch.isfinite(g).all())]
    if names:
        more = f", and {len(names) - 1} more" if len(names) > 1 else ""
        return f" (first in {names[0]}{more})"
    sizes = [(float(g.abs().max()), n) for n, g in grads if g.numel()]
    if not sizes:
        return ""
    value, name = max(sizes)
    return f" (finite entries, the largest |g| = {value:.3g} in {name})"


def _diverged(run_dir, setting, history, step, what, manifest) -> None:
    """Stop a run whose loss or gradient is not finite: the last checkpoint stays as it was (it
    holds finite weights), ``summary.json`` says ``status: diverged`` and the step; one line."""
    spec = setting.train
    if run_dir is not None:
        runs.write_csv(run_dir / runs.METRICS, history)
        runs.write_json(
            run_dir / runs.SUMMARY,
            {
                "setting": setting.name,
                "status": "diverged",
                "step": step,
                "reason": what,
                "last_metrics": history[-1] if history else None,
                "finished": runs.now(),
                "git_commit": manifest.get("git_commit"),
            },
        )
    where = f"; metrics so far and the last checkpoint are in {run_dir}" if run_dir else ""
    fix = (
        f"resume with a smaller learning rate, e.g. --resume train.lr={spec.lr / 3:.3g}, or set "
        f"train.grad_clip (now {spec.grad_clip})"
    )
    raise TrainingError(f"'{setting.name}' diverged at step {step}: {what}; {fix}{where}.")


def _as_setting(data: Any) -> Setting | None:
    """The checkpoint's setting, validated (so a checkpoint written before a defaulted field was
    added to the settings still matches); None if it is not a valid setting."""
    try:
        return Setting.from_dict(data)
    except (ConfigError, TypeError):
        return None


def _restore(path: Path, setting: Setting, exp: Experiment, opt, sched, gen):
    """Load a checkpoint into the built objects. ``train.*`` fields may differ from the
    checkpoint's (a smaller lr, more steps, a grad clip …): they are returned as
    ``{field: [old, new]}``; any other difference is refused, naming the field."""
    state = runs.load_checkpoint(path)
    old = _as_setting(state.get("setting"))
    if old is None:
        raise CheckpointError(f"{path} holds no valid setting: it was not written by this unmix.")
    changed = _resume_changes(old, setting, path)
    try:
        exp.encoder.load_state_dict(state["encoder"])
        if state.get("objective"):  # absent in checkpoints of objectives without state
            exp.objective.load_state_dict(state["objective"])
        if opt and state["optimizer"]:
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
        gen.set_state(state["generator"])
    except (KeyError, RuntimeError, TypeError, ValueError) as err:
        raise CheckpointError(f"Checkpoint {path} does not match this model ({err}).") from None
    step = int(state["step"])
    if opt and changed:  # the schedule continues from `step` with the new train.* fields
        sched.base_lrs = [setting.train.lr for _ in opt.param_groups]
        sched.lr_lambdas = [lr_factor(setting.train) for _ in opt.param_groups]
        for group in opt.param_groups:
            group["lr"] = setting.train.lr * lr_factor(setting.train)(step)
            # the loaded groups hold the checkpoint's decay (plain Adam's in checkpoints before
            # train.weight_decay): make_optimizer's, at the new value
            group["weight_decay"] = setting.train.weight_decay
            group["decoupled_weight_decay"] = True
    elapsed = float(state.get("elapsed_s", 0.0))
    cpu = float(state.get("cpu_s", elapsed))  # checkpoints before 0.2 kept wall time only
    return step, elapsed, cpu, list(state["history"]), changed


def blocks_resume(field: str) -> bool:
    """Whether a change of this dotted setting field stops a checkpoint from resuming: every
    field but ``name`` and ``train.*`` (the schedule continues with new ``train.*`` values)."""
    return field != "name" and not field.startswith("train.")


def _resume_changes(old: Setting, new: Setting, path: Path) -> dict[str, list[Any]]:
    a, b = old.to_dict(), new.to_dict()
    fields = [k for k in changed_fields(a, b) if k != "name"]
    others = [k for k in fields if blocks_resume(k)]
    if others:
        raise CheckpointError(
            f"{path} was written for a different setting ({', '.join(others)} changed); only "
            "train.* fields may change on --resume: resume with its config.yaml, or train into "
            "a new --out directory."
        )
    fa, fb = flat_fields(a), flat_fields(b)
    return {k: [fa.get(k), fb.get(k)] for k in fields}


class _Bar:
    def __init__(self, total: int, start: int, name: str) -> None:
        from rich.progress import TextColumn

        from unmix.progress import progress_bar

        self.progress = progress_bar(
            "[bold]{task.description}",
            TextColumn(
                "loss {task.fields[loss]:.4f}  R² {task.fields[r2]}  MCC {task.fields[mcc]}"
            ),
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
