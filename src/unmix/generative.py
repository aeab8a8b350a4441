"""The generative side of a setting — the latent process and the mixing — built from its seeds.

Every random stream is a named stream of the data seed (:mod:`unmix.seeds`): the marginal's random
parameters (``data/marginal_params``), the mixing's weights (``data/mixing``) and the draws that
estimate a centred mixing's offset (``data/center``).
"""

from __future__ import annotations

import torch
from torch import nn

from unmix.latents import LatentProcess, build_latent_process
from unmix.mixing.builders import build_mixing
from unmix.seeds import data_stream
from unmix.settings import Setting


def latent_process_of(setting: Setting, device: str | torch.device = "cpu") -> LatentProcess:
    """The latent process p(z), p(z̃ | z) of ``setting``."""
    return build_latent_process(
        setting.latent, device=device, seed=data_stream(setting.seeds, "marginal_params")
    )


def mixing_of(setting: Setting, device: str | torch.device = "cpu") -> nn.Module:
    """The mixing g of ``setting`` (seeded by its data seed's ``mixing`` stream), frozen."""
    process = latent_process_of(setting, device)
    g = build_mixing(
        setting.mixing,
        setting.latent.dim,
        data_stream(setting.seeds, "mixing"),
        latent=setting.latent,
        center_seed=data_stream(setting.seeds, "center"),
        sample_latents=process.sample,
    )
    return g.to(device).requires_grad_(False)
