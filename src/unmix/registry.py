"""Registries: one per stage of the data flow, open to a user's own module.

Each stage (mixings, objectives, models, data sets, metrics) keeps a :class:`Registry` of
*factories*. A factory is a plain function (or class) whose parameters follow one convention:

* **keyword-only** parameters (after ``*``) are the spec's fields — what a YAML setting may set
  under ``kind: name``. Their annotations and defaults become a pydantic model, so a setting is
  validated field by field before anything is built (:meth:`Registry.spec_model`);
* **positional** parameters are the *context* unmix supplies when it builds the object, taken by
  name from what the stage offers (a mixing may ask for ``dim``, ``seed``, ``latent``; a metric for
  ``z``, ``z_hat``, ``experiment`` …; see each stage's ``CONTEXT``).

A user's module registers a kind with the decorator and uses it from YAML by name::

    import unmix
    from torch import nn

    @unmix.register_mixing("rotation")
    def rotation(dim: int, seed: int, *, angle: float = 0.3) -> nn.Module:
        ...

    # setting.yaml:  mixing: {kind: rotation, angle: 0.5}

Built-in kinds register themselves the same way (next to their stage's code); there is no second
list and no fall-through: an unknown kind is an error that lists the known ones.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from unmix.errors import ConfigError


class SpecBase(BaseModel):
    """Base of every stage spec: strict (unknown fields are errors) and frozen (hashable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class Entry:
    """One registered kind: its factory, the pydantic model of its fields, and its context."""

    name: str
    factory: Callable[..., Any]
    spec: type[SpecBase]
    context: tuple[str, ...]
    keywords: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def build(self, spec: SpecBase | dict[str, Any] | None = None, **context: Any) -> Any:
        """Call the factory with the spec's fields as keywords and the context it asks for."""
        if spec is None or isinstance(spec, dict):
            spec = self.validate(spec or {})
        fields = {k: getattr(spec, k) for k in self.keywords if k in type(spec).model_fields}
        missing = [c for c in self.context if c not in context]
        if missing:
            raise ConfigError(
                f"'{self.name}' needs {', '.join(missing)} to be built, which this stage does not "
                f"supply (it offers: {', '.join(sorted(context)) or 'nothing'})"
            )
        return self.factory(*(context[c] for c in self.context), **fields)

    def validate(self, data: dict[str, Any]) -> SpecBase:
        from pydantic import ValidationError

        try:
            return self.spec.model_validate({"kind": self.name, **data})
        except ValidationError as err:
            raise ConfigError(_one_line_errors(err)) from None


class Registry:
    """Named factories of one stage. ``register(name)`` is a decorator; ``entry(name)`` looks one
    up (an unknown name raises :class:`ConfigError` naming the close matches)."""

    def __init__(self, stage: str, context: tuple[str, ...] = ()) -> None:
        self.stage = stage
        self.offered = context
        self._entries: dict[str, Entry] = {}

    def register(
        self, name: str, *, spec: type[SpecBase] | None = None, replace: bool = False, **meta: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register ``factory`` under ``name`` (``kind: name`` in a setting).

        ``spec``: an explicit pydantic model of the kind's fields (with a ``kind`` field); by
        default it is derived from the factory's keyword-only parameters. ``replace=True`` lets a
        name be registered again (otherwise a second registration is an error)."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a {self.stage} name must be a non-empty string, got {name!r}")

        def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._entries and not replace:
                raise ConfigError(
                    f"{self.stage} '{name}' is registered already "
                    f"(by {self._entries[name].factory.__module__}): pick another name or pass "
                    "replace=True"
                )
            context, keywords, model = _split_signature(self.stage, name, factory, spec)
            unknown = [c for c in context if self.offered and c not in self.offered]
            if unknown:
                raise ConfigError(
                    f"{self.stage} '{name}': positional parameter(s) {unknown} are not supplied "
                    f"by unmix (a {self.stage} may ask for {', '.join(self.offered)}); make the "
                    "spec's fields keyword-only (after '*')"
                )
            self._entries[name] = Entry(name, factory, model, context, keywords, dict(meta))
            return factory

        return decorate

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self._entries), n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"unknown {self.stage} kind '{name}'.{hint} Known: {', '.join(self.names())} "
                f"(register your own with unmix.register_{self.stage}('{name}'))"
            ) from None

    def build(self, spec: SpecBase, **context: Any) -> Any:
        return self.entry(spec.kind).build(spec, **context)

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def validate(self, data: Any, default_kind: str | None = None) -> SpecBase:
        """A spec of the right kind from a mapping ``{kind: name, **fields}`` (or a spec)."""
        if isinstance(data, SpecBase):
            if data.kind not in self._entries:
                self.entry(data.kind)
            return data
        if isinstance(data, str):
            data = {"kind": data}
        if not isinstance(data, dict):
            raise ConfigError(
                f"must be a mapping with a 'kind' (one of {', '.join(self.names())}), got "
                f"{type(data).__name__}"
            )
        data = dict(data)
        kind = data.pop("kind", default_kind)
        if kind is None:
            raise ConfigError(f"needs a 'kind': one of {', '.join(self.names())}")
        return self.entry(kind).validate(data)


def _split_signature(
    stage: str, name: str, factory: Callable[..., Any], spec: type[SpecBase] | None
) -> tuple[tuple[str, ...], tuple[str, ...], type[SpecBase]]:
    sig = inspect.signature(factory)
    context: list[str] = []
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.name == "self":
                continue
            context.append(p.name)
        elif p.kind == p.KEYWORD_ONLY:
            if p.name == "kind":
                raise ConfigError(
                    f"{stage} '{name}': 'kind' names the registered kind; call the field otherwise"
                )
            ann = p.annotation if p.annotation is not p.empty else Any
            if isinstance(ann, str):  # postponed annotations: resolve in the factory's module
                ann = _resolve_annotation(factory, ann)
            fields[p.name] = (ann, ... if p.default is p.empty else p.default)
        elif p.kind == p.VAR_KEYWORD:
            raise ConfigError(
                f"{stage} '{name}': **kwargs cannot be validated; list the fields as keyword-only "
                "parameters"
            )
    if spec is None:
        from typing import Literal

        spec = create_model(
            f"{_camel(name)}{_camel(stage)}Spec",
            __base__=SpecBase,
            kind=(Literal[name], name),  # type: ignore[valid-type]
            **fields,
        )
    return tuple(context), tuple(fields), spec


def _resolve_annotation(factory: Callable[..., Any], text: str) -> Any:
    import typing

    try:
        hints = typing.get_type_hints(factory, include_extras=True)
    except Exception:  # an annotation that names something unavailable: accept any value
        return Any
    for p in inspect.signature(factory).parameters.values():
        if p.annotation == text and p.name in hints:
            return hints[p.name]
    return Any


def _camel(text: str) -> str:
    return "".join(
        part.capitalize() for part in text.replace("+", "_").replace("-", "_").split("_")
    )


def _one_line_errors(err: Any) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling, or see `unmix settings --show NAME`)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        elif e["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(lines)


MIXINGS = Registry("mixing", context=("dim", "seed", "latent", "image_size"))
"""Mixings g: z → x. Context: ``dim`` (latent dimension), ``seed`` (the mixing's stream of the
data seed), ``latent`` (the latent spec)."""
OBJECTIVES = Registry("objective", context=())
"""Objectives: factories return a module called as ``objective(model, batch) -> loss``."""
MODELS = Registry("model", context=("in_dim", "out_dim", "seed", "image_shape", "mixing", "latent"))
"""Models (encoders or VAEs). Context: input/output dimensions, init seed, image shape, mixing."""
DATASETS = Registry("dataset", context=("setting", "process", "mixing"))
"""Finite data sets (``data: {kind: ...}``)."""
METRICS = Registry("metric", context=("z", "z_hat", "experiment", "z_torch"))
"""Metrics: ``metric(z, z_hat, ...) -> float | dict[str, float]`` (NumPy float64 arrays);
``z_torch`` is the evaluation latents as the run's torch tensor, ``experiment`` the built run."""


def register_mixing(name: str, **kw: Any):
    """Decorator: register a mixing factory ``f(dim, seed, *, fields...) -> nn.Module``."""
    return MIXINGS.register(name, **kw)


def register_objective(name: str, **kw: Any):
    """Decorator: register an objective factory ``f(*, fields...) -> Objective``."""
    return OBJECTIVES.register(name, **kw)


def register_model(name: str, **kw: Any):
    """Decorator: register a model factory ``f(in_dim, out_dim, seed, *, fields...)``."""
    return MODELS.register(name, **kw)


def register_dataset(name: str, **kw: Any):
    """Decorator: register a finite data set factory ``f(setting, process, mixing, *, fields...)``."""
    return DATASETS.register(name, **kw)


def register_metric(name: str, **kw: Any):
    """Decorator: register a metric ``f(z, z_hat, *, options...) -> float | dict[str, float]``.

    A float result is recorded under the metric's name; a dict under its own keys."""
    return METRICS.register(name, **kw)
