r"""scikit-learn estimators for one's own data: contrastive encoders and the near-deterministic VAE.

Both are ordinary scikit-learn transformers (``fit``, ``transform``, ``fit_transform``,
``get_params``/``set_params``, ``score``; usable in a :class:`~sklearn.pipeline.Pipeline`), built
from unmix's own pieces: the registered ``mlp`` / ``vae`` models (:mod:`unmix.models.builders`),
the registered objectives (:data:`unmix.registry.OBJECTIVES`, called as ``objective(model,
batch)`` on a :class:`~unmix.objectives.base.Batch`), Adam with the trainer's learning-rate schedule
(:func:`unmix.train.lr_factor`) and named seed streams (:mod:`unmix.seeds`: ``train/init`` for the
initialisation, ``train/batches`` for the minibatches).

:class:`ContrastiveEncoder` learns from **positive pairs**: two arrays ``fit(x, x_pos)`` of the same
shape (row i of ``x_pos`` is the positive of row i of ``x``), or one time series ``fit(x,
offset=k)`` whose pairs are ``(x[t], x[t + k])``. ``conditional`` names the conditional
p(z̃ | z) one assumes the pairs follow and chooses the loss of Zimmermann et al. (2021): ``vmf`` →
``infonce`` (features on the sphere), ``normal`` → ``lp_infonce`` with p = 2, ``laplace`` →
``lp_infonce`` with p = 1.

:class:`VAEEncoder` fits paper 004's Gaussian VAE with a large decoder precision γ² (the
near-deterministic regime) by the ELBO; it needs no pairs. ``transform`` returns posterior means.

**scikit-learn's second argument.** scikit-learn calls ``fit(X, y)`` with a *target* ``y``; these
estimators are unsupervised, so ``fit``'s second positional argument is the positives array:
``fit(X, y)`` with a 2-d ``y`` of ``X``'s shape uses ``(X, y)`` as pairs (``x_pos=`` is the same
argument by keyword). A 1-d ``y`` (a target, as a Pipeline or scikit-learn's checks pass it) or
``None`` means *no pairs given*: ``X`` is then read as a sequence with ``offset`` (default 1). A
2-d ``y`` of another shape is an error. :class:`VAEEncoder` ignores ``y``.

**score.** ``score(X, y)`` follows scikit-learn's ``score(X, y)`` with ``y`` the true latents z
(for synthetic checks): the MCC of ``transform(X)`` against ``y``. ``score(X)`` without latents
is the negative training loss on ``X`` (higher is better): for the contrastive encoder on the
sequence pairs of ``X`` with the offset of the fit (1 if it was fitted on explicit pairs), averaged
over consecutive batches of ``batch_size`` pairs; for the VAE the negative ELBO loss per batch.

Inputs are standardised per dimension with the mean and standard deviation of the fit data
(``mean_``, ``scale_``); the fitted network is ``model_``. :meth:`save` and :func:`load_estimator`
write and read a fitted estimator as a directory: ``encoder.pt`` (tensors only, loadable with
``torch.load(weights_only=True)``) and ``params.json``.

Example (a Laplace random walk mixed by an invertible MLP; ``docs/estimators.md``)::

    enc = ContrastiveEncoder(space="unbounded", conditional="laplace").fit(x, offset=1)
    z_hat = enc.transform(x)
    enc.score(x, z)  # MCC against the true latents
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

import unmix.objectives  # noqa: F401  (registers the objectives)
from unmix import seeds as sd
from unmix.errors import CheckpointError, ConfigError
from unmix.models.builders import build_model
from unmix.objectives.base import Batch
from unmix.registry import MODELS, OBJECTIVES

__all__ = ["ContrastiveEncoder", "VAEEncoder", "load_estimator", "LOSSES"]

LOSSES: dict[str, dict[str, Any]] = {
    "vmf": {"kind": "infonce"},
    "normal": {"kind": "lp_infonce", "p": 2.0},
    "laplace": {"kind": "lp_infonce", "p": 1.0},
}
"""The objective each ``conditional`` of :class:`ContrastiveEncoder` trains with."""

SPACES = ("sphere", "box", "unbounded")
ENCODER_FILE, PARAMS_FILE = "encoder.pt", "params.json"
_CHUNK = 8192


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ConfigError(f"{name} must be a number > 0, got {value!r}")
    if not (math.isfinite(float(value)) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _hidden(value: Any) -> tuple[int, ...]:
    try:
        widths = tuple(value)
    except TypeError:
        raise ConfigError(f"hidden must be a sequence of integers >= 1, got {value!r}") from None
    for w in widths:
        _positive_int("each hidden width", w)
    return tuple(int(w) for w in widths)


class _TorchEncoder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared machinery: validation, standardisation, the Adam loop, encoding, save/load.

    ``get_feature_names_out()`` names the features ``contrastiveencoder0``, … (so
    ``set_output(transform="pandas")`` works)."""

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    # ----------------------------------------------------------------------- to be provided
    def _check_params(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, n_features: int) -> tuple[torch.nn.Module, torch.nn.Module]:
        raise NotImplementedError  # pragma: no cover

    def _batch(self, data: Any, g: torch.Generator) -> Batch:
        raise NotImplementedError  # pragma: no cover

    def _encode(self, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return model(x)

    # ---------------------------------------------------------------------------- shared
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False  # the same seed gives the same fit
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def _device(self) -> torch.device:
        device = str(self.device)
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"device '{device}' requested but CUDA is not available: use 'cpu'")
        if device != "cpu" and not device.startswith("cuda"):
            raise ConfigError(f"device must be cpu, cuda or cuda:N, got {device!r}")
        return torch.device(device)

    def _standardise_fit(self, x: np.ndarray) -> None:
        self.mean_ = x.mean(axis=0)
        std = x.std(axis=0)
        self.scale_ = np.where(std > 1e-12, std, 1.0)

    def _tensor(self, x: np.ndarray, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        z = (np.asarray(x, dtype=np.float64) - self.mean_) / self.scale_
        return torch.as_tensor(z, dtype=dtype, device=self._device())

    def _train(self, data: Any, n_features: int) -> None:
        from unmix.settings import TrainSpec
        from unmix.train import lr_factor, make_optimizer

        device = self._device()
        model, objective = self._build(n_features)
        model, objective = model.to(device), objective.to(device)
        spec = TrainSpec(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            lr_schedule=self.lr_schedule,
            warmup_steps=self.warmup_steps,
        )
        params = [p for p in model.parameters() if p.requires_grad]
        opt = make_optimizer(params, spec)  # plain Adam (the estimator sets no weight decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(spec))
        g = sd.torch_generator(self.seed, "train/batches", device)
        losses = []
        model.train()
        for step in range(spec.steps):
            if hasattr(objective, "set_progress"):  # an objective's own schedule
                objective.set_progress(step, spec.steps)
            loss = objective(model, self._batch(data, g))
            if not torch.isfinite(loss):
                raise ConfigError(
                    f"the loss became {loss.item()} at step {step}: try a smaller lr (now "
                    f"{self.lr:g}) or another tau"
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if hasattr(model, "advance"):  # a model's own schedule (the VAE's γ² warm-up)
                model.advance()
            losses.append(loss.item())
        # inference in float64: the features then do not depend on how rows are batched
        self.model_ = model.double().eval()
        self.objective_ = objective.double()
        self.loss_curve_ = losses
        self.n_iter_ = spec.steps

    def transform(self, X) -> np.ndarray:
        """The learned features of ``X`` ``(n_samples, n_features_in_)``: ``(n_samples,
        n_components_)`` float64 (for the VAE the posterior means)."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        with _threads(self.threads), torch.no_grad():
            xt = self._tensor(X)
            out = [self._encode(self.model_, c) for c in xt.split(_CHUNK)]
            if not out:
                return np.zeros((0, self.n_components_))
            return torch.cat(out).double().cpu().numpy()

    def _mcc(self, X, y) -> float:
        from unmix.metrics import mcc

        z = np.asarray(y, dtype=np.float64)
        if z.ndim == 1:
            z = z[:, None]
        return float(mcc(z, self.transform(X)).mcc)

    # ------------------------------------------------------------------------- save / load
    def _state(self) -> dict[str, torch.Tensor]:
        state = {f"model.{k}": v.detach().cpu() for k, v in self.model_.state_dict().items()}
        state["mean"] = torch.as_tensor(self.mean_, dtype=torch.float64)
        state["scale"] = torch.as_tensor(self.scale_, dtype=torch.float64)
        return state

    def _fitted_info(self) -> dict[str, Any]:
        return {"n_features_in": int(self.n_features_in_), "n_components": self.n_components_}

    def save(self, directory: str | Path) -> Path:
        """Write the fitted estimator to ``directory``: ``encoder.pt`` (a dict of tensors, for
        ``torch.load(weights_only=True)``) and ``params.json`` (class, parameters, fitted
        sizes). :func:`load_estimator` reads it back."""
        from unmix import runs

        check_is_fitted(self, "model_")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        torch.save(self._state(), buf)
        runs.atomic_write_bytes(directory / ENCODER_FILE, buf.getvalue())
        params = self.get_params()
        params["hidden"] = list(params["hidden"])
        runs.write_json(
            directory / PARAMS_FILE,
            {"estimator": type(self).__name__, "params": params, "fitted": self._fitted_info()},
        )
        return directory

    def _restore(self, state: dict[str, torch.Tensor], fitted: dict[str, Any]) -> None:
        n = int(fitted["n_features_in"])
        self.n_features_in_ = n
        self.n_components_ = int(fitted["n_components"])
        for k, v in fitted.items():
            if k not in ("n_features_in", "n_components"):
                setattr(self, f"{k}_", v)
        self.mean_ = state["mean"].numpy()
        self.scale_ = state["scale"].numpy()
        model, objective = self._build(n)
        model.load_state_dict(
            {k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")}
        )
        model.to(self._device()).double().eval()
        self.model_, self.objective_ = model, objective.to(self._device()).double()


class ContrastiveEncoder(_TorchEncoder):
    """A contrastive encoder f: x → ẑ trained on positive pairs (module docstring).

    Parameters
    ----------
    space:
        The features' space: ``sphere`` (L2-normalised), ``box`` (L∞-normalised with a learned
        per-dimension magnitude) or ``unbounded``.
    conditional:
        The conditional the pairs are assumed to follow, which chooses the loss: ``vmf`` (InfoNCE
        with dot products; needs ``space="sphere"``), ``normal`` (‖·‖₂² InfoNCE) or ``laplace``
        (‖·‖₁ InfoNCE).
    tau:
        The loss's temperature τ > 0.
    hidden:
        Hidden widths of the MLP as multiples of the input dimension (as
        :class:`unmix.models.encoders.MLPEncoder`; equal to the output dimension when
        ``n_components`` is left at its default).
    n_components:
        The features' dimension (default: the input dimension).
    steps, batch_size, lr, lr_schedule, warmup_steps:
        Adam steps, pairs per step (at most the number of pairs), learning rate and its schedule
        (``constant`` or ``cosine``, after ``warmup_steps`` of linear warm-up;
        :func:`unmix.train.lr_factor`).
    seed:
        The training seed: initialisation (stream ``train/init``) and batches (``train/batches``).
    device, threads:
        Torch device and CPU threads used by ``fit``/``transform``.

    Attributes
    ----------
    model_ : the trained :class:`~unmix.models.encoders.MLPEncoder` (eval mode).
    mean_, scale_ : the per-dimension standardisation of the inputs.
    offset_ : the time offset of the pairs (``None`` when fitted on explicit pairs).
    n_features_in_, n_components_, loss_curve_, n_iter_.
    """

    def __init__(
        self,
        space: str = "sphere",
        conditional: str = "vmf",
        tau: float = 1.0,
        hidden: tuple[int, ...] = (20, 20, 20),
        n_components: int | None = None,
        steps: int = 1000,
        batch_size: int = 512,
        lr: float = 1e-3,
        lr_schedule: str = "constant",
        warmup_steps: int = 0,
        seed: int = 0,
        device: str = "cpu",
        threads: int = 1,
    ) -> None:
        self.space = space
        self.conditional = conditional
        self.tau = tau
        self.hidden = hidden
        self.n_components = n_components
        self.steps = steps
        self.batch_size = batch_size
        self.lr = lr
        self.lr_schedule = lr_schedule
        self.warmup_steps = warmup_steps
        self.seed = seed
        self.device = device
        self.threads = threads

    def _check_params(self) -> None:
        if self.space not in SPACES:
            raise ConfigError(f"space must be one of {', '.join(SPACES)}, got {self.space!r}")
        if self.conditional not in LOSSES:
            raise ConfigError(
                f"conditional must be one of {', '.join(LOSSES)}, got {self.conditional!r}"
            )
        if self.conditional == "vmf" and self.space != "sphere":
            raise ConfigError(
                f"conditional 'vmf' (InfoNCE with dot products) needs space='sphere', got "
                f"{self.space!r}: use conditional='normal' or 'laplace' for a box or R^n"
            )
        _positive_float("tau", self.tau)
        _hidden(self.hidden)
        if self.n_components is not None:
            _positive_int("n_components", self.n_components)
        _positive_int("steps", self.steps, 0)
        _positive_int("batch_size", self.batch_size, 2)
        _positive_float("lr", self.lr)
        if self.lr_schedule not in ("constant", "cosine"):
            raise ConfigError(f"lr_schedule must be constant or cosine, got {self.lr_schedule!r}")
        _positive_int("warmup_steps", self.warmup_steps, 0)
        sd.check_seed(self.seed, "seed")
        _positive_int("threads", self.threads)

    def _objective_spec(self) -> dict[str, Any]:
        return {**LOSSES[self.conditional], "tau": float(self.tau)}

    def _build(self, n_features: int):
        out_dim = int(self.n_components or n_features)
        spec = MODELS.validate({"kind": "mlp", "space": self.space, "hidden": _hidden(self.hidden)})
        model = build_model(
            spec,
            sd.stream_seed(self.seed, "train/init"),
            in_dim=n_features,
            out_dim=out_dim,
            image_shape=None,
            mixing=None,
            latent=None,
        )
        objective = OBJECTIVES.build(OBJECTIVES.validate(self._objective_spec()))
        return model, objective

    # ------------------------------------------------------------------------------- pairs
    def _pairs(self, X, y, x_pos, offset):
        if x_pos is not None and y is not None:
            raise ConfigError("give the positives once: as fit's second argument or as x_pos=")
        pos = x_pos if x_pos is not None else y
        if pos is not None and np.asarray(pos).ndim < 2 and x_pos is None:
            pos = None  # a 1-d target (a Pipeline's or scikit-learn's y): no pairs given
        X = validate_data(self, X, reset=True, dtype=[np.float64, np.float32])
        n = X.shape[0]
        if pos is not None:
            if offset is not None:
                raise ConfigError("give either positives x_pos or a time offset, not both")
            from sklearn.utils import check_array

            pos = check_array(pos, dtype=[np.float64, np.float32])
            if pos.shape != X.shape:
                raise ConfigError(
                    f"the positives must have the shape of x, {X.shape}; got {pos.shape}"
                )
            if n < 2:
                raise ConfigError(f"n_samples={n}: contrastive learning needs at least 2 pairs")
            return X, X, pos, None
        k = 1 if offset is None else _positive_int("offset", offset)
        if n - k < 2:
            raise ConfigError(
                f"n_samples={n} with offset {k} gives {max(n - k, 0)} pairs (x[t], x[t+{k}]); "
                "contrastive learning needs at least 2"
            )
        return X, X[:-k], X[k:], k

    def fit(self, X, y=None, *, x_pos=None, offset: int | None = None) -> ContrastiveEncoder:
        """Fit on positive pairs.

        ``fit(x, x_pos)``: row i of ``x_pos`` (same shape as ``x``) is the positive of row i of
        ``x``. ``fit(x, offset=k)`` (or ``fit(x)``, k = 1): ``x`` is a sequence ``(T, n)`` and the
        pairs are ``(x[t], x[t+k])``. A 1-d second argument (a scikit-learn target) is ignored:
        then ``x`` is a sequence as without it. Returns ``self``."""
        self._check_params()
        X, a, b, k = self._pairs(X, y, x_pos, offset)
        self.offset_ = k
        self._standardise_fit(np.concatenate([a, b]) if k is None else X)
        self.n_components_ = int(self.n_components or self.n_features_in_)
        with _threads(self.threads):
            xa, xb = self._tensor(a, torch.float32), self._tensor(b, torch.float32)
            self._train((xa, xb), self.n_features_in_)
        return self

    def _batch(self, data, g: torch.Generator) -> Batch:
        xa, xb = data
        n = xa.shape[0]
        idx = torch.randperm(n, generator=g, device=g.device)[: min(self.batch_size, n)]
        return Batch(x=xa[idx], x_pos=xb[idx], generator=g)

    def fit_transform(self, X, y=None, *, x_pos=None, offset: int | None = None) -> np.ndarray:
        """``fit(X, y, x_pos=..., offset=...)``, then the features of ``X``."""
        return self.fit(X, y, x_pos=x_pos, offset=offset).transform(X)

    def score(self, X, y=None) -> float:
        """With latents ``y`` ``(n_samples, d)``: the MCC of ``transform(X)`` against them (higher
        is better; ``d <= n_components_``). Without: the negative loss on the sequence pairs of
        ``X`` at the fit's offset (1 if fitted on explicit pairs), mean over batches."""
        check_is_fitted(self, "model_")
        if y is not None:
            return self._mcc(X, y)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        k = self.offset_ or 1
        if X.shape[0] - k < 2:
            raise ConfigError(f"score needs at least {k + 2} samples at offset {k}")
        with _threads(self.threads), torch.no_grad():
            xt = self._tensor(X)
            a, b = xt[:-k], xt[k:]
            losses, sizes = [], []
            for i in range(0, a.shape[0], self.batch_size):
                ca, cb = a[i : i + self.batch_size], b[i : i + self.batch_size]
                if ca.shape[0] < 2:
                    continue
                losses.append(self.objective_(self.model_, Batch(x=ca, x_pos=cb)).item())
                sizes.append(ca.shape[0])
        return -float(np.average(losses, weights=sizes))

    def _fitted_info(self) -> dict[str, Any]:
        return {**super()._fitted_info(), "offset": self.offset_}


class VAEEncoder(_TorchEncoder):
    """Paper 004's Gaussian VAE as a transformer: ``transform`` gives posterior means E_q[z | x].

    Parameters
    ----------
    latent_dim:
        The latent dimension d (default: the input dimension).
    prior:
        ``gaussian``, ``uniform`` (on (0, 1)^d) or ``beta`` (with ``prior_alpha``, ``prior_beta``).
    learn_prior:
        Train one Beta shape pair per latent, starting at (``prior_alpha``, ``prior_beta``)
        (``prior="beta"`` only).
    gamma2:
        The decoder precision γ² (the likelihood's variance is 1/γ²): large values make the VAE
        near-deterministic, the regime of paper 004.
    hidden:
        Hidden widths of encoder and decoder, as multiples of ``latent_dim``.
    kl_weight, mc_samples:
        The ELBO's β and reparameterised draws per observation (registered objective ``elbo``).
    steps, batch_size, lr, lr_schedule, warmup_steps, seed, device, threads:
        As for :class:`ContrastiveEncoder`.

    ``fit(X, y=None)`` ignores ``y``; ``score(X, y)`` is the MCC against latents ``y``,
    ``score(X)`` the negative ELBO loss (mean over batches).
    """

    def __init__(
        self,
        latent_dim: int | None = None,
        prior: str = "gaussian",
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
        learn_prior: bool = False,
        gamma2: float = 1e3,
        hidden: tuple[int, ...] = (20, 20, 20),
        kl_weight: float = 1.0,
        mc_samples: int = 1,
        steps: int = 1000,
        batch_size: int = 512,
        lr: float = 1e-3,
        lr_schedule: str = "constant",
        warmup_steps: int = 0,
        seed: int = 0,
        device: str = "cpu",
        threads: int = 1,
    ) -> None:
        self.latent_dim = latent_dim
        self.prior = prior
        self.prior_alpha = prior_alpha
        self.prior_beta = prior_beta
        self.learn_prior = learn_prior
        self.gamma2 = gamma2
        self.hidden = hidden
        self.kl_weight = kl_weight
        self.mc_samples = mc_samples
        self.steps = steps
        self.batch_size = batch_size
        self.lr = lr
        self.lr_schedule = lr_schedule
        self.warmup_steps = warmup_steps
        self.seed = seed
        self.device = device
        self.threads = threads

    def _check_params(self) -> None:
        if self.latent_dim is not None:
            _positive_int("latent_dim", self.latent_dim)
        _hidden(self.hidden)
        _positive_int("steps", self.steps, 0)
        _positive_int("batch_size", self.batch_size, 2)
        _positive_float("lr", self.lr)
        if self.lr_schedule not in ("constant", "cosine"):
            raise ConfigError(f"lr_schedule must be constant or cosine, got {self.lr_schedule!r}")
        _positive_int("warmup_steps", self.warmup_steps, 0)
        sd.check_seed(self.seed, "seed")
        _positive_int("threads", self.threads)
        self._model_spec()
        self._objective()

    def _model_spec(self):
        vae: dict[str, Any] = {"prior": self.prior, "gamma2": self.gamma2}
        if self.prior == "beta":
            vae.update(prior_alpha=self.prior_alpha, prior_beta=self.prior_beta)
        if self.learn_prior:
            vae["learn_prior"] = self.learn_prior
        return MODELS.validate({"kind": "vae", "hidden": _hidden(self.hidden), "vae": vae})

    def _objective(self):
        return OBJECTIVES.build(
            OBJECTIVES.validate(
                {"kind": "elbo", "kl_weight": self.kl_weight, "mc_samples": self.mc_samples}
            )
        )

    def _build(self, n_features: int):
        dim = int(self.latent_dim or n_features)
        spec = self._model_spec()
        init = sd.stream_seed(self.seed, "train/init")
        if dim == n_features:  # the registered model kind, as a setting builds it
            model = build_model(
                spec, init, in_dim=n_features, out_dim=dim, image_shape=None, mixing=None
            )
        else:  # the same VAE with observations of another dimension than the latents
            from unmix.models.vae import GaussianVAE

            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(init)
                model = GaussianVAE(
                    dim,
                    obs_dim=n_features,
                    hidden=spec.hidden,
                    negative_slope=spec.negative_slope,
                    prior=spec.vae.build_prior(dim),
                    gamma2=spec.vae.gamma2,
                )
        return model, self._objective()

    def fit(self, X, y=None) -> VAEEncoder:
        """Fit the VAE to the observations ``X`` ``(n_samples, n_features)`` (``y`` is ignored).
        Returns ``self``."""
        self._check_params()
        X = validate_data(self, X, reset=True, dtype=[np.float64, np.float32])
        if X.shape[0] < 2:
            raise ConfigError(f"n_samples={X.shape[0]}: the VAE needs at least 2 samples")
        self._standardise_fit(X)
        self.n_components_ = int(self.latent_dim or self.n_features_in_)
        with _threads(self.threads):
            self._train(self._tensor(X, torch.float32), self.n_features_in_)
        return self

    def _batch(self, data, g: torch.Generator) -> Batch:
        n = data.shape[0]
        idx = torch.randperm(n, generator=g, device=g.device)[: min(self.batch_size, n)]
        return Batch(x=data[idx], generator=g)

    def _encode(self, model, x):
        mu, logvar = model.encode(x)
        return model.prior.posterior_mean(mu, logvar)

    def score(self, X, y=None) -> float:
        """MCC of the posterior means against latents ``y``; without ``y`` the negative ELBO
        loss on ``X`` (mean over batches of ``batch_size``, noise from the fit's seed)."""
        check_is_fitted(self, "model_")
        if y is not None:
            return self._mcc(X, y)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        g = sd.torch_generator(self.seed, "train/score", self._device())
        with _threads(self.threads), torch.no_grad():
            xt = self._tensor(X)
            losses = [
                self.objective_(self.model_, Batch(x=c, generator=g)).item()
                for c in xt.split(self.batch_size)
            ]
            sizes = [c.shape[0] for c in xt.split(self.batch_size)]
        return -float(np.average(losses, weights=sizes))


_CLASSES = {"ContrastiveEncoder": ContrastiveEncoder, "VAEEncoder": VAEEncoder}


def load_estimator(directory: str | Path) -> ContrastiveEncoder | VAEEncoder:
    """A fitted estimator from the directory :meth:`ContrastiveEncoder.save` wrote (the tensors
    are loaded with ``torch.load(weights_only=True)``); one-line :class:`CheckpointError` if it is
    missing or damaged."""
    from unmix import runs

    directory = Path(directory)
    info = runs.read_json(directory / PARAMS_FILE, required=("estimator", "params", "fitted"))
    cls = _CLASSES.get(info["estimator"])
    if cls is None:
        raise CheckpointError(
            f"{directory / PARAMS_FILE}: unknown estimator {info['estimator']!r} (known: "
            f"{', '.join(_CLASSES)})"
        )
    path = directory / ENCODER_FILE
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist.") from None
    except Exception as err:
        first = (str(err).strip().splitlines() or [""])[0]
        raise CheckpointError(
            f"{path} is corrupt or unreadable ({type(err).__name__}: {first})"
        ) from None
    if not isinstance(state, dict) or not {"mean", "scale"} <= set(state):
        raise CheckpointError(f"{path} is not an encoder written by unmix's estimators")
    params = dict(info["params"])
    params["hidden"] = tuple(params["hidden"])
    est = cls(**params)
    try:
        est._restore(state, info["fitted"])
    except (RuntimeError, KeyError, ConfigError) as err:
        first = (str(err).strip().splitlines() or [""])[0]
        raise CheckpointError(f"{path} does not fit {directory / PARAMS_FILE} ({first})") from None
    return est
