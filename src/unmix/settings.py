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

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_serializer,
    model_validator,
)

# Importing the stages registers their built-in kinds (they register like a user's module).
import unmix.data.sequence_sets  # noqa: F401
import unmix.data.sets  # noqa: F401
import unmix.metrics.registered  # noqa: F401
import unmix.metrics.vae  # noqa: F401
import unmix.objectives  # noqa: F401
import unmix.render.module  # noqa: F401
from unmix.errors import ConfigError
from unmix.mixing.builders import INVERTIBLE_SQUARE, InvertibleMLPSpec
from unmix.models.builders import MLPModelSpec
from unmix.objectives.infonce import InfoNCESpec
from unmix.registry import DATASETS, METRICS, MIXINGS, MODELS, OBJECTIVES, Registry, SpecBase
from unmix.seeds import MAX_SEED

SpaceName = Literal["sphere", "box", "euclidean"]


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
    Beta(α_i, β_i) per coordinate, rescaled onto [low, high]. One of: fixed shapes ``alpha`` and
    ``beta`` shared by all coordinates; ``shapes: [[α_1, β_1], …, [α_d, β_d]]``, fixed shapes per
    coordinate; or ``shape_range: [a, b]``: α_i, β_i ~ U(a, b) per coordinate, drawn from the data
    seed (:func:`unmix.distributions.beta.random_beta_shapes`).
    """

    kind: Literal["uniform", "vmf", "normal", "laplace", "gennorm", "beta"]
    kappa: float | None = Field(
        default=None, le=1e8, allow_inf_nan=False, description="vMF concentration κ > 0"
    )
    scale: float | None = Field(
        default=None,
        le=1e8,
        allow_inf_nan=False,
        description="σ (normal) or λ (laplace, gennorm) > 0",
    )
    beta: float | None = Field(
        default=None,
        le=1e6,
        allow_inf_nan=False,
        description="generalised-normal shape β > 0, or the Beta's β > 0",
    )
    alpha: float | None = Field(
        default=None, le=1e6, allow_inf_nan=False, description="the Beta's α > 0 (kind beta)"
    )
    shape_range: tuple[float, float] | None = Field(
        default=None, description="kind beta: α_i, β_i ~ U(a, b) per coordinate from the data seed"
    )
    shapes: tuple[tuple[float, float], ...] | None = Field(
        default=None, description="kind beta: fixed (α_i, β_i) per coordinate, one pair per dim"
    )

    @model_validator(mode="after")
    def _check(self) -> DistributionSpec:
        if self.kind == "beta":
            return self._check_beta()
        if self.alpha is not None or self.shape_range is not None or self.shapes is not None:
            raise ValueError(
                f"'{self.kind}' takes no 'alpha'/'shape_range'/'shapes' (only kind beta does)"
            )
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
            raise ValueError(
                "'beta' takes no 'kappa'/'scale': give alpha and beta, shapes, or shape_range"
            )
        fixed = self.alpha is not None or self.beta is not None
        if fixed + (self.shape_range is not None) + (self.shapes is not None) != 1:
            raise ValueError(
                "'beta' needs exactly one of: both 'alpha' and 'beta' (e.g. alpha: 2, beta: 5), "
                "'shapes' (e.g. shapes: [[2, 5], [3, 3]], one pair per coordinate) or "
                "'shape_range' (e.g. shape_range: [2, 15])"
            )
        if self.shapes is not None:
            for i, (a, b) in enumerate(self.shapes):
                if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
                    raise ValueError(
                        f"'shapes' entry {i} must be two finite numbers > 0, got {[a, b]}"
                    )
        elif fixed:
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
            if self.shapes is not None:
                return "Beta(" + ", ".join(f"{a:.3g}/{b:.3g}" for a, b in self.shapes) + ")"
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
    dim: int = Field(ge=1, le=100_000, strict=True)
    radius: float = Field(default=1.0, gt=0, le=1e6, allow_inf_nan=False)
    low: float = Field(default=0.0, allow_inf_nan=False)
    high: float = Field(default=1.0, allow_inf_nan=False)
    marginal: DistributionSpec = DistributionSpec(kind="uniform")
    conditional: DistributionSpec | None = None

    def identity(self) -> dict[str, Any]:
        """What of the latent changes a data set's latents: every field but the conditional, as
        JSON (the key of rendered data sets). Fields added later are left out while unset, so
        the data sets rendered before them keep their names."""
        out = self.model_dump(mode="json", exclude={"conditional"})
        if out["marginal"].get("shapes") is None:
            out["marginal"].pop("shapes", None)
        return out

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
        if self.marginal.shapes is not None and len(self.marginal.shapes) != self.dim:
            raise ValueError(
                f"marginal 'shapes' lists {len(self.marginal.shapes)} (α, β) pairs but dim is "
                f"{self.dim}: give one pair per coordinate"
            )
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


# ------------------------------------------------------------------------------ stage sections
# ``mixing``, ``model``, ``objective`` and ``data`` are discriminated by ``kind``: each registered
# kind has its own pydantic model (built-ins declare theirs next to their builder; a user's kind
# gets one derived from its factory's keyword-only parameters), so a section holds exactly the
# fields of its kind and `unmix settings --show` prints only those.

_LEGACY_DEFAULTS: dict[str, dict[str, Any]] = {
    "mixing": {
        "n_layers": 3,
        "negative_slope": 0.2,
        "cond_pool_size": 25_000,
        "cond_quantile": 0.0,
        "center": False,
        "center_samples": 100_000,
        "image_size": 64,
        "sprite_shape": "triangle",
    },
    "model": {
        "backbone": "mlp",
        "space": "sphere",
        "hidden": [10, 50, 50, 50, 50, 10],
        "negative_slope": 0.01,
        "radius": 1.0,
        "learn_radius": False,
        "standardize_input": False,
        "vae": None,
    },
    "objective": {
        "tau": 1.0,
        "p": None,
        "q": None,
        "negatives": "in_batch",
        "n_negatives": 0,
        "symmetric": False,
        "align_weight": 1.0,
        "uniform_weight": 1.0,
        "kl_weight": 1.0,
        "mc_samples": 1,
    },
}
"""unmix 0.1 wrote every section as one flat bag of all kinds' fields (its config.yaml files and
checkpoints hold them). A field that does not belong to the section's kind is dropped when it
holds that old default — it had no effect — and refused otherwise."""


def same_value(a: Any, b: Any) -> bool:
    """Field equality in which a list and a tuple of the same items are equal (YAML vs specs)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return a == b


def flat_fields(data: Any, prefix: str = "") -> dict[str, Any]:
    """A setting (as a dict) as ``{dotted field: value}``; lists are values, mappings nest."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flat_fields(v, key) if isinstance(v, dict) else {key: v})
    return out


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The dotted fields whose values differ between two settings as dicts (either side)."""
    a, b = flat_fields(old), flat_fields(new)
    return [
        k for k in sorted(set(a) | set(b)) if k not in a or k not in b or not same_value(a[k], b[k])
    ]


def _section(registry: Registry, section: str, default_kind: str | None):
    def validate(value: Any) -> SpecBase:
        if isinstance(value, dict):
            kind = value.get("kind", default_kind)
            if kind in registry:
                fields = registry.entry(kind).spec.model_fields
                legacy = _LEGACY_DEFAULTS.get(section, {})
                value = {
                    k: v
                    for k, v in value.items()
                    if k in fields or k not in legacy or not same_value(v, legacy[k])
                }
            if default_kind is not None:
                value = {"kind": default_kind, **value}
        return registry.validate(value)

    return Annotated[SerializeAsAny[SpecBase], BeforeValidator(validate)]


MixingSection = _section(MIXINGS, "mixing", "invertible_mlp")
ModelSection = _section(MODELS, "model", "mlp")
ObjectiveSection = _section(OBJECTIVES, "objective", "infonce")
DataSection = _section(DATASETS, "data", None)
MetricItem = _section(METRICS, "metrics", None)


def label(spec: SpecBase) -> str:
    """A spec's short label as in the papers' tables (its ``label()``, else its kind)."""
    fn = getattr(spec, "label", None)
    return fn() if callable(fn) else spec.kind


class TrainSpec(_Strict):
    """Optimisation budget. ``lr_schedule``: constant | cosine (to lr·final_lr_factor) after
    warm-up. A checkpoint is written every ``checkpoint_every`` steps, every
    ``checkpoint_seconds`` of training and at the end. ``threads``: torch CPU threads of the run —
    explicit, so that a run's numbers depend on nothing but its setting (not on ``--workers`` or
    the host's core count)."""

    steps: int = Field(default=2000, ge=0, le=1_000_000_000)
    batch_size: int = Field(default=1024, ge=2, le=16_777_216)
    lr: float = Field(default=1e-4, gt=0, le=10, allow_inf_nan=False)
    lr_schedule: Literal["constant", "cosine"] = "constant"
    warmup_steps: int = Field(default=0, ge=0, le=1_000_000_000)
    final_lr_factor: float = Field(default=0.01, ge=0, le=1)
    grad_clip: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="scale the gradients down to this total 2-norm before each step (the norm "
        "summed in float64, so huge finite gradients are clipped, not zeroed); none: no clipping",
    )
    weight_decay: float = Field(
        default=0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="decoupled weight decay (AdamW: every step shrinks each trainable weight by "
        "lr·weight_decay of itself); 0 = plain Adam, the papers' optimiser",
    )
    eval_every: int = Field(default=500, ge=1)
    eval_samples: int = Field(default=4096, ge=16, le=10_000_000)
    checkpoint_every: int = Field(default=1000, ge=1)
    checkpoint_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    threads: int = Field(default=1, ge=1, le=1024)
    keep_checkpoint: Literal["last", "best", "none"] = Field(
        default="last",
        description="what checkpoint.pt holds after the run: the last state (resumable), the "
        "weights of the best evaluation by the first metric, or nothing (deleted)",
    )
    precision: Literal["fp32", "bf16"] = Field(
        default="fp32",
        description="bf16: the model's forward runs under bfloat16 autocast (CPU or GPU; an "
        "encoder's output layer and head, and an MLP encoder's first layer, stay in float32); "
        "the loss, its gradient's finiteness check and every metric stay in float32",
    )
    fp32_tail: float = Field(
        default=0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="with precision bf16: the share of the run's last steps trained in float32 "
        "(0.1: the last 10 %, where a cosine schedule's small steps refine what bf16 rounding "
        "blurs); a function of the step and the run's length only, so a resumed run switches "
        "at the same step; 0 = bf16 throughout",
    )
    cpu_gemm: Literal["auto", "onednn", "blas"] = Field(
        default="auto",
        description="the library of the models' float32 linear layers on CPU: oneDNN or "
        "PyTorch's BLAS; auto keeps the BLAS where it is MKL on an Intel CPU and takes oneDNN "
        "elsewhere; same results to float32 rounding (unmix.models.linear)",
    )
    heap_pad_mb: int = Field(
        default=0,
        ge=0,
        le=1024,
        strict=True,
        description="glibc only: MiB of freed memory the C heap keeps for the next step instead "
        "of returning it to the kernel (mallopt M_TOP_PAD; process-wide, stays set); no effect "
        "on results. 64 made a small-batch step (quick budget, B = 1024) ≈ 7 % faster on a 2-core "
        "VM but the paper's batch 25-35 % slower (glibc then stops raising its mmap threshold, "
        "so large activations are mapped afresh every step): 0, the default, leaves the C "
        "library's own behaviour (unmix.devices.set_heap_pad, docs/performance.md)",
    )
    loss_kernels: Literal["auto", "compiled", "eager"] = Field(
        default="auto",
        description="the general-p contrastive losses' block kernels: compiled by torch.compile "
        "(auto: on CPU where a C++ compiler is found and a block scores >= 512 candidates) or "
        "eager; same results to float32 rounding (unmix.objectives._compiled)",
    )

    @model_validator(mode="after")
    def _check_tail(self) -> TrainSpec:
        if self.fp32_tail > 0 and self.precision != "bf16":
            raise ValueError(
                f"fp32_tail {self.fp32_tail} switches a bf16 run to float32 for its last steps, "
                "but precision is fp32: set train.precision=bf16 or remove train.fp32_tail"
            )
        return self

    def bf16_steps(self) -> int:
        """The steps ``[0, bf16_steps())`` that run under bf16 autocast (0 for fp32)."""
        if self.precision != "bf16":
            return 0
        return self.steps - round(self.fp32_tail * self.steps)


class Seeds(_Strict):
    """``data`` seeds the mixing and the evaluation data; ``train`` the initialisation and
    batches. Every random stream is derived from one of them by name (:mod:`unmix.seeds`)."""

    data: int = Field(default=0, ge=0, le=MAX_SEED, strict=True)
    train: int = Field(default=0, ge=0, le=MAX_SEED, strict=True)


_SECTION_ORDER = ("name", "latent", "mixing", "model", "objective", "train", "seeds", "data")


class Setting(_Strict):
    """One experiment: latent process, mixing, model, objective, training budget, metrics and
    seeds (and optionally a finite data set)."""

    name: str = Field(default="custom", min_length=1, max_length=200)
    latent: LatentSpec
    mixing: MixingSection = InvertibleMLPSpec()
    model: ModelSection = MLPModelSpec()
    objective: ObjectiveSection = InfoNCESpec()
    train: TrainSpec = TrainSpec()
    seeds: Seeds = Seeds()
    data: DataSection | None = None
    metrics: tuple[MetricItem, ...] | None = None

    @field_serializer("metrics")
    def _dump_metrics(self, metrics):
        if metrics is None:
            return None
        out = []
        for m in metrics:
            fields = m.model_dump(mode="json", exclude_defaults=True, exclude={"kind"})
            out.append({"kind": m.kind, **fields} if fields else m.kind)
        return out

    @property
    def out_dim(self) -> int:
        """Dimensions of the representation ẑ: ``model.out_dim`` where the model kind has it and
        it is set, else ``latent.dim``."""
        return getattr(self.model, "out_dim", None) or self.latent.dim

    @property
    def observes_images(self) -> bool:
        """True when x is an image: a renderer mixing or a data set."""
        return self.is_renderer or self.data is not None

    @property
    def is_renderer(self) -> bool:
        """True when the mixing is an image renderer (a kind registered with ``renderer_dim``)."""
        return "renderer_dim" in MIXINGS.entry(self.mixing.kind).meta

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics a run reports: ``metrics`` if given, else the defaults for its model —
        ``r2``, ``r2_in_sample``, ``mcc`` (plus ``factors`` for images, ``vae`` for a VAE)."""
        return tuple(m.kind for m in self.metric_specs)

    @property
    def metric_specs(self) -> tuple[SpecBase, ...]:
        if self.metrics is not None:
            return self.metrics
        names = ["r2", "r2_in_sample", "mcc"]
        if self.observes_images:
            names.append("factors")
        if self.model.kind == "vae":
            names.append("vae")
        return tuple(METRICS.validate(n) for n in names)

    def _check_images(self) -> None:
        lat, mix, mod, data = self.latent, self.mixing, self.model, self.data
        backbone = getattr(mod, "backbone", "mlp")
        if self.is_renderer:
            want = MIXINGS.entry(mix.kind).meta["renderer_dim"]
            if lat.space != "box" or lat.low != 0.0 or lat.high != 1.0 or lat.dim != want:
                raise ValueError(
                    f"the '{mix.kind}' renderer takes latents in the unit box [0, 1]^{want}: set "
                    f"latent.space: box, low: 0, high: 1, dim: {want} (got {lat.space}, "
                    f"dim {lat.dim}, [{lat.low:g}, {lat.high:g}])"
                )
            if getattr(mix, "center", False):
                raise ValueError(f"center does not apply to the '{mix.kind}' renderer: remove it")
        if data is not None:
            if DATASETS.entry(data.kind).meta.get("rendered") and not self.is_renderer:
                raise ValueError(
                    f"data.kind: {data.kind} needs a renderer: set mixing.kind to sprites or "
                    "scenes3d"
                )
            if mod.kind == "vae":
                raise ValueError("a VAE trains on fresh renders: remove the data section")
            if data.positives == "nearest_latent" and lat.conditional is None:
                raise ValueError(
                    "data.positives: nearest_latent needs latent.conditional (z̃′ ~ p(·|z))"
                )
        if self.observes_images and mod.kind in ("mlp", "vae") and backbone == "mlp":
            raise ValueError(
                "observations are images: set model.backbone to conv or resnet18 "
                "(and model.hidden to e.g. [10])"
            )
        if not self.observes_images and backbone != "mlp":
            raise ValueError(
                f"model.backbone {backbone} needs image observations (a renderer mixing or "
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
            and not MIXINGS.entry(self.mixing.kind).meta.get("invertible")
        ):
            raise ValueError(
                f"model.vae.decoder: ground_truth needs a mixing with an exact inverse and "
                f"Jacobian, one of {sorted(INVERTIBLE_SQUARE)}; got mixing.kind "
                f"{self.mixing.kind}"
            )
        if self.out_dim < self.latent.dim:
            raise ValueError(
                f"model.out_dim {self.out_dim} is below latent.dim {self.latent.dim}: the metrics "
                "match every latent to its own dimension of ẑ, so set out_dim ≥ latent.dim (or "
                "remove it)"
            )
        if self.out_dim != self.latent.dim and self.objective.kind == "supervised":
            raise ValueError(
                f"objective 'supervised' regresses ẑ onto the {self.latent.dim} latents: remove "
                f"model.out_dim (got {self.out_dim})"
            )
        augment = self.data is not None and self.data.positives in ("augment", "next_frame")
        # registered with needs_pairs=False: trains on anchors alone (supervised, the ELBO)
        needs_pairs = OBJECTIVES.entry(self.objective.kind).meta.get("needs_pairs", True)
        if self.latent.conditional is None and needs_pairs and not augment:
            raise ValueError(
                f"objective '{self.objective.kind}' needs positive pairs: give the latent a "
                "conditional, e.g. latent.conditional: {kind: normal, scale: 0.05}"
            )
        space = getattr(self.model, "space", None)
        if self.objective.kind == "infonce" and space not in (None, "sphere"):
            raise ValueError(
                f"objective 'infonce' needs model.space: sphere (got {space}); use lp_infonce "
                "for box/unbounded models"
            )
        if space is not None and not self._fixed_scale(space):
            got = "sphere with learn_radius" if space == "sphere" else space
            fix = (
                "set model.learn_radius: false"
                if space == "sphere"
                else "set model.learn_magnitude: false"
                if space in ("box", "box_sigmoid")
                else "use model.space: sphere or a box head with model.learn_magnitude: false"
            )
            obj = self.objective
            if obj.kind == "align_uniform" and obj.align_weight == 0:
                raise ValueError(
                    f"objective 'align_uniform' with align_weight 0 needs features of fixed "
                    f"scale, got {got}: its uniformity term alone falls without bound as the "
                    f"features grow apart: {fix}, or set align_weight > 0 (the alignment term "
                    "then holds the scale)"
                )
            if getattr(obj, "align_warmup", 0) and obj.align_start < 1:
                raise ValueError(
                    f"objective.align_start < 1 (the alignment warm-up) needs features of fixed "
                    f"scale, a sphere of fixed radius or a box head of fixed magnitude, got {got}: "
                    "with a free scale the loss lse − w·s_pos falls without bound as the "
                    f"features grow apart: {fix}, or remove objective.align_warmup and align_start"
                )
            if getattr(obj, "estimator", None) == "decoupled":
                raise ValueError(
                    f"objective.estimator: decoupled needs features of fixed scale, got {got}: "
                    "without the positive in the denominator the loss falls without bound as the "
                    f"features grow apart: {fix}, or use estimator: infonce"
                )
        return self

    def _fixed_scale(self, space: str) -> bool:
        """Whether the model's features have a fixed scale: a sphere of fixed radius or a box head
        of fixed magnitude (an unbounded model, a learned radius or magnitude: a free scale)."""
        if space == "sphere":
            return not getattr(self.model, "learn_radius", False)
        if space in ("box", "box_sigmoid"):
            return not getattr(self.model, "learn_magnitude", True)
        return False

    # --- serialisation -------------------------------------------------------------------------
    def __reduce__(self):
        # pickled as its validated dict (the sections' spec classes may be built at run time from
        # a factory's signature): unpickling validates again, in a process whose registries know
        # the kinds (a sweep's workers load the parent's plugins first, see unmix.sweep.Job)
        return (Setting.from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        for section in ("mixing", "model", "objective", "data"):
            if isinstance(data.get(section), dict):  # kind first, then the kind's fields
                data[section] = {"kind": data[section]["kind"], **data[section]}
        for part in ("marginal", "conditional"):  # a distribution's fields of its kind only
            dist = data["latent"].get(part)
            if isinstance(dist, dict):
                data["latent"][part] = {k: v for k, v in dist.items() if v is not None}
        if data.get("metrics") is None:
            data.pop("metrics", None)
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Setting:
        if not isinstance(data, dict):
            raise ConfigError(
                f"a setting must be a mapping (latent:, mixing:, model: ...), got "
                f"{type(data).__name__}"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ConfigError(format_validation_error(err)) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Setting:
        from unmix.safeio import load_yaml

        path = Path(path)
        data = load_yaml(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a mapping (latent:, mixing:, model: ...).")
        return cls.from_dict(data)

    def replace(self, **updates: Any) -> Setting:
        """A copy with dotted-path updates, e.g. ``replace(**{"train.steps": 10})``; validated
        (a field that does not exist for the section's kind is reported as unknown)."""
        return Setting.from_dict(apply_updates(self.to_dict(), updates))


def apply_updates(data: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a setting as a dict) with dotted-path updates applied; a section that is absent
    (e.g. ``data``) is created. Setting a section's ``kind`` to another kind keeps only the
    fields given with it."""
    import copy

    data = copy.deepcopy(data)
    for dotted, value in updates.items():
        node = data
        *parents, leaf = str(dotted).split(".")
        for key in parents:
            if node.get(key) is None:
                node[key] = {}
            if not isinstance(node[key], dict):
                raise ConfigError(f"Unknown setting field '{dotted}': '{key}' is not a section.")
            node = node[key]
        if leaf == "kind" and isinstance(node, dict) and node.get("kind") not in (None, value):
            node.clear()
        node[leaf] = value
    return data


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
        for part in msg.split("; ") if e["type"] == "value_error" else [msg]:
            # a stage's own error names its field first ("p: ..."): join it onto the section
            field, sep, rest = part.partition(": ")
            if sep and loc and field.replace("_", "").replace(".", "").isalnum():
                lines.append(f"{loc}.{field}: {rest}")
            else:
                lines.append(f"{loc or 'setting'}: {part}")
    return "Invalid setting:\n  " + "\n  ".join(lines)
