"""The built-in models as registered kinds (``model: {kind: mlp | identity | vae}``).

A model factory ``f(in_dim, out_dim, seed, image_shape, mixing, *, fields...)`` is called with
the torch RNG forked and seeded from ``seed`` (the training seed's ``init`` stream), so building a
model never touches the global RNG. ``hidden`` lists widths as multiples of the latent dimension N
(paper 000: ``[10, 50, 50, 50, 50, 10]``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import torch
from pydantic import Field, field_validator, model_validator
from torch import nn

from unmix.errors import ConfigError
from unmix.registry import MODELS, SpecBase, register_model

ModelSpace = Literal["sphere", "box", "box_sigmoid", "unbounded"]
Hidden = tuple[Annotated[int, Field(ge=1, le=100_000)], ...]


class MLPModelSpec(SpecBase):
    """The encoder f: x → ẑ (paper 000). ``space`` is the model's latent space: ``sphere`` (L2
    normalisation to ``radius``), ``box`` (L∞ normalisation with a learnable magnitude, as the
    paper describes), ``box_sigmoid`` (sigmoid(x)·b with learnable b, what the reference code
    did), ``unbounded`` (raw output). ``backbone``: ``mlp`` for vector observations; ``conv`` (a
    4-layer conv net), ``conv_pool`` (the same, its readout also given the last map's spatial mean
    and maximum per channel) or ``resnet18`` for images, followed by at most one hidden layer of
    ``hidden[0]``·N units with LeakyReLU(``negative_slope``)."""

    kind: Literal["mlp"] = "mlp"
    backbone: Literal["mlp", "conv", "conv_pool", "resnet18"] = "mlp"
    space: ModelSpace = "sphere"
    hidden: Hidden = (10, 50, 50, 50, 50, 10)
    negative_slope: Annotated[float, Field(ge=0, le=1)] = 0.01
    radius: Annotated[float, Field(gt=0, le=1e6)] = 1.0
    learn_radius: bool = False
    learn_magnitude: bool = Field(
        default=True,
        description="Box heads (box, box_sigmoid): learn the per-dimension magnitude b "
        "(initialised at 1). false keeps b = 1, so box_sigmoid spans the unit box (0, 1)^N.",
    )
    out_dim: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        default=None,
        description="Dimensions of the representation ẑ; default latent.dim. More than the "
        "latents (e.g. Table 3's 10 codes for 3 factors, as the authors' loaders) leaves the "
        "surplus unmatched by MCC.",
    )
    standardize_input: bool = Field(
        default=False,
        description="Standardise x per dimension with a fixed mean/std taken from 4096 draws of "
        "the data seed (a preprocessing step, not a trained layer).",
    )
    standardize_output: bool = Field(
        default=False,
        description="space: box only. Standardise each raw output over the batch (BatchNorm "
        "without affine parameters; running statistics at evaluation) before the L∞ "
        "normalisation, so that no output holds a face through a larger offset or scale "
        "(a locked face pins that feature at ±b; docs/images.md).",
    )

    @model_validator(mode="after")
    def _check(self) -> MLPModelSpec:
        if self.standardize_output and self.space != "box":
            raise ValueError(
                f"standardize_output is the L∞ box head's (space: box), not space '{self.space}': "
                "set it to false or use space: box"
            )
        if self.backbone != "mlp":
            if len(self.hidden) > 1:
                raise ValueError(
                    f"with backbone {self.backbone} 'hidden' lists at most one layer after the "
                    f"backbone (e.g. [10]); got {list(self.hidden)}"
                )
            if self.standardize_input:
                raise ValueError(
                    f"standardize_input is for vector observations, not backbone {self.backbone}: "
                    "set it to false"
                )
        return self


class IdentityModelSpec(SpecBase):
    """No encoder: the observations themselves are scored (the tables' Identity column)."""

    kind: Literal["identity"] = "identity"


class VAESpec(SpecBase):
    r"""The VAE's generative side (paper 004, eq. (3)): prior p₀(z) and decoder p(x|z).

    * ``prior``: ``gaussian`` (standard normal), ``uniform`` (on the unit box (0,1)^d) or ``beta``
      (Beta(``prior_alpha``, ``prior_beta``) per dimension on (0,1)^d). Box priors are handled
      exactly by a change of variables: the encoder's Gaussian acts on u ∈ R^d and z = sigmoid(u).
      ``learn_prior: true`` (Beta only) trains one (α_k, β_k) per latent, starting at
      (``prior_alpha``, ``prior_beta``), as paper 004's code does on Sprites (``fix_prior: false``).
    * ``gamma2``: the decoder precision γ² of p(x|z) = N(f(z), γ⁻² I) (its variance is 1/γ²);
      ``learn_gamma: true`` makes log γ² a trained parameter initialised at ``gamma2``.
    * ``decoder``: ``mlp`` (learned, widths ``model.hidden``; with ``backbone: conv`` the mirrored
      transposed-conv decoder), ``broadcast`` (images only: the spatial-broadcast decoder
      :class:`~unmix.models.conv.BroadcastDecoder`, one MLP of the latent and each pixel's
      coordinates, an unmix choice for single-object images) or ``ground_truth`` (fixed to the
      setting's mixing, so only the encoder trains — paper 004, Sec. 4.2 / Fig. 4).
    * ``gamma2_warmup_steps`` > 0 (an unmix optimisation choice, not the paper's): log γ² rises
      linearly from log ``gamma2_start`` to log ``gamma2`` over the first that many training steps
      (a schedule the trainer advances next to the learning-rate schedule), then stays.
    """

    prior: Literal["gaussian", "uniform", "beta"] = "gaussian"
    prior_alpha: float = Field(default=1.0, gt=0, description="Beta prior's α > 0")
    prior_beta: float = Field(default=1.0, gt=0, description="Beta prior's β > 0")
    gamma2: float = Field(default=1e5, gt=0, le=1e12, description="decoder precision γ² > 0")
    learn_gamma: bool = False
    learn_prior: bool = False
    decoder: Literal["mlp", "broadcast", "ground_truth"] = "mlp"
    gamma2_warmup_steps: int = Field(default=0, ge=0)
    gamma2_start: float = Field(default=100.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> VAESpec:
        if self.learn_gamma and self.gamma2_warmup_steps:
            raise ValueError(
                "learn_gamma: true cannot be combined with a γ² warm-up: set "
                "gamma2_warmup_steps: 0 or learn_gamma: false"
            )
        if self.prior != "beta" and (self.prior_alpha != 1.0 or self.prior_beta != 1.0):
            raise ValueError(
                f"prior_alpha/prior_beta are the Beta prior's shapes; prior '{self.prior}' takes "
                "none: remove them or set prior: beta"
            )
        if self.learn_prior and self.prior != "beta":
            raise ValueError(
                f"learn_prior trains a Beta prior's shapes; prior '{self.prior}' has none: set "
                "prior: beta or learn_prior: false"
            )
        return self

    def build_prior(self, dim: int) -> nn.Module:
        """The :class:`~unmix.models.vae.VAEPrior` these fields describe, for ``dim`` latents."""
        from unmix.models.vae import VAEPrior

        beta = self.prior == "beta"
        return VAEPrior(
            self.prior,
            self.prior_alpha if beta else 1.0,
            self.prior_beta if beta else 1.0,
            learn=self.learn_prior,
            dim=dim,
        )


class VAEModelSpec(SpecBase):
    """Paper 004's Gaussian VAE: an encoder x → (mean, log-variance) and a decoder z → x with
    hidden widths ``hidden`` (multiples of N) and LeakyReLU(``negative_slope``), or a conv encoder
    and decoder (``backbone: conv``) for images; prior and decoder precision in ``vae``."""

    kind: Literal["vae"] = "vae"
    backbone: Literal["mlp", "conv"] = "mlp"
    hidden: Hidden = (10, 50, 50, 50, 50, 10)
    negative_slope: Annotated[float, Field(ge=0, le=1)] = 0.01
    vae: VAESpec = VAESpec()

    @field_validator("vae", mode="before")
    @classmethod
    def _default_vae(cls, value: Any) -> Any:
        return VAESpec() if value is None else value

    @model_validator(mode="after")
    def _check(self) -> VAEModelSpec:
        if self.backbone != "mlp" and len(self.hidden) > 1:
            raise ValueError(
                f"with backbone {self.backbone} 'hidden' lists at most one layer after the "
                f"backbone (e.g. [10]); got {list(self.hidden)}"
            )
        if self.vae.decoder == "broadcast" and self.backbone != "conv":
            raise ValueError(
                "vae.decoder: broadcast draws images pixel by pixel and goes with backbone: conv; "
                f"got backbone: {self.backbone} (use vae.decoder: mlp)"
            )
        return self


def build_backbone(backbone: str, image_shape: tuple[int, int, int]) -> nn.Module:
    """The image backbone ``backbone`` (conv, conv_pool or resnet18) for images of shape ``(C, H, W)``."""
    channels, height, width = image_shape
    if height != width:
        raise ConfigError(f"image backbones take square images, got {height}×{width}")
    if backbone == "resnet18":
        from unmix.models.resnet import ResNet18Backbone

        return ResNet18Backbone(in_channels=channels)
    from unmix.models.conv import ConvBackbone

    return ConvBackbone(in_channels=channels, image_size=height, pool=backbone == "conv_pool")


@register_model("mlp", spec=MLPModelSpec)
def mlp(
    in_dim: int,
    out_dim: int,
    image_shape: Any,
    *,
    backbone: str = "mlp",
    space: str = "sphere",
    hidden: tuple[int, ...] = (10, 50, 50, 50, 50, 10),
    negative_slope: float = 0.01,
    radius: float = 1.0,
    learn_radius: bool = False,
    learn_magnitude: bool = True,
    standardize_output: bool = False,
) -> nn.Module:
    from unmix.models.encoders import MLPEncoder

    if backbone != "mlp":
        from unmix.models.conv import ImageEncoder

        if image_shape is None:
            raise ConfigError(f"model.backbone {backbone} needs image observations")
        return ImageEncoder(
            build_backbone(backbone, image_shape),
            out_dim,
            hidden_mult=hidden[0] if hidden else 0,
            negative_slope=negative_slope,
            space=space,
            radius=radius,
            learn_radius=learn_radius,
            learn_magnitude=learn_magnitude,
            standardize_output=standardize_output,
        )
    return MLPEncoder(
        in_dim,
        out_dim,
        hidden,
        negative_slope,
        space,
        radius,
        learn_radius,
        learn_magnitude,
        standardize_output,
    )


@register_model("identity", spec=IdentityModelSpec)
def identity() -> nn.Module:
    from unmix.models.encoders import IdentityEncoder

    return IdentityEncoder()


@register_model("vae", spec=VAEModelSpec)
def vae(
    out_dim: int,
    image_shape: Any,
    mixing: nn.Module,
    *,
    backbone: str = "mlp",
    hidden: tuple[int, ...] = (10, 50, 50, 50, 50, 10),
    negative_slope: float = 0.01,
    vae: VAESpec = VAESpec(),
) -> nn.Module:
    """Paper 004's :class:`~unmix.models.vae.GaussianVAE`; its decoder is the (frozen) mixing
    itself when ``vae.decoder`` is ``ground_truth``."""
    from unmix.models.vae import GaussianVAE

    dim, v = out_dim, vae
    nets: dict[str, object] = {}
    if backbone == "conv":
        from unmix.models.conv import BroadcastDecoder, ConvDecoder, ImageEncoder

        shape = image_shape
        nets["encoder_net"] = nn.Sequential(
            nn.Unflatten(1, shape),
            ImageEncoder(
                build_backbone(backbone, shape),
                2 * dim,
                hidden_mult=hidden[0] if hidden else 0,
                negative_slope=negative_slope,
                space="unbounded",
            ),
        )
        draw = BroadcastDecoder if v.decoder == "broadcast" else ConvDecoder
        nets["decoder_net"] = nn.Sequential(
            draw(dim, out_channels=shape[0], image_size=shape[1]), nn.Flatten(1)
        )
        nets["obs_dim"] = shape[0] * shape[1] * shape[2]
    return GaussianVAE(
        dim,
        **nets,
        hidden=hidden,
        negative_slope=negative_slope,
        prior=v.build_prior(dim),
        gamma2=v.gamma2,
        learn_gamma=v.learn_gamma,
        decoder=mixing if v.decoder == "ground_truth" else None,
        gamma2_warmup_steps=v.gamma2_warmup_steps,
        gamma2_start=v.gamma2_start,
    )


def build_model(spec: SpecBase, seed: int, **context: Any) -> nn.Module:
    """The model of ``spec`` (any registered kind), built with the torch RNG forked and seeded by
    ``seed``; ``context``: ``in_dim``, ``out_dim``, ``image_shape``, ``mixing``, ``latent``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MODELS.build(spec, seed=seed, **context)
    if not isinstance(model, nn.Module):
        raise ConfigError(
            f"model '{spec.kind}' built a {type(model).__name__}, not a torch.nn.Module"
        )
    return model
