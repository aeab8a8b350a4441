"""Experiment tracking: training callbacks, and a TensorBoard writer built on them.

:func:`unmix.train.train` calls each callback's hooks — ``on_start(info)``, ``on_step(step, loss,
lr)``, ``on_eval(row)`` (every evaluation: step, loss, lr and every metric of the setting),
``on_end(summary)``. :class:`TensorBoard` is one such callback; an adapter for another tracker is
the same few lines. For example, MLflow::

    import mlflow
    from unmix.tracking import Callback

    class MLflow(Callback):
        def on_start(self, info):
            mlflow.start_run(run_name=info["setting"])
            mlflow.log_params(info["flat_setting"])

        def on_eval(self, row):
            step = row["step"]
            mlflow.log_metrics({k: v for k, v in row.items() if k != "step"}, step=step)

        def on_end(self, summary):
            mlflow.end_run()

    train(setting, "runs/x", callbacks=[MLflow()])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from unmix.errors import ConfigError


class Callback:
    """Base class: every hook does nothing; override the ones you need."""

    def on_start(self, info: dict[str, Any]) -> None:
        """``info``: ``setting`` (name), ``flat_setting`` (dotted field → value), ``run_dir``,
        ``start_step`` (> 0 on resume)."""

    def on_step(self, step: int, loss: float, lr: float) -> None:
        """After each optimiser step (``step`` counts from 1)."""

    def on_eval(self, row: dict[str, Any]) -> None:
        """After each evaluation; ``row`` is the metrics.csv row."""

    def on_end(self, summary: dict[str, Any]) -> None:
        """After the run, with its summary."""


class TensorBoard(Callback):
    """Writes loss and learning rate (every ``every`` steps), every metric of every evaluation,
    and the setting (as text) to TensorBoard event files in ``log_dir``; :meth:`add_figure` adds a
    report's PNG. Needs ``pip install 'unmix[tensorboard]'``."""

    def __init__(self, log_dir: str | Path, every: int = 10) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except (ImportError, ModuleNotFoundError):
            raise ConfigError(
                "--tensorboard needs the tensorboard package: pip install 'unmix[tensorboard]'"
            ) from None
        self.log_dir = Path(log_dir)
        self.every = max(1, int(every))
        self.writer = SummaryWriter(log_dir=str(self.log_dir))

    def on_start(self, info: dict[str, Any]) -> None:
        text = "\n".join(f"    {k}: {v}" for k, v in info.get("flat_setting", {}).items())
        self.writer.add_text("setting", text, global_step=info.get("start_step", 0))

    def on_step(self, step: int, loss: float, lr: float) -> None:
        if step % self.every == 0:
            self.writer.add_scalar("train/loss", loss, step)
            self.writer.add_scalar("train/lr", lr, step)

    def on_eval(self, row: dict[str, Any]) -> None:
        step = int(row["step"])
        for key, value in row.items():
            if key != "step" and isinstance(value, int | float) and not isinstance(value, bool):
                self.writer.add_scalar(f"eval/{key}", value, step)
        self.writer.flush()

    def on_end(self, summary: dict[str, Any]) -> None:
        self.writer.flush()
        self.writer.close()

    def add_figure(self, tag: str, png: str | Path, step: int = 0) -> None:
        """Add an image file (a report's figure) under ``tag``."""
        import matplotlib.image as mpimg
        import numpy as np

        img = np.asarray(mpimg.imread(str(png)))
        if img.ndim == 2:
            img = img[..., None]
        self.writer.add_image(tag, img[..., :3], step, dataformats="HWC")
        self.writer.flush()


def write_report_figures(folder: str | Path, figures: list[Path]) -> Path:
    """The report's figures as images in ``folder/tensorboard`` (one tag per file)."""
    tb = TensorBoard(Path(folder) / "tensorboard")
    for fig in figures:
        tb.add_figure(f"report/{Path(fig).stem}", fig)
    tb.writer.close()
    return tb.log_dir
