"""Settings: the declarative, serialisable description of one experiment.

A :class:`Setting` says *what to run* — latent space, marginal and conditional, mixing, model,
objective, training budget and seeds — and nothing about *how* the objects are built; the builders
live next to the objects (:mod:`unmix.latents`, :mod:`unmix.mixing`, :mod:`unmix.models`,
:mod:`unmix.objectives`). A setting round-trips through YAML/dicts and is validated on load: an
invalid one raises :class:`unmix.errors.ConfigError` with one line per problem, each naming the field
(``latent.conditional.kappa``) and the fix.

Parameter conventions (the same everywhere in unmix): ``scale`` of a normal is the standard deviation
σ; of a Laplace or generalised normal it is the scale λ; ``kappa`` is a vMF concentration; ``beta``
is the generalised-normal shape (density ∝ exp(−(|x|/λ)^β)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from unmix.errors import ConfigError

SpaceName = Literal["sphere", "box", "euclidean"]
ModelSpace = Literal["sphere", "box", "box_sigmoid", "unbounded"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DistributionSpec(_Strict):
    """A marginal or conditional family with its parameters.

    kinds: ``uniform``; ``vmf`` (kappa); ``normal`` (scale = σ); ``laplace`` (scale = λ);
    ``gennorm`` (scale = λ, beta). As a *marginal* on the sphere, ``vmf`` and ``normal`` are centred
    at the north pole e₁ (``normal`` = Euclidean noise around e₁ projected onto the sphere); on the
    box ``normal``/``laplace``/``gennorm`` are centred at the box centre and truncated to the box; on
    R^N they are centred at 0. As a *conditional* they are centred at z: vMF on the sphere; on the
    sphere the others are Euclidean noise projected back onto the sphere (not a vMF); on the box
    they are truncated to the box; on R^N exact.

    ``beta`` (a *marginal* on a box only; paper 004's Sprites latents): independent
    Beta(α_i, β_i) per coordinate, rescaled onto [low, high]. Either fixed shapes ``alpha`` and
    ``beta`` shared by all coordinates, or ``shape_range: [a, b]``: α_i, β_i ~ U(a, b) per
    coordinate, drawn from the data seed (:func:`unmix.distributions.beta.random_beta_shapes`).
    """

    kind: Literal["uniform", "vmf", "normal", "laplace", "gennorm", "beta"]
    kappa: float | None = Field(default=None, description="vMF concentration κ > 0")
    scale: float | None = Field(default=None, description="σ (normal) or λ (laplace, gennorm) > 0")
    beta: float | None = Field(
        default=None, description="generalised-normal shape β > 0, or the Beta's β > 0"
    )
    alpha: float | None = Field(default=None, description="the Beta's α > 0 (kind beta)")
    shape_range: tuple[float, float] | None = Field(
        default=None, description="kind beta: α_i, β_i ~ U(a, b) per coordinate from the data seed"
    )

    @model_validator(mode="after")
    def _check(self) -> DistributionSpec:
        if self.kind == "beta":
            return self._check_beta()
        if self.alpha is not None or self.shape_range is not None:
            raise ValueError(f"'{self.kind}' takes no 'alpha'/'shape_range' (only kind beta does)")
        need = {
            "vmf": ("kappa",),
            "normal": ("scale",),
            "laplace": ("scale",),
            "gennorm": ("scale", "beta"),
            "uniform": (),
        }[self.kind]
        for name in ("kappa", "scale", "beta"):
            value = getattr(self, name)
            if name in need:
                if value is None:
                    raise ValueError(f"'{self.kind}' needs '{name}': add e.g. {name}: 1.0")
                if not value > 0:
                    raise ValueError(f"'{name}' must be > 0 for '{self.kind}', got {value}")
            elif value is not None:
                raise ValueError(
                    f"'{self.kind}' takes no '{name}' (it takes: {list(need) or 'none'})"
                )
        return self

    def _check_beta(self) -> DistributionSpec:
        if self.kappa is not None or self.scale is not None:
            raise ValueError("'beta' takes no 'kappa'/'scale': give alpha and beta, or shape_range")
        fixed = self.alpha is not None or self.beta is not None
        if fixed == (self.shape_range is not None):
            raise ValueError(
                "'beta' needs either both 'alpha' and 'beta' (e.g. alpha: 2, beta: 5) or "
                "'shape_range' (e.g. shape_range: [2, 15]), not both"
            )
        if fixed:
            for name in ("alpha", "beta"):
                value = getattr(self, name)
                if value is None or not value > 0:
                    raise ValueError(f"'beta' needs '{name}' > 0, got {value}")
        elif not 0 < self.shape_range[0] <= self.shape_range[1]:
            raise ValueError(f"shape_range must satisfy 0 < a <= b, got {list(self.shape_range)}")
        return self

    def label(self) -> str:
        """Short human label as in the paper's tables, e.g. ``vMF(κ=1)``."""
        if self.kind == "beta":
            if self.shape_range is not None:
                a, b = self.shape_range
                return f"Beta(α, β ~ U({a:g}, {b:g}))"
            return f"Beta(α={self.alpha:g}, β={self.beta:g})"
        if self.kind == "uniform":
            return "Uniform"
        if self.kind == "vmf":
            return f"vMF(κ={self.kappa:g})"
        if self.kind == "normal":
            return f"Normal(σ={self.scale:g})"
        if self.kind == "laplace":
            return f"Laplace(λ={self.scale:g})"
        return f"GenNorm(β={self.beta:g}; λ={self.scale:g})"


class LatentSpec(_Strict):
    """The latent process: space, dimension, marginal p(z) and conditional p(z̃ | z).

    ``conditional`` may be omitted (``None``) for models that need no positive pairs, such as the
    VAE (``model.kind: vae``, ``objective.kind: elbo``), which only draws z ~ p(z).
    """

    space: SpaceName
    dim: int = Field(ge=1)
    radius: float = Field(default=1.0, gt=0)
    low: float = 0.0
    high: float = 1.0
    marginal: DistributionSpec = DistributionSpec(kind="uniform")
    conditional: DistributionSpec | None = None

    @model_validator(mode="after")
    def _check(self) -> LatentSpec:
        if self.space == "sphere" and self.dim < 2:
            raise ValueError(f"a sphere needs dim >= 2 (ambient dimension), got dim={self.dim}")
        if self.space == "box" and not self.low < self.high:
            raise ValueError(f"box needs low < high, got low={self.low}, high={self.high}")
        if self.conditional is not None and self.conditional.kind == "uniform":
            raise ValueError(
                "conditional cannot be 'uniform' (positive pairs must depend on z): "
                "use vmf, normal, laplace or gennorm"
            )
        if (
            self.conditional is not None
            and self.conditional.kind == "vmf"
            and self.space != "sphere"
        ):
            raise ValueError(
                f"a vMF conditional lives on the sphere, not on a {self.space}: "
                "use normal, laplace or gennorm, or set space: sphere"
            )
        if self.conditional is not None and self.conditional.kind == "beta":
            raise ValueError(
                "conditional cannot be 'beta' (it is a marginal): use normal, laplace or gennorm"
            )
        if self.marginal.kind == "beta" and self.space != "box":
            raise ValueError(f"a beta marginal lives on a box, not on a {self.space}")
        if self.marginal.kind == "vmf" and self.space != "sphere":
            raise ValueError(f"a vMF marginal lives on the sphere, not on a {self.space}")
        if self.marginal.kind == "uniform" and self.space == "euclidean":
            raise ValueError(
                "there is no uniform distribution on R^N: give the euclidean space a "
                "normal, laplace or gennorm marginal"
            )
        if self.space == "sphere" and self.marginal.kind in ("laplace", "gennorm"):
            raise ValueError(
                f"marginal '{self.marginal.kind}' on the sphere is not supported: "
                "use uniform, vmf or normal"
            )
        return self


MixingKind = Literal[
    "invertible_mlp",
    "identity",
    "moebius",
    "volume_preserving",
    "moebius+linear",
    "smooth_leaky_mlp",
    "triangular_mlp",
    "sprites",
    "scenes3d",
]

RENDERER_DIMS = {"sprites": 4, "scenes3d": 10}
"""Latent dimension each image renderer takes (factors in the unit box [0, 1]^d)."""


class MixingSpec(_Strict):
    """The mixing g: z → x (all seeded by the data seed; see :mod:`unmix.mixing`).

    kinds: ``invertible_mlp`` (paper 000, Sec. 4.1, Appx A.3; uses ``n_layers``,
    ``negative_slope``, ``cond_pool_size``, ``cond_quantile``); ``identity``; paper 004's
    ``moebius`` (Sec. 4.3), ``volume_preserving`` (the volume-preserving linear map
    M₀/|det M₀|^{1/d}), ``moebius+linear`` (Möbius followed by that linear map, Fig. 3 right),
    ``smooth_leaky_mlp`` (orthogonal layers + smooth leaky ReLU, Sec. 4.1; uses ``n_layers``,
    ``negative_slope``) and ``triangular_mlp`` (upper-triangular layers, Sec. 4.2 / Fig. 4; uses
    ``n_layers``, ``negative_slope``). ``center: true`` subtracts the mean observation E[g(z)]
    (estimated once from ``center_samples`` draws of p(z) with a stream of the data seed), as paper
    004's code mean-centres its observations; the shift changes neither Jacobians nor c_IMA.

    Image renderers (:mod:`unmix.render`, docs/render.md): ``sprites`` (paper 004's Sprites: x, y,
    scale, hue; one ``sprite_shape`` on black) and ``scenes3d`` (a 3DIdent-like scene, 10 factors);
    both take latents in the unit box [0, 1]^d and give RGB images of ``image_size`` pixels.
    """

    kind: MixingKind = "invertible_mlp"
    n_layers: int = Field(default=3, ge=1)
    negative_slope: float = Field(default=0.2, gt=0, le=1)
    cond_pool_size: int = Field(default=25_000, ge=1)
    cond_quantile: float = Field(default=0.0, ge=0, le=1)
    center: bool = False
    center_samples: int = Field(default=100_000, ge=2)
    image_size: int = Field(default=64, ge=8, le=512, description="renderers: image side (px)")
    sprite_shape: Literal["triangle", "square", "ellipse", "circle"] = "triangle"

    @property
    def is_renderer(self) -> bool:
        return self.kind in RENDERER_DIMS

    @model_validator(mode="after")
    def _check(self) -> MixingSpec:
        if self.is_renderer and self.center:
            raise ValueError(f"center does not apply to the '{self.kind}' renderer: remove it")
        return self


class VAESpec(_Strict):
    r"""The VAE's generative side (paper 004, eq. (3)): prior p₀(z) and decoder p(x|z).

    * ``prior``: ``gaussian`` (standard normal), ``uniform`` (on the unit box (0,1)^d) or ``beta``
      (Beta(``prior_alpha``, ``prior_beta``) per dimension on (0,1)^d). Box priors are handled
      exactly by a change of variables: the encoder's Gaussian acts on u ∈ R^d and z = sigmoid(u),
      with the prior's density on u, p₀(sigmoid(u))·sigmoid'(u), in the ELBO (see
      :mod:`unmix.models.vae`).
    * ``gamma2``: the decoder precision γ² of p(x|z) = N(f(z), γ⁻² I) (its variance is 1/γ²);
      ``learn_gamma: true`` makes log γ² a trained parameter initialised at ``gamma2``.
    * ``decoder``: ``mlp`` (learned, widths ``model.hidden``) or ``ground_truth`` (fixed to the
      setting's mixing, so only the encoder trains — paper 004, Sec. 4.2 / Fig. 4).
    * ``gamma2_warmup_steps`` > 0 (an unmix optimisation choice, not the paper's): log γ² rises
      linearly from log ``gamma2_start`` to log ``gamma2`` over the first that many training steps,
      then stays at ``gamma2`` (the paper's objective); 0 = fixed γ² throughout.
    """

    prior: Literal["gaussian", "uniform", "beta"] = "gaussian"
    prior_alpha: float = Field(default=1.0, gt=0, description="Beta prior's α > 0")
    prior_beta: float = Field(default=1.0, gt=0, description="Beta prior's β > 0")
    gamma2: float = Field(default=1e5, gt=0, description="decoder precision γ² > 0")
    learn_gamma: bool = False
    decoder: Literal["mlp", "ground_truth"] = "mlp"
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
        return self


class ModelSpec(_Strict):
    """The encoder f: x → ẑ. ``hidden`` are multiples of the latent dim N (paper: 10,50,50,50,50,10).

    ``space`` is the model's latent space: ``sphere`` (L2 normalisation to ``radius``), ``box``
    (L∞ normalisation with a learnable magnitude, as the paper describes), ``box_sigmoid``
    (sigmoid(x)·b with learnable b, what the reference code did), ``unbounded`` (raw output).

    ``kind: vae`` is paper 004's Gaussian VAE (:class:`unmix.models.vae.GaussianVAE`): an encoder
    MLP x → (mean, log-variance) and a decoder MLP z → x, both with hidden widths ``hidden``
    (multiples of N) and LeakyReLU(``negative_slope``); its prior and decoder precision are in the
    ``vae`` section (:class:`VAESpec`, filled with defaults when omitted). ``space``, ``radius`` and
    ``learn_radius`` do not apply to it (the prior sets the latent space).
    """

    kind: Literal["mlp", "identity", "vae"] = "mlp"
    backbone: Literal["mlp", "conv", "resnet18"] = Field(
        default="mlp",
        description="mlp for vector observations; conv (a 4-layer conv net, "
        "unmix.models.conv) or resnet18 (unmix.models.resnet) for images. With an image backbone "
        "'hidden' lists at most one hidden layer after the backbone (paper 000: [10], i.e. 10·N), "
        "with LeakyReLU(negative_slope); the conv nets' own layers use LeakyReLU(0.01), "
        "ResNet-18 its ReLUs.",
    )
    space: ModelSpace = "sphere"
    hidden: tuple[int, ...] = (10, 50, 50, 50, 50, 10)
    negative_slope: float = Field(default=0.01, ge=0, le=1)
    radius: float = Field(default=1.0, gt=0)
    learn_radius: bool = False
    standardize_input: bool = Field(
        default=False,
        description="Standardise x per dimension with a fixed mean/std taken from 4096 draws of the "
        "data seed (a preprocessing step, not a trained layer).",
    )
    vae: VAESpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_vae(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kind") == "vae" and data.get("vae") is None:
            data = {**data, "vae": {}}
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.kind != "vae" and self.vae is not None:
            raise ValueError(f"the 'vae' section is for kind: vae, not kind: {self.kind}")
        if self.backbone != "mlp":
            if self.kind == "identity":
                raise ValueError("backbone applies to learned models, not kind: identity")
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
            if self.kind == "vae" and self.backbone != "conv":
                raise ValueError("an image VAE uses backbone: conv (a conv encoder and decoder)")
        if self.kind == "vae" and self.standardize_input:
            raise ValueError(
                "standardize_input does not apply to kind: vae (its likelihood models x itself; "
                "use mixing.center to centre the observations): set it to false"
            )
        return self


class ObjectiveSpec(_Strict):
    """The loss. ``infonce``: dot-product InfoNCE / τ on the sphere (q_h = vMF(1/τ)).
    ``lp_infonce``: δ = ‖a − b‖_p^q (q defaults to p): p=1 Laplace, p=2 Normal, p=β GenNorm.
    ``supervised``: MSE to z (baseline). ``align_uniform``: Wang & Isola's two losses.
    ``elbo``: the negative ELBO of a VAE (paper 004, eq. (1)), with the KL weighted by
    ``kl_weight`` (β of a β-VAE; 1 = the ELBO) and ``mc_samples`` reparameterised samples per
    observation (see :mod:`unmix.objectives.elbo`).
    """

    kind: Literal["infonce", "lp_infonce", "supervised", "align_uniform", "elbo"] = "infonce"
    tau: float = Field(default=1.0, gt=0)
    p: float | None = Field(default=None, gt=0)
    q: float | None = Field(default=None, gt=0)
    negatives: Literal["in_batch", "external"] = "in_batch"
    n_negatives: int = Field(default=0, ge=0)
    symmetric: bool = False
    align_weight: float = Field(default=1.0, ge=0)
    uniform_weight: float = Field(default=1.0, ge=0)
    kl_weight: float = Field(default=1.0, ge=0, description="β of a β-VAE (elbo only)")
    mc_samples: int = Field(default=1, ge=1, description="samples per observation (elbo only)")

    @model_validator(mode="after")
    def _check(self) -> ObjectiveSpec:
        if self.kind != "elbo" and (self.kl_weight != 1.0 or self.mc_samples != 1):
            raise ValueError(f"'{self.kind}' takes no 'kl_weight'/'mc_samples' (only elbo does)")
        if self.kind == "lp_infonce" and self.p is None:
            raise ValueError("lp_infonce needs 'p' (1 = Laplace, 2 = Normal, β = GenNorm)")
        if self.kind != "lp_infonce" and (self.p is not None or self.q is not None):
            raise ValueError(f"'{self.kind}' takes no 'p'/'q' (only lp_infonce does)")
        if self.negatives == "external" and self.n_negatives < 1:
            raise ValueError("negatives: external needs n_negatives >= 1")
        return self

    def label(self) -> str:
        if self.kind == "infonce":
            return f"vMF(κ={1 / self.tau:g})"
        if self.kind == "lp_infonce":
            return {1.0: "Laplace", 2.0: "Normal"}.get(float(self.p), f"GenNorm(β={self.p:g})")
        return self.kind


class TrainSpec(_Strict):
    """Optimisation budget. ``lr_schedule``: constant | cosine (to lr·final_lr_factor) after warmup."""

    steps: int = Field(default=2000, ge=0)
    batch_size: int = Field(default=1024, ge=2)
    lr: float = Field(default=1e-4, gt=0)
    lr_schedule: Literal["constant", "cosine"] = "constant"
    warmup_steps: int = Field(default=0, ge=0)
    final_lr_factor: float = Field(default=0.01, ge=0, le=1)
    grad_clip: float | None = Field(default=None, gt=0)
    eval_every: int = Field(default=500, ge=1)
    eval_samples: int = Field(default=4096, ge=16)
    checkpoint_every: int = Field(default=1000, ge=1)


class DataSpec(_Strict):
    """A finite image data set in place of fresh draws (paper 000, Sec. 4.2.2: 3DIdent).

    * ``kind: rendered`` — render ``n_train`` + ``n_test`` images once with the setting's renderer
      (``mixing.kind`` sprites or scenes3d) from latents z ~ p(z) of the data seed, into ``root``
      (default: a cache directory named after the setting's data, see
      :func:`unmix.datasets.default_root`), in unmix's image-store format (docs/data.md);
      resumable; reused by later runs.
    * ``kind: store`` — read existing stores ``root/train`` and ``root/test`` (``unmix render``).
    * ``kind: 3dident`` — read the original 3DIdent at ``root`` (splits ``train`` and ``test``
      as distributed; see :mod:`unmix.data.threedident`).

    Training draws anchors uniformly from the training split. ``positives: nearest_latent`` (the
    paper's rule): draw z̃′ ~ p(z̃′ | z) from ``latent.conditional``, then take the training image
    whose latent is nearest to z̃′ in L2, other than the anchor itself (as the authors' code
    does). 3DIdent's latents are mapped onto the unit box (:class:`unmix.datasets.UnitLatents`). ``positives: augment`` (Table 4's last row): two SimCLR
    augmentations of the anchor image (:class:`unmix.augment.SimCLRAugment`); no conditional is
    used. Metrics are computed on the whole test split (``train.eval_samples`` does not apply).
    """

    kind: Literal["rendered", "store", "3dident"]
    root: str | None = None
    n_train: int = Field(default=20_000, ge=2)
    n_test: int = Field(default=5_000, ge=16)
    positives: Literal["nearest_latent", "augment"] = "nearest_latent"

    @model_validator(mode="after")
    def _check(self) -> DataSpec:
        if self.kind != "rendered" and not self.root:
            raise ValueError(f"data.kind: {self.kind} needs data.root (the data set's directory)")
        return self


class Seeds(_Strict):
    """``data`` seeds the mixing and the evaluation data; ``train`` the initialisation and batches."""

    data: int = Field(default=0, ge=0)
    train: int = Field(default=0, ge=0)


_INVERTIBLE_SQUARE = frozenset(
    {
        "invertible_mlp",
        "moebius",
        "volume_preserving",
        "moebius+linear",
        "smooth_leaky_mlp",
        "triangular_mlp",
    }
)


class Setting(_Strict):
    """One experiment: latent process, mixing, model, objective, training budget and seeds."""

    name: str = "custom"
    latent: LatentSpec
    mixing: MixingSpec = MixingSpec()
    model: ModelSpec = ModelSpec()
    objective: ObjectiveSpec = ObjectiveSpec()
    train: TrainSpec = TrainSpec()
    seeds: Seeds = Seeds()
    data: DataSpec | None = None

    @property
    def observes_images(self) -> bool:
        """True when x is an image: a renderer mixing or a data set."""
        return self.mixing.is_renderer or self.data is not None

    def _check_images(self) -> None:
        lat, mix, mod, data = self.latent, self.mixing, self.model, self.data
        if mix.is_renderer:
            want = RENDERER_DIMS[mix.kind]
            if lat.space != "box" or lat.low != 0.0 or lat.high != 1.0 or lat.dim != want:
                raise ValueError(
                    f"the '{mix.kind}' renderer takes latents in the unit box [0, 1]^{want}: set "
                    f"latent.space: box, low: 0, high: 1, dim: {want} (got {lat.space}, "
                    f"dim {lat.dim}, [{lat.low:g}, {lat.high:g}])"
                )
        if data is not None:
            if data.kind == "rendered" and not mix.is_renderer:
                raise ValueError(
                    "data.kind: rendered needs a renderer: set mixing.kind to sprites or scenes3d"
                )
            if mod.kind == "vae":
                raise ValueError("a VAE trains on fresh renders: remove the data section")
            if data.positives == "nearest_latent" and lat.conditional is None:
                raise ValueError(
                    "data.positives: nearest_latent needs latent.conditional (z̃′ ~ p(·|z))"
                )
        if self.observes_images and mod.kind != "identity" and mod.backbone == "mlp":
            raise ValueError(
                "observations are images: set model.backbone to conv or resnet18 "
                "(and model.hidden to e.g. [10])"
            )
        if not self.observes_images and mod.backbone != "mlp":
            raise ValueError(
                f"model.backbone {mod.backbone} needs image observations (a renderer mixing or "
                "a data section): use backbone: mlp"
            )
        if self.observes_images and mod.kind == "identity":
            raise ValueError(
                "kind: identity scores the observations themselves, which are images here: "
                "it is not defined for image settings"
            )

    @model_validator(mode="after")
    def _check(self) -> Setting:
        self._check_images()
        is_vae, is_elbo = self.model.kind == "vae", self.objective.kind == "elbo"
        if is_vae != is_elbo:
            raise ValueError(
                "model.kind: vae and objective.kind: elbo go together: set both "
                f"(got model.kind {self.model.kind}, objective.kind {self.objective.kind})"
            )
        if is_vae and self.latent.space == "sphere":
            raise ValueError(
                "the VAE's latents live in R^N or a box, not on a sphere: use latent.space: "
                "euclidean or box"
            )
        if (
            is_vae
            and self.model.vae.decoder == "ground_truth"
            and self.mixing.kind not in _INVERTIBLE_SQUARE
        ):
            raise ValueError(
                f"model.vae.decoder: ground_truth needs a mixing with an exact inverse and "
                f"Jacobian, one of {sorted(_INVERTIBLE_SQUARE)}; got mixing.kind "
                f"{self.mixing.kind}"
            )
        augment = self.data is not None and self.data.positives == "augment"
        if self.latent.conditional is None and self.objective.kind != "elbo" and not augment:
            raise ValueError(
                f"objective '{self.objective.kind}' needs positive pairs: give the latent a "
                "conditional, e.g. latent.conditional: {kind: normal, scale: 0.05}"
            )
        if self.objective.kind in ("infonce", "align_uniform") and self.model.space != "sphere":
            raise ValueError(
                f"objective '{self.objective.kind}' needs model.space: sphere "
                f"(got {self.model.space}); use lp_infonce for box/unbounded models"
            )
        return self

    # --- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Setting:
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ConfigError(format_validation_error(err)) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Setting:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"Setting file not found: {path}") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"{path} is not valid YAML: {err}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a mapping (latent:, mixing:, model: ...).")
        return cls.from_dict(data)

    def replace(self, **updates: Any) -> Setting:
        """A copy with dotted-path updates, e.g. ``replace(**{"train.steps": 10})``; validated."""
        data = self.to_dict()
        for dotted, value in updates.items():
            node = data
            *parents, leaf = dotted.split(".")
            for key in parents:
                if key not in node or not isinstance(node[key], dict):
                    raise ConfigError(f"Unknown setting field '{dotted}'.")
                node = node[key]
            if leaf not in node and leaf not in ("kappa", "scale", "beta", "p", "q"):
                raise ConfigError(f"Unknown setting field '{dotted}'.")
            node[leaf] = value
        return Setting.from_dict(data)


def format_validation_error(err: ValidationError) -> str:
    """One readable line per problem: ``field.path: message``."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; see `unmix settings --show NAME` for an example)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        lines.append(f"{loc or 'setting'}: {msg}")
    return "Invalid setting:\n  " + "\n  ".join(lines)


def load_setting(name_or_path: str | Path) -> Setting:
    """A preset name (see :func:`unmix.presets.list_presets`) or a path to a YAML file."""
    from unmix import presets

    text = str(name_or_path)
    if text in presets.PRESETS:
        return presets.get(text).setting
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return Setting.from_yaml(path)
    close = presets.closest(text)
    hint = f" Did you mean '{close}'?" if close else ""
    raise ConfigError(
        f"'{text}' is neither a preset nor a YAML file.{hint} Run `unmix settings` to list presets."
    )


def assumptions_match(setting: Setting, target: Literal["affine", "permutation"]) -> bool:
    """The tables' "M." column, computed from the setting (paper 000, Tables 1–2).

    Rule. The theory's assumptions hold iff (1) the ground-truth marginal is uniform; (2) the model's
    latent space equals the generative one (sphere ↔ sphere; box ↔ box or box_sigmoid; R^N ↔
    unbounded); (3) the model's conditional q_h has the form of the ground-truth conditional: vMF ↔
    dot-product InfoNCE on the sphere (Theorem 1), or δ = ‖·‖_p^p with the conditional's metric on a
    convex body (Theorem 5: normal ↔ p = 2, laplace ↔ p = 1, gennorm(β) ↔ p = β). For identifiability
    up to generalised permutations (Table 2, Theorem 6) additionally (4) the space is a box and
    p ≠ 2. (Unbounded R^N is not a convex body, so it never matches: its marginal cannot be uniform.)
    """
    lat, mod, obj = setting.latent, setting.model, setting.objective
    if lat.marginal.kind != "uniform" or lat.conditional is None or mod.kind == "vae":
        return False
    space_ok = {
        "sphere": mod.space == "sphere",
        "box": mod.space in ("box", "box_sigmoid"),
        "euclidean": mod.space == "unbounded",
    }[lat.space]
    if not space_ok:
        return False
    cond = lat.conditional
    if lat.space == "sphere":
        match = (
            cond.kind == "vmf" and obj.kind == "infonce" and abs(cond.kappa - 1 / obj.tau) < 1e-9
        )
    else:
        if obj.kind != "lp_infonce" or (obj.q is not None and obj.q != obj.p):
            return False
        want_p = {"normal": 2.0, "laplace": 1.0, "gennorm": cond.beta}.get(cond.kind)
        match = want_p is not None and abs(float(obj.p) - float(want_p)) < 1e-9
    if target == "permutation":
        match = match and lat.space == "box" and float(obj.p or 2.0) != 2.0
    return match
