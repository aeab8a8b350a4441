r"""Paper 004's VAE diagnostics as one registered metric, ``vae`` (see :func:`vae_metrics`)."""

from __future__ import annotations

import torch

from unmix.registry import register_metric

ELBO_EVAL_SAMPLES = 8  # reparameterised draws per observation in the evaluation ELBO

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
GENERIC = ("r2", "r2_in_sample", "mcc")
"""The generic metrics a VAE run reports beside :func:`vae_metrics` (on its posterior means)."""
GROUND_TRUTH_METRICS = ("log_px", "l_ima", "gap")
"""Further VAE metrics when the decoder is the ground-truth mixing (see :func:`vae_metrics`)."""


@register_metric("vae")
@torch.no_grad()
def vae_metrics(z_torch, experiment, *, chunk: int = 8192) -> dict[str, float]:
    r"""Scores of a VAE on the run's evaluation latents z (x = g(z)); paper 004, Secs. 3–4.

    The generic metrics (``r2``, ``mcc`` …) score the VAE's **posterior means**
    :math:`\mathbb E_q[z|x]` (:meth:`unmix.experiment.Experiment.encode_eval`); this one adds:

    * ``mcc_sample`` — MCC of one posterior *sample* per x, for comparison;
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
    from unmix.metrics.c_ima import batched_jacobian, c_ima_from_jacobian
    from unmix.metrics.mcc import mcc

    exp, z = experiment, z_torch
    vae, objective = exp.encoder, exp.objective
    was_training = vae.training
    vae.eval()
    gen = exp.stream_generator("data/elbo_eval")
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
    out = {k: float("nan") for k in VAE_METRICS if k not in GENERIC}
    zh = cat["z_sample"]
    if torch.isfinite(zh).all():
        out["mcc_sample"] = float(mcc(z.double().cpu().numpy(), zh.double().cpu().numpy()).mcc)
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
