"""Plugin for a measurement: paper 004's own Sprites networks inside unmix's VAE.

Load it with ``unmix train reizinger-fig5 --plugin benchmarks/sprites_reference_nets.py …``. It
re-registers the ``vae`` model kind so that an image VAE (``model.backbone: conv``) gets, instead
of unmix's conv encoder and decoder, the layer list the reference code uses on Sprites (a fact of
``rpatrik96/ima-vae``, written here from that list):

* encoder: four ``Conv2d(·, 32, 4, stride 2, padding 1)`` with ReLU (64 → 4 px), then
  ``Linear(512, 256)``, ReLU, ``Linear(256, 256)``, ReLU, ``Linear(256, 2d)``; raw [0, 1] pixels;
* decoder: ``Linear(d, 256)``, ReLU, ``Linear(256, 256)``, ReLU, ``Linear(256, 512)``, ReLU, then
  four ``ConvTranspose2d(32, ·, 4, stride 2, padding 1)`` with ReLU between them (to 3 channels);
* Xavier-uniform weights for every Linear layer, as its ``weights_init`` does.

unmix's log-variance bias start (−log min(γ², 100)) is kept. Everything else (prior, ELBO,
training, metrics) is unmix's. docs/images.md ("Fig. 5 with a learned prior and the broadcast
decoder") reports what it gave: pass ``model.vae.decoder=mlp`` so that the networks it replaces
are built (and the random stream consumed) as they were for that measurement.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.models.builders import VAEModelSpec
from unmix.registry import MODELS

_UNMIX_VAE = MODELS.entry("vae").factory


def _relu_after(layers: list[nn.Module]) -> list[nn.Module]:
    """``layers`` with a ReLU after each one."""
    return [m for layer in layers for m in (layer, nn.ReLU())]


def reference_nets(d: int) -> tuple[nn.Sequential, nn.Sequential]:
    """The reference's Sprites encoder ``(B, 3·64·64) → (B, 2d)`` and decoder ``(B, d) → (B, 3·64·64)``."""
    encoder = nn.Sequential(
        nn.Unflatten(1, (3, 64, 64)),
        *_relu_after([nn.Conv2d(3, 32, 4, 2, 1), *(nn.Conv2d(32, 32, 4, 2, 1) for _ in range(3))]),
        nn.Flatten(1),
        *_relu_after([nn.Linear(512, 256), nn.Linear(256, 256)]),
        nn.Linear(256, 2 * d),
    )
    decoder = nn.Sequential(
        *_relu_after([nn.Linear(d, 256), nn.Linear(256, 256), nn.Linear(256, 512)]),
        nn.Unflatten(1, (32, 4, 4)),
        *_relu_after([nn.ConvTranspose2d(32, 32, 4, 2, 1) for _ in range(3)]),
        nn.ConvTranspose2d(32, 3, 4, 2, 1),
        nn.Flatten(1),
    )
    for m in [*encoder.modules(), *decoder.modules()]:
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
    return encoder, decoder


@MODELS.register("vae", spec=VAEModelSpec, replace=True)
def vae(
    out_dim, image_shape, mixing, *, backbone="mlp", hidden=(10,), negative_slope=0.01, vae=None
):
    model = _UNMIX_VAE(
        out_dim,
        image_shape,
        mixing,
        backbone=backbone,
        hidden=hidden,
        negative_slope=negative_slope,
        vae=vae,
    )
    if backbone == "conv":
        if tuple(image_shape) != (3, 64, 64):
            raise ConfigError(
                f"sprites_reference_nets: the reference's nets take 3×64×64 images, got "
                f"{tuple(image_shape)}; set mixing.image_size=64"
            )
        encoder, decoder = reference_nets(out_dim)
        with torch.no_grad():
            encoder[-1].bias[out_dim:].fill_(-math.log(min(100.0, float(model.log_gamma2.exp()))))
        model.encoder, model.decoder = encoder, decoder
    return model
