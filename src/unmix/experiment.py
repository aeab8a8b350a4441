"""An experiment's objects, built from a setting: latent process, mixing, encoder, objective.

Seeds are kept apart: the **data seed** fixes the mixing g and the evaluation data; the **training
seed** fixes the encoder's initialisation and the training batches. Building never touches the
global RNG.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from unmix.latents import LatentProcess, build_latent_process
from unmix.settings import MixingSpec, ModelSpec, ObjectiveSpec, Setting

EVAL_STREAM = 1_000_003  # offset that separates the evaluation stream from the mixing's seed


def build_mixing(spec: MixingSpec, dim: int, seed: int) -> nn.Module:
    from unmix.mixing import InvertibleMLP

    if spec.kind == "identity":
        return nn.Identity()
    return InvertibleMLP(
        dim,
        n_layers=spec.n_layers,
        negative_slope=spec.negative_slope,
        cond_pool_size=spec.cond_pool_size,
        cond_quantile=spec.cond_quantile,
        seed=seed,
    )


def build_encoder(spec: ModelSpec, in_dim: int, out_dim: int, seed: int) -> nn.Module:
    from unmix.models import IdentityEncoder, MLPEncoder

    if spec.kind == "identity":
        return IdentityEncoder()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLPEncoder(
            in_dim,
            out_dim,
            spec.hidden,
            spec.negative_slope,
            spec.space,
            spec.radius,
            spec.learn_radius,
        )


def build_objective(spec: ObjectiveSpec) -> nn.Module:
    from unmix import objectives as ob

    if spec.kind == "infonce":
        return ob.InfoNCE(tau=spec.tau, negatives=spec.negatives, symmetric=spec.symmetric)
    if spec.kind == "lp_infonce":
        return ob.LpInfoNCE(
            p=spec.p, q=spec.q, tau=spec.tau, negatives=spec.negatives, symmetric=spec.symmetric
        )
    if spec.kind == "supervised":
        return ob.Supervised()
    return ob.AlignUniform(align_weight=spec.align_weight, uniform_weight=spec.uniform_weight)


@dataclass
class Experiment:
    setting: Setting
    process: LatentProcess
    mixing: nn.Module
    encoder: nn.Module
    objective: nn.Module
    device: torch.device

    @classmethod
    def build(cls, setting: Setting, device: str | torch.device = "cpu") -> Experiment:
        device = torch.device(device)
        lat = setting.latent
        process = build_latent_process(lat, device=device)
        mixing = build_mixing(setting.mixing, lat.dim, setting.seeds.data).to(device)
        mixing.requires_grad_(False)
        encoder = build_encoder(setting.model, lat.dim, lat.dim, setting.seeds.train).to(device)
        objective = build_objective(setting.objective).to(device)
        return cls(setting, process, mixing, encoder, objective, device)

    def generator(self, seed: int) -> torch.Generator:
        return torch.Generator(device=self.device).manual_seed(int(seed))

    def eval_data(self, n: int | None = None) -> torch.Tensor:
        """The fixed evaluation latents: n fresh draws from the marginal, seeded by the data seed."""
        n = n or self.setting.train.eval_samples
        g = self.generator(self.setting.seeds.data + EVAL_STREAM)
        return self.process.sample(n, g)

    def loss(self, generator: torch.Generator, batch_size: int) -> torch.Tensor:
        """One minibatch loss: draw (z, z̃) [and negatives], mix, encode, score."""
        obj = self.setting.objective
        z, z_pos = self.process.sample_pairs(batch_size, generator)
        if obj.kind == "supervised":
            return self.objective(self.encoder(self.mixing(z)), z)
        x = self.mixing(torch.cat([z, z_pos]))
        h, h_pos = self.encoder(x).split(batch_size)
        if obj.kind == "align_uniform":
            return self.objective(h, h_pos)
        if obj.negatives == "external":
            z_neg = self.process.sample_negatives(batch_size, obj.n_negatives, generator)
            h_neg = self.encoder(self.mixing(z_neg.reshape(-1, z.shape[-1])))
            return self.objective(h, h_pos, h_neg.reshape(batch_size, obj.n_negatives, -1))
        return self.objective(h, h_pos)

    @torch.no_grad()
    def evaluate(self, z: torch.Tensor, chunk: int = 8192) -> dict[str, float]:
        """R² (held-out and in-sample) and MCC of f(g(z)) against z (see :mod:`unmix.metrics`)."""
        from unmix.metrics import mcc, r2_affine

        was_training = self.encoder.training
        self.encoder.eval()
        z_hat = torch.cat([self.encoder(self.mixing(c)) for c in z.split(chunk)])
        self.encoder.train(was_training)
        z_np, zh_np = z.double().cpu().numpy(), z_hat.double().cpu().numpy()
        if not torch.isfinite(z_hat).all():
            return {"r2": float("nan"), "r2_in_sample": float("nan"), "mcc": float("nan")}
        return {
            "r2": float(r2_affine(z_np, zh_np).r2),
            "r2_in_sample": float(r2_affine(z_np, zh_np, in_sample=True).r2),
            "mcc": float(mcc(z_np, zh_np).mcc),
        }
