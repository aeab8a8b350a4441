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
    """

    kind: Literal["uniform", "vmf", "normal", "laplace", "gennorm"]
    kappa: float | None = Field(default=None, description="vMF concentration κ > 0")
    scale: float | None = Field(default=None, description="σ (normal) or λ (laplace, gennorm) > 0")
    beta: float | None = Field(default=None, description="generalised-normal shape β > 0")

    @model_validator(mode="after")
    def _check(self) -> DistributionSpec:
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

    def label(self) -> str:
        """Short human label as in the paper's tables, e.g. ``vMF(κ=1)``."""
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
    """The latent process: space, dimension, marginal p(z) and conditional p(z̃ | z)."""

    space: SpaceName
    dim: int = Field(ge=1)
    radius: float = Field(default=1.0, gt=0)
    low: float = 0.0
    high: float = 1.0
    marginal: DistributionSpec = DistributionSpec(kind="uniform")
    conditional: DistributionSpec

    @model_validator(mode="after")
    def _check(self) -> LatentSpec:
        if self.space == "sphere" and self.dim < 2:
            raise ValueError(f"a sphere needs dim >= 2 (ambient dimension), got dim={self.dim}")
        if self.space == "box" and not self.low < self.high:
            raise ValueError(f"box needs low < high, got low={self.low}, high={self.high}")
        if self.conditional.kind == "uniform":
            raise ValueError(
                "conditional cannot be 'uniform' (positive pairs must depend on z): "
                "use vmf, normal, laplace or gennorm"
            )
        if self.conditional.kind == "vmf" and self.space != "sphere":
            raise ValueError(
                f"a vMF conditional lives on the sphere, not on a {self.space}: "
                "use normal, laplace or gennorm, or set space: sphere"
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


class MixingSpec(_Strict):
    """The mixing g: z → x. ``invertible_mlp`` is paper 000's (Sec. 4.1, Appx A.3)."""

    kind: Literal["invertible_mlp", "identity"] = "invertible_mlp"
    n_layers: int = Field(default=3, ge=1)
    negative_slope: float = Field(default=0.2, gt=0, le=1)
    cond_pool_size: int = Field(default=25_000, ge=1)
    cond_quantile: float = Field(default=0.0, ge=0, le=1)


class ModelSpec(_Strict):
    """The encoder f: x → ẑ. ``hidden`` are multiples of the latent dim N (paper: 10,50,50,50,50,10).

    ``space`` is the model's latent space: ``sphere`` (L2 normalisation to ``radius``), ``box``
    (L∞ normalisation with a learnable magnitude, as the paper describes), ``box_sigmoid``
    (sigmoid(x)·b with learnable b, what the reference code did), ``unbounded`` (raw output).
    """

    kind: Literal["mlp", "identity"] = "mlp"
    space: ModelSpace = "sphere"
    hidden: tuple[int, ...] = (10, 50, 50, 50, 50, 10)
    negative_slope: float = Field(default=0.01, ge=0, le=1)
    radius: float = Field(default=1.0, gt=0)
    learn_radius: bool = False


class ObjectiveSpec(_Strict):
    """The loss. ``infonce``: dot-product InfoNCE / τ on the sphere (q_h = vMF(1/τ)).
    ``lp_infonce``: δ = ‖a − b‖_p^q (q defaults to p): p=1 Laplace, p=2 Normal, p=β GenNorm.
    ``supervised``: MSE to z (baseline). ``align_uniform``: Wang & Isola's two losses.
    """

    kind: Literal["infonce", "lp_infonce", "supervised", "align_uniform"] = "infonce"
    tau: float = Field(default=1.0, gt=0)
    p: float | None = Field(default=None, gt=0)
    q: float | None = Field(default=None, gt=0)
    negatives: Literal["in_batch", "external"] = "in_batch"
    n_negatives: int = Field(default=0, ge=0)
    symmetric: bool = False
    align_weight: float = Field(default=1.0, ge=0)
    uniform_weight: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> ObjectiveSpec:
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


class Seeds(_Strict):
    """``data`` seeds the mixing and the evaluation data; ``train`` the initialisation and batches."""

    data: int = Field(default=0, ge=0)
    train: int = Field(default=0, ge=0)


class Setting(_Strict):
    """One experiment: latent process, mixing, model, objective, training budget and seeds."""

    name: str = "custom"
    latent: LatentSpec
    mixing: MixingSpec = MixingSpec()
    model: ModelSpec = ModelSpec()
    objective: ObjectiveSpec = ObjectiveSpec()
    train: TrainSpec = TrainSpec()
    seeds: Seeds = Seeds()

    @model_validator(mode="after")
    def _check(self) -> Setting:
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
    if lat.marginal.kind != "uniform":
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
