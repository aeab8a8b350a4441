"""An experiment's objects, built from a setting: latent process, mixing, encoder, objective.

Seeds are kept apart: the **data seed** fixes the mixing g and the evaluation data; the **training
seed** fixes the encoder's initialisation and the training batches. Building never touches the
global RNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.latents import LatentProcess, build_latent_process
from unmix.settings import LatentSpec, MixingSpec, ModelSpec, ObjectiveSpec, Setting

if TYPE_CHECKING:
    from unmix.datasets import FiniteData

EVAL_STREAM = 1_000_003  # offset that separates the evaluation stream from the mixing's seed
INPUT_STREAM = 2_000_003  # offset of the sample that fixes the input standardisation
CENTER_STREAM = 2_000_029  # stream of the draws that estimate the observations' mean
LINEAR_STREAM = 3_000_017  # seed offset of the linear map in "moebius+linear"
ELBO_EVAL_STREAM = 4_000_037  # reparameterisation noise of the evaluation ELBO
ELBO_EVAL_SAMPLES = 8  # reparameterised draws per observation in the evaluation ELBO


class Centred(nn.Module):
    """``x = g(z) − offset``: a mixing followed by a fixed shift (mean-centred observations).

    Jacobian, log|det J| and c_IMA are those of ``g``; the inverse is ``g⁻¹(x + offset)``.
    """

    def __init__(self, inner: nn.Module, offset: torch.Tensor) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer("offset", offset)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner(z) - self.offset

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner.inverse(x + self.offset)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner.jacobian(z)

    def log_abs_det_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        return self.inner.log_abs_det_jacobian(z)


def build_mixing(
    spec: MixingSpec, dim: int, seed: int, latent: LatentSpec | None = None
) -> nn.Module:
    """The mixing g of ``spec``, seeded by the data seed; mean-centred if ``spec.center`` (which
    needs the ``latent`` spec to draw z ~ p(z))."""
    from unmix import mixing as mx

    if spec.is_renderer:
        from unmix.render.module import build_renderer

        return build_renderer(spec)
    if spec.kind == "identity":
        g: nn.Module = nn.Identity()
    elif spec.kind == "invertible_mlp":
        g = mx.InvertibleMLP(
            dim,
            n_layers=spec.n_layers,
            negative_slope=spec.negative_slope,
            cond_pool_size=spec.cond_pool_size,
            cond_quantile=spec.cond_quantile,
            seed=seed,
        )
    elif spec.kind == "moebius":
        g = mx.Moebius(dim, seed=seed)
    elif spec.kind == "volume_preserving":
        g = mx.VolumePreservingLinear(dim, seed=seed, dtype=torch.get_default_dtype())
    elif spec.kind == "moebius+linear":
        g = mx.Compose(
            mx.Moebius(dim, seed=seed),
            mx.VolumePreservingLinear(
                dim, seed=seed + LINEAR_STREAM, dtype=torch.get_default_dtype()
            ),
        )
    elif spec.kind == "smooth_leaky_mlp":
        g = mx.SmoothLeakyMLP(
            dim, n_layers=spec.n_layers, negative_slope=spec.negative_slope, seed=seed
        )
    else:
        g = mx.TriangularMLP(
            dim, n_layers=spec.n_layers, negative_slope=spec.negative_slope, seed=seed
        )
    if not spec.center:
        return g
    if latent is None:
        raise ConfigError(
            "mixing.center needs the latent spec to estimate the mean of g(z): pass latent= "
            "to build_mixing"
        )
    process = build_latent_process(latent, seed=seed)
    gen = torch.Generator().manual_seed(seed + CENTER_STREAM)
    with torch.no_grad():
        z = process.sample(spec.center_samples, gen)
        offset = torch.cat([g(c).double() for c in z.split(8192)]).mean(0)
    return Centred(g, offset.to(torch.get_default_dtype()))


def build_backbone(spec: ModelSpec, image_shape: tuple[int, int, int]) -> nn.Module:
    """The image backbone of ``spec.backbone`` for images of shape ``(C, H, W)``."""
    channels, height, width = image_shape
    if height != width:
        raise ConfigError(f"image backbones take square images, got {height}×{width}")
    if spec.backbone == "resnet18":
        from unmix.models.resnet import ResNet18Backbone

        return ResNet18Backbone(in_channels=channels)
    from unmix.models.conv import ConvBackbone

    return ConvBackbone(in_channels=channels, image_size=height)


def build_encoder(
    spec: ModelSpec,
    in_dim: int,
    out_dim: int,
    seed: int,
    image_shape: tuple[int, int, int] | None = None,
) -> nn.Module:
    """The encoder f of ``spec``, initialised from the training ``seed``: an MLP on vectors of
    ``in_dim``, or (``spec.backbone`` conv/resnet18) an image backbone on ``image_shape``
    followed by ``spec.hidden`` (≤ 1 layer, multiples of ``out_dim``) and the head."""
    from unmix.models import IdentityEncoder, MLPEncoder

    if spec.kind == "identity":
        return IdentityEncoder()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if spec.backbone != "mlp":
            from unmix.models.conv import ImageEncoder

            if image_shape is None:
                raise ConfigError(f"backbone {spec.backbone} needs the image shape")
            return ImageEncoder(
                build_backbone(spec, image_shape),
                out_dim,
                hidden_mult=spec.hidden[0] if spec.hidden else 0,
                negative_slope=spec.negative_slope,
                space=spec.space,
                radius=spec.radius,
                learn_radius=spec.learn_radius,
            )
        return MLPEncoder(
            in_dim,
            out_dim,
            spec.hidden,
            spec.negative_slope,
            spec.space,
            spec.radius,
            spec.learn_radius,
        )


def build_vae(setting: Setting, mixing: nn.Module, seed: int) -> nn.Module:
    """Paper 004's :class:`~unmix.models.vae.GaussianVAE` for a ``model.kind: vae`` setting; its
    decoder is the (frozen) mixing itself when ``model.vae.decoder`` is ``ground_truth``."""
    from unmix.models.vae import GaussianVAE, VAEPrior

    spec, v = setting.model, setting.model.vae
    dim = setting.latent.dim
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        nets: dict[str, object] = {}
        if spec.backbone == "conv":
            from unmix.models.conv import ConvDecoder, ImageEncoder

            shape = mixing.image_shape
            nets["encoder_net"] = nn.Sequential(
                nn.Unflatten(1, shape),
                ImageEncoder(
                    build_backbone(spec, shape),
                    2 * dim,
                    hidden_mult=spec.hidden[0] if spec.hidden else 0,
                    negative_slope=spec.negative_slope,
                    space="unbounded",
                ),
            )
            nets["decoder_net"] = nn.Sequential(
                ConvDecoder(dim, out_channels=shape[0], image_size=shape[1]), nn.Flatten(1)
            )
            nets["obs_dim"] = shape[0] * shape[1] * shape[2]
        return GaussianVAE(
            dim,
            **nets,
            hidden=spec.hidden,
            negative_slope=spec.negative_slope,
            prior=VAEPrior(
                v.prior,
                v.prior_alpha if v.prior == "beta" else 1.0,
                v.prior_beta if v.prior == "beta" else 1.0,
            ),
            gamma2=v.gamma2,
            learn_gamma=v.learn_gamma,
            decoder=mixing if v.decoder == "ground_truth" else None,
            gamma2_warmup_steps=v.gamma2_warmup_steps,
            gamma2_start=v.gamma2_start,
        )


def build_objective(spec: ObjectiveSpec) -> nn.Module:
    from unmix import objectives as ob

    if spec.kind == "elbo":
        from unmix.objectives.elbo import ELBO

        return ELBO(kl_weight=spec.kl_weight, mc_samples=spec.mc_samples)
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
    """The built objects of a setting. ``encoder`` is the trained model: the encoder f, or for
    ``model.kind: vae`` the whole :class:`~unmix.models.vae.GaussianVAE` (encoder, decoder and,
    if learned, γ²), so that one trainer optimises and checkpoints either."""

    setting: Setting
    process: LatentProcess
    mixing: nn.Module
    encoder: nn.Module
    objective: nn.Module
    device: torch.device
    data: FiniteData | None = None

    @classmethod
    def build(
        cls, setting: Setting, device: str | torch.device = "cpu", progress: bool = False
    ) -> Experiment:
        """Build every object of ``setting``. With ``data.kind: rendered`` the data set is rendered
        first if it is not on disk yet (``progress`` shows a bar)."""
        device = torch.device(device)
        lat = setting.latent
        process = build_latent_process(lat, device=device, seed=setting.seeds.data)
        mixing = build_mixing(setting.mixing, lat.dim, setting.seeds.data, lat).to(device)
        mixing.requires_grad_(False)
        data = None
        if setting.data is not None:
            from unmix.datasets import FiniteData, ensure_rendered

            if setting.data.kind == "rendered":
                ensure_rendered(setting, process, mixing, progress=progress)
            data = FiniteData.open(setting, process)
        if setting.model.kind == "vae":
            if setting.mixing.is_renderer:
                mixing.flatten = True
            encoder = build_vae(setting, mixing, setting.seeds.train).to(device)
        else:
            shape = data.image_shape if data is not None else getattr(mixing, "image_shape", None)
            encoder = build_encoder(setting.model, lat.dim, lat.dim, setting.seeds.train, shape)
            encoder = encoder.to(device)
            if setting.model.standardize_input and setting.model.kind == "mlp":
                g = torch.Generator(device=device).manual_seed(setting.seeds.data + INPUT_STREAM)
                with torch.no_grad():
                    encoder.fit_input_standardization(mixing(process.sample(4096, g)))
        objective = build_objective(setting.objective).to(device)
        return cls(setting, process, mixing, encoder, objective, device, data)

    def generator(self, seed: int) -> torch.Generator:
        return torch.Generator(device=self.device).manual_seed(int(seed))

    def eval_data(self, n: int | None = None) -> torch.Tensor:
        """The fixed evaluation latents: n fresh draws from the marginal, seeded by the data seed
        — or, for a finite data set, the latents of its whole test split (``n`` must be None)."""
        if self.data is not None:
            if n is not None:
                raise ConfigError("a finite data set is evaluated on its whole test split: n=None")
            return self.data.test.latents.to(self.device)
        n = n or self.setting.train.eval_samples
        g = self.generator(self.setting.seeds.data + EVAL_STREAM)
        return self.process.sample(n, g)

    def loss(self, generator: torch.Generator, batch_size: int) -> torch.Tensor:
        """One minibatch loss: draw (z, z̃) [and negatives], mix, encode, score."""
        obj = self.setting.objective
        if obj.kind == "elbo":
            x = self.mixing(self.process.sample(batch_size, generator))
            loss = self.objective(self.encoder, x, generator)
            self.encoder.advance()  # one more training step (drives a γ² warm-up)
            return loss
        if self.data is not None:
            z, x, x_pos = self.data.pairs(batch_size, generator, self.device)
            if obj.kind == "supervised":
                return self.objective(self.encoder(x), z)
            h, h_pos = self.encoder(torch.cat([x, x_pos])).split(batch_size)
            return self.objective(h, h_pos)
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
        """R² (held-out and in-sample) and MCC of f(g(z)) against z (see :mod:`unmix.metrics`).

        For a VAE, ẑ is the posterior mean and more is reported: see :func:`evaluate_vae`."""
        from unmix.metrics import mcc, r2_affine

        if self.setting.model.kind == "vae":
            return evaluate_vae(self, z, chunk)

        was_training = self.encoder.training
        self.encoder.eval()
        if self.setting.observes_images:
            chunk = min(chunk, 512)
        if self.data is not None:
            if z.shape != self.data.test.latents.shape:
                raise ConfigError(
                    "a finite data set is scored on its test split: pass exp.eval_data()"
                )
            z_hat = torch.cat(
                [self.encoder(x.to(self.device)) for x in self.data.test_images(chunk)]
            )
        else:
            z_hat = torch.cat([self.encoder(self.mixing(c)) for c in z.split(chunk)])
        self.encoder.train(was_training)
        z_np, zh_np = z.double().cpu().numpy(), z_hat.double().cpu().numpy()
        if not torch.isfinite(z_hat).all():
            return {"r2": float("nan"), "r2_in_sample": float("nan"), "mcc": float("nan")}
        r2, m = r2_affine(z_np, zh_np), mcc(z_np, zh_np)
        out = {
            "r2": float(r2.r2),
            "r2_in_sample": float(r2_affine(z_np, zh_np, in_sample=True).r2),
            "mcc": float(m.mcc),
        }
        if self.setting.observes_images:
            out.update(per_factor_scores(r2, m))
        return out


FACTOR_PREFIXES = ("r2_factor", "mcc_factor")


def factor_scores(summary: dict) -> dict[str, float]:
    """The per-factor entries (:func:`per_factor_scores`) of a run's metrics or summary."""
    return {k: v for k, v in summary.items() if k.startswith(FACTOR_PREFIXES)}


def per_factor_scores(r2, m) -> dict[str, float]:
    """Per true factor i, from an :class:`~unmix.metrics.R2Result` and an
    :class:`~unmix.metrics.MCCResult`: ``r2_factor{i}`` (held-out affine R² of z_i from ẑ) and
    ``mcc_factor{i}`` (|Pearson correlation| of z_i with the ẑ coordinate MCC's matching assigns
    to it) — the per-factor numbers of paper 004's Fig. 5 and a per-factor view of Table 4."""
    out: dict[str, float] = {}
    for i in range(len(r2.per_dim)):
        out[f"r2_factor{i}"] = float(r2.per_dim[i])
        out[f"mcc_factor{i}"] = float(abs(m.matched_correlations[i]))
    return out


VAE_METRICS = (
    "r2",
    "r2_in_sample",
    "mcc",
    "mcc_sample",
    "elbo",
    "reconstruction",
    "kl",
    "gamma2",
    "posterior_var",
    "eq12_rhs",
    "eq12_log_ratio",
    "recon_error",
    "c_ima",
    "c_ima_mean_jacobian",
    "c_ima_mixing",
)
GROUND_TRUTH_METRICS = ("log_px", "l_ima", "gap")
"""Further VAE metrics when the decoder is the ground-truth mixing (see :func:`evaluate_vae`)."""


@torch.no_grad()
def evaluate_vae(exp: Experiment, z: torch.Tensor, chunk: int = 8192) -> dict[str, float]:
    r"""Scores of a VAE on the evaluation latents ``z`` (x = g(z)); paper 004, Secs. 3–4.

    * ``mcc``, ``r2``, ``r2_in_sample`` — of the **posterior means** :math:`\mathbb E_q[z|x]`
      against z (``mcc_sample``: MCC of one posterior *sample* per x, for comparison);
    * ``elbo`` (= ``reconstruction`` − ``kl``) — mean ELBO per observation in nats, with
      :data:`ELBO_EVAL_SAMPLES` reparameterised draws from a fixed stream of the data seed (the
      training generator is not touched); ``gamma2`` — the current decoder precision;
    * eq. (12) — ``posterior_var``: geometric mean over x and k of :math:`\sigma_k^2(x)`;
      ``eq12_rhs``: geometric mean of :math:`(-\partial_k^2\log p_U(\mu_k) + \gamma^2\lVert
      [J_{f\circ h}(\mu)]_{:k}\rVert^2)^{-1}` (at the encoder mean :math:`\mu(x)` in place of
      :math:`g(x)`); ``eq12_log_ratio``: mean :math:`|\log(\sigma_k^2/\text{rhs}_k)|`;
    * ``recon_error`` — self-consistency, mean :math:`\lVert x - f(h(\mu(x)))\rVert_2`;
    * ``c_ima`` — :math:`C_{IMA}` of the decoder: mean of per-sample :math:`c_{IMA}` at the
      encoder means; ``c_ima_mean_jacobian`` — :math:`c_{IMA}` of the mean Jacobian over the
      evaluation set, the (different, smaller) quantity paper 004's code logged, for comparison
      only; ``c_ima_mixing`` — :math:`C_{IMA}` of the true mixing at z;
    * with ``model.vae.decoder: ground_truth`` also ``log_px`` — mean :math:`\log p(x)` by the
      change of variables (paper 004, eq. (4); exact as :math:`\gamma \to \infty`),
      :math:`\log p_0(z) - \log|\det J_g(z)|`; ``l_ima`` = ``log_px`` − ``c_ima_mixing`` (the
      IMA-regularised log-likelihood, eq. (6)); ``gap`` = ``log_px`` − ``elbo``.
    """
    from unmix.metrics import c_ima_from_jacobian, mcc, r2_affine
    from unmix.metrics.c_ima import batched_jacobian

    vae, objective = exp.encoder, exp.objective
    was_training = vae.training
    vae.eval()
    gen = exp.generator(exp.setting.seeds.data + ELBO_EVAL_STREAM)
    parts: dict[str, list[torch.Tensor]] = {}

    def keep(name: str, t: torch.Tensor) -> None:
        parts.setdefault(name, []).append(t.detach())

    gamma2 = vae.gamma2
    if exp.setting.observes_images:
        chunk = min(chunk, 256)
    ground_truth = exp.setting.model.vae.decoder == "ground_truth"
    has_jac = hasattr(exp.mixing, "jacobian")
    for zc in z.split(chunk):
        x = exp.mixing(zc)
        mu, logvar = vae.encode(x)
        keep("z_mean", vae.prior.posterior_mean(mu, logvar))
        eps = torch.randn(mu.shape, generator=gen, dtype=mu.dtype, device=mu.device)
        keep("z_sample", vae.prior.to_latent(mu + torch.exp(0.5 * logvar) * eps))
        t = objective.terms(vae, x, gen, mc_samples=ELBO_EVAL_SAMPLES)
        keep("elbo", t.elbo)
        keep("reconstruction", t.reconstruction)
        keep("kl", t.kl)
        keep("logvar", logvar)
        keep("recon_error", (x - vae.decode(mu)).norm(dim=-1))
        with torch.enable_grad():
            jac = batched_jacobian(vae.decode, mu).to(torch.float64)
        col2 = jac.pow(2).sum(-2)
        rhs = 1.0 / (vae.prior.curvature_u(mu).double() + gamma2.double() * col2)
        keep("log_rhs", rhs.log())
        keep("c_ima", c_ima_from_jacobian(jac))
        keep("jac_sum", jac.sum(0, keepdim=True))  # for the mean Jacobian (not all: images)
        if has_jac:
            keep("c_ima_mixing", c_ima_from_jacobian(exp.mixing.jacobian(zc).to(torch.float64)))
        if ground_truth:
            keep(
                "log_px",
                vae.prior.log_prob_z(zc).sum(-1) - exp.mixing.log_abs_det_jacobian(zc),
            )
    vae.train(was_training)
    cat = {k: torch.cat(v) for k, v in parts.items()}
    logvar = cat["logvar"].double()
    out = {k: float("nan") for k in VAE_METRICS}
    z_np = z.double().cpu().numpy()
    for name, key in (("z_mean", "mcc"), ("z_sample", "mcc_sample")):
        zh = cat[name]
        if torch.isfinite(zh).all():
            zh_np = zh.double().cpu().numpy()
            out[key] = float(mcc(z_np, zh_np).mcc)
            if key == "mcc":
                r2 = r2_affine(z_np, zh_np)
                out["r2"] = float(r2.r2)
                out["r2_in_sample"] = float(r2_affine(z_np, zh_np, in_sample=True).r2)
                if exp.setting.observes_images:
                    out.update(per_factor_scores(r2, mcc(z_np, zh_np)))
    out.update(
        elbo=float(cat["elbo"].double().mean()),
        reconstruction=float(cat["reconstruction"].double().mean()),
        kl=float(cat["kl"].double().mean()),
        gamma2=float(gamma2),
        posterior_var=float(logvar.mean().exp()),
        eq12_rhs=float(cat["log_rhs"].mean().exp()),
        eq12_log_ratio=float((logvar - cat["log_rhs"]).abs().mean()),
        recon_error=float(cat["recon_error"].double().mean()),
        c_ima=float(cat["c_ima"].mean()),
        c_ima_mean_jacobian=float(c_ima_from_jacobian(cat["jac_sum"].sum(0) / z.shape[0])),
    )
    if has_jac:
        out["c_ima_mixing"] = float(cat["c_ima_mixing"].mean())
    if ground_truth:
        log_px = float(cat["log_px"].double().mean())
        out.update(log_px=log_px, l_ima=log_px - out["c_ima_mixing"], gap=log_px - out["elbo"])
    return out
