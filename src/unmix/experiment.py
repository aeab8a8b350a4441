"""An experiment's objects, built from a setting: latent process, mixing, model, objective.

Every stage is built through its registry (:mod:`unmix.registry`), so a user's registered kinds
run exactly like the built-ins. Random streams are named (:mod:`unmix.seeds`): the **data seed**
fixes the mixing g (stream ``data/mixing``), the evaluation data (``data/eval``) and the other
data streams; the **training seed** fixes the model's initialisation (``train/init``) and the
training batches (``train/batches``). Building never touches the global RNG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from unmix import seeds as sd
from unmix.errors import ConfigError
from unmix.generative import latent_process_of, mixing_of
from unmix.latents import LatentProcess
from unmix.models.builders import build_model
from unmix.objectives.base import Batch, Objective
from unmix.registry import METRICS, OBJECTIVES
from unmix.settings import Setting

if TYPE_CHECKING:
    from unmix.datasets import FiniteData

__all__ = [
    "Experiment",
    "factor_scores",
    "FACTOR_PREFIXES",
]

INPUT_STANDARDIZATION_SAMPLES = 4096


@dataclass
class Experiment:
    """The built objects of a setting. ``encoder`` is the trained model: the encoder f, or for
    ``model.kind: vae`` the whole :class:`~unmix.models.vae.GaussianVAE` (encoder, decoder and,
    if learned, γ²), so that one trainer optimises and checkpoints either. ``schedules`` are the
    model's own per-step schedules (the VAE's γ² warm-up), advanced by the trainer after each
    optimiser step next to the learning-rate schedule."""

    setting: Setting
    process: LatentProcess
    mixing: nn.Module
    encoder: nn.Module
    objective: Objective
    device: torch.device
    data: FiniteData | None = None
    schedules: list[Any] = field(default_factory=list)
    _eval: torch.Tensor | None = None

    @classmethod
    def build(
        cls, setting: Setting, device: str | torch.device = "cpu", progress: bool = False
    ) -> Experiment:
        """Build every object of ``setting``. With ``data.kind: rendered`` the data set is rendered
        first if it is not on disk yet (``progress`` shows a bar)."""
        from unmix.resources import check_memory

        check_memory(setting)  # refuse before allocating, naming the field
        device = torch.device(device)
        lat, s = setting.latent, setting.seeds
        process = latent_process_of(setting, device)
        mixing = mixing_of(setting, device)
        data = None
        if setting.data is not None:
            from unmix.datasets import FiniteData, ensure_rendered

            if setting.data.kind == "rendered":
                ensure_rendered(setting, process, mixing, progress=progress)
            data = FiniteData.open(setting, process)
        if setting.model.kind == "vae" and setting.is_renderer:
            mixing.flatten = True  # the VAE's Gaussian likelihood is over flattened pixels
        shape = data.image_shape if data is not None else getattr(mixing, "image_shape", None)
        model = build_model(
            setting.model,
            sd.train_stream(s, "init"),
            in_dim=lat.dim,
            out_dim=setting.out_dim,
            image_shape=shape,
            mixing=mixing,
            latent=lat,
        ).to(device)
        if getattr(setting.model, "standardize_input", False):
            g = sd.torch_generator(setting.seeds.data, "data/input_standardization", device)
            with torch.no_grad():
                model.fit_input_standardization(
                    mixing(process.sample(INPUT_STANDARDIZATION_SAMPLES, g))
                )
        objective = OBJECTIVES.build(setting.objective)
        if not isinstance(objective, nn.Module) or not callable(objective):
            raise ConfigError(
                f"objective '{setting.objective.kind}' built a {type(objective).__name__}: "
                "return an nn.Module called as objective(model, batch) (unmix.objectives.Objective)"
            )
        objective = objective.to(device)
        schedules = [model.advance] if hasattr(model, "advance") else []
        return cls(setting, process, mixing, model, objective, device, data, schedules)

    @classmethod
    def from_run(cls, run_dir: str | Path, device: str | torch.device = "cpu") -> Experiment:
        """The experiment of a finished (or checkpointed) run directory, with its trained weights,
        in eval mode. The checkpoint is loaded with ``weights_only=True``."""
        from unmix import runs

        state = runs.load_checkpoint(Path(run_dir) / runs.CHECKPOINT)
        exp = cls.build(Setting.from_dict(state["setting"]), device)
        try:
            exp.encoder.load_state_dict(state["encoder"])
        except (RuntimeError, KeyError) as err:
            raise ConfigError(
                f"{run_dir}: the checkpoint does not fit its setting ({err})"
            ) from None
        exp.encoder.eval()
        return exp

    def stream_generator(self, name: str) -> torch.Generator:
        """A generator for the named stream (``data/...`` of the data seed, ``train/...`` of the
        training seed; see :mod:`unmix.seeds`)."""
        group, _, _ = name.partition("/")
        if group not in ("data", "train"):
            raise ConfigError(f"a stream name starts with data/ or train/, got '{name}'")
        seed = self.setting.seeds.data if group == "data" else self.setting.seeds.train
        return sd.torch_generator(seed, name, self.device)

    def eval_data(self, n: int | None = None) -> torch.Tensor:
        """The fixed evaluation latents: n fresh draws from the marginal (the data seed's ``eval``
        stream) — or, for a finite data set, the latents of its whole test split (``n`` must be
        None)."""
        if self.data is not None:
            if n is not None:
                raise ConfigError("a finite data set is evaluated on its whole test split: n=None")
            return self.data.test.latents.to(self.device)
        n = n or self.setting.train.eval_samples
        if self._eval is None or self._eval.shape[0] != n:
            self._eval = self.process.sample(n, self.stream_generator("data/eval"))
        return self._eval

    # ------------------------------------------------------------------------------- training
    def batch(self, batch_size: int, generator: torch.Generator) -> Batch:
        """One training batch as the objective asks for it (:class:`~unmix.objectives.Batch`):
        anchors, their positives if ``objective.needs_pairs``, ``objective.n_negatives`` separately
        drawn negatives per anchor (or shared by all anchors, ``negatives: shared``)."""
        obj = self.objective
        if self.data is not None:
            z, x, x_pos = self.data.pairs(batch_size, generator, self.device)
            m = int(getattr(obj, "n_negatives", 0))
            x_neg = None
            if m and getattr(obj, "shared_negatives", False):  # M images for every anchor
                x_neg = self.data.negatives(m, generator, self.device)
            elif m:
                raise ConfigError(
                    "a finite data set draws negatives shared by every anchor only: set "
                    "objective.negatives: shared (or in_batch / queue)"
                )
            return Batch(x=x, z=z, x_pos=x_pos, x_neg=x_neg, generator=generator)
        if not getattr(obj, "needs_pairs", True):
            z = self.process.sample(batch_size, generator)
            return Batch(x=self.mixing(z), z=z, generator=generator)
        z, z_pos = self.process.sample_pairs(batch_size, generator)
        x, x_pos = self.mixing(torch.cat([z, z_pos])).split(batch_size)
        x_neg = None
        m = int(getattr(obj, "n_negatives", 0))
        if m and getattr(obj, "shared_negatives", False):  # M draws from p(z) for every anchor
            x_neg = self.mixing(self.process.sample(m, generator))
        elif m:
            z_neg = self.process.sample_negatives(batch_size, m, generator)
            x_neg = self.mixing(z_neg.reshape(-1, z.shape[-1])).reshape(batch_size, m, -1)
        return Batch(x=x, z=z, x_pos=x_pos, z_pos=z_pos, x_neg=x_neg, generator=generator)

    def loss(self, generator: torch.Generator, batch_size: int) -> torch.Tensor:
        """One minibatch loss: ``objective(model, batch)``."""
        return self.objective(self.encoder, self.batch(batch_size, generator))

    # ----------------------------------------------------------------------------- evaluation
    @torch.no_grad()
    def encode_eval(self, z: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
        """ẑ for the evaluation latents ``z``: f(g(z)) — for a VAE the posterior mean
        E_q[z | x], for a finite data set f of the test split's images."""
        model = self.encoder
        was_training = model.training
        model.eval()
        if self.setting.observes_images:
            chunk = min(chunk, 256 if self.setting.model.kind == "vae" else 512)
        try:
            if self.data is not None:
                if z.shape != self.data.test.latents.shape:
                    raise ConfigError(
                        "a finite data set is scored on its test split: pass exp.eval_data()"
                    )
                return torch.cat([model(x.to(self.device)) for x in self.data.test_images(chunk)])
            if self.setting.model.kind == "vae":
                out = []
                for c in z.split(chunk):
                    mu, logvar = model.encode(self.mixing(c))
                    out.append(model.prior.posterior_mean(mu, logvar))
                return torch.cat(out)
            return torch.cat([model(self.mixing(c)) for c in z.split(chunk)])
        finally:
            model.train(was_training)

    def evaluate(self, z: torch.Tensor | None = None) -> dict[str, float]:
        """Every metric of the setting (``setting.metric_specs``) of ẑ against the evaluation
        latents ``z`` (default: :meth:`eval_data`)."""
        z = self.eval_data() if z is None else z
        z_hat = self.encode_eval(z)
        finite = bool(torch.isfinite(z_hat).all())
        z_np = z.double().cpu().numpy()
        zh_np = z_hat.double().cpu().numpy()
        out: dict[str, float] = {}
        for spec in self.setting.metric_specs:
            if not finite and spec.kind != "vae":
                out[spec.kind] = float("nan")
                continue
            value = METRICS.build(spec, z=z_np, z_hat=zh_np, experiment=self, z_torch=z)
            out.update(_metric_values(spec.kind, value))
        return out


def _metric_values(name: str, value: Any) -> dict[str, float]:
    if isinstance(value, dict):
        return {str(k): float(v) for k, v in value.items()}
    if isinstance(value, int | float | np.floating | np.integer) or (
        isinstance(value, torch.Tensor) and value.numel() == 1
    ):
        return {name: float(value)}
    raise ConfigError(
        f"metric '{name}' returned a {type(value).__name__}: return a float or a dict of floats"
    )


FACTOR_PREFIXES = ("r2_factor", "mcc_factor")


def factor_scores(summary: dict) -> dict[str, float]:
    """The per-factor entries (metric ``factors``) of a run's metrics or summary."""
    return {k: v for k, v in summary.items() if k.startswith(FACTOR_PREFIXES)}
