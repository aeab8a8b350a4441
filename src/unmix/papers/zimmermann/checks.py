r"""Numerical checks of Zimmermann et al. (2021), *Contrastive Learning Inverts the Data Generating
Process* (paper 000), Theorem 1 on the sphere.

Setting (paper 000, eqs. (2)–(4)): latents :math:`z \sim \mathcal U(S^{d-1})`, positives
:math:`\tilde z\,|\,z \sim \mathrm{vMF}(z, \kappa)`, negatives i.i.d. uniform, and
:math:`h = f\circ g` mapping to the sphere of radius :math:`\sqrt{\tau\kappa}`. Theorem 1 states

.. math::

    \lim_{M\to\infty}\ \mathcal L_{contr}(f;\tau,M) - \log M + \log|\mathcal Z|
    = \mathbb{E}_z\big[H(p(\cdot|z), q_h(\cdot|z))\big],\qquad
    q_h(\tilde z|z) = C_h(z)^{-1}e^{h(\tilde z)^\top h(z)/\tau}.

* **Isometry.** For :math:`h(z) = \sqrt{\tau\kappa}\,z` the logits are :math:`\kappa z^\top\tilde
  z`,
  :math:`C_h = 1/C_d(\kappa)` and :math:`q_h = p`, so the limit is the vMF entropy
  :math:`H_{vMF}(\kappa) = -\log C_d(\kappa) - \kappa A_d(\kappa)`; on :math:`S^2`,
  :math:`-\log\frac{\kappa}{4\pi\sinh\kappa} - \kappa(\coth\kappa - \frac1\kappa)`.
* **Twist** (a non-isometric :math:`h` with perfect uniformity). :math:`T_\beta` rotates each point
  about the :math:`e_3` axis by the angle :math:`\beta z_3`. In the coordinates
  :math:`(z_3, \psi)` (height, longitude) it is the shear :math:`(z_3, \psi)\mapsto(z_3, \psi +
  \beta z_3)`
  with unit Jacobian, and the area element of :math:`S^2` is :math:`dz_3\,d\psi` (Archimedes), so
  :math:`T_\beta` preserves the uniform measure: the uniformity term is unchanged,
  :math:`\mathbb{E}_z\log\mathbb{E}_{z^-}e^{\kappa T(z)^\top T(z^-)} =
  \log\frac{\sinh\kappa}{\kappa}`,
  and the limit exceeds :math:`H_{vMF}` by exactly the alignment loss
  :math:`\Delta_\beta = \kappa\,\mathbb{E}[z^\top\tilde z - T(z)^\top T(\tilde z)]`, which Theorem
  1 +
  Proposition 1 say is strictly positive (cross-entropy is minimised only at :math:`q_h = p`).
  :math:`\Delta_\beta` is estimated by Monte Carlo over positive pairs (common random numbers).
* **Wrong radius** :math:`h = \sqrt{\tau\kappa'}z`, :math:`\kappa'\ne\kappa`: closed form
  :math:`-\kappa' A_d(\kappa) - \log C_d(\kappa') = H_{vMF}(\kappa) +
  \mathrm{KL}(\mathrm{vMF}_\kappa\|
  \mathrm{vMF}_{\kappa'}) > H_{vMF}(\kappa)`.

The finite-:math:`M` loss is simulated with real vectors on :math:`S^2` (uniform points as
normalised
Gaussians, positives from :class:`unmix.distributions.vmf.VonMisesFisher`), and its bias is
estimated
with the control-variate estimator of :mod:`unmix.papers.wang_isola.checks`
(:func:`~unmix.papers.wang_isola.checks.per_replicate`; the exact per-anchor :math:`\log m` is
:math:`\log(\sinh\kappa'/\kappa')` for every map here because each pushes the uniform measure to
itself).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from unmix.papers.wang_isola.checks import (
    assess_rate,
    log_c3,
    log_sinh,
    mean_resultant_s2,
    per_replicate,
    theorem1_uniform_terms,
)
from unmix.special import log_sphere_area
from unmix.verify.checks import Z999, CheckResult, rng_for

GROUP = "zimmermann"
LOG_AREA_S2 = log_sphere_area(3)  # log 4π


def twist(z: np.ndarray, beta: float) -> np.ndarray:
    r""":math:`T_\beta(z)`: rotate :math:`z \in S^2` about :math:`e_3` by the angle :math:`\beta
    z_3`
    (area-preserving, not an isometry for :math:`\beta \ne 0`)."""
    a = beta * z[..., 2]
    c, s = np.cos(a), np.sin(a)
    return np.stack([c * z[..., 0] - s * z[..., 1], s * z[..., 0] + c * z[..., 1], z[..., 2]], -1)


def vmf_entropy_s2(kappa: float) -> float:
    r""":math:`H_{vMF}(\kappa) = -\log C_3(\kappa) - \kappa A_3(\kappa)` on :math:`S^2` (nats)."""
    return float(-log_c3(kappa) - kappa * mean_resultant_s2(kappa))


def wrong_radius_limit(kappa: float, kappa_model: float) -> float:
    r"""Theorem-1 limit for :math:`h = \sqrt{\tau\kappa'}z`: :math:`-\kappa'A_3(\kappa) - \log
    C_3(\kappa')`."""
    return float(-kappa_model * mean_resultant_s2(kappa) - log_c3(kappa_model))


def _uniform_s2(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape + (3,))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class _Simulation:
    """Draws (anchor, positive, negatives) on S² once and evaluates every map on them (CRN)."""

    def __init__(
        self,
        kappa: float,
        beta: float,
        kappa_models: tuple[float, ...],
        seed: int,
        stream: str = "zimmermann",
    ):
        self.kappa, self.beta, self.kappa_models = kappa, beta, kappa_models
        self.rng = rng_for(seed, stream)
        self.gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        from unmix.distributions.vmf import VonMisesFisher

        self._vmf = VonMisesFisher

    def positives(self, z: np.ndarray) -> np.ndarray:
        loc = torch.from_numpy(z)
        return self._vmf(loc, self.kappa).sample(generator=self.gen).numpy()

    def block(self, r: int, m: int) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        k = self.kappa
        z = _uniform_s2(self.rng, (r,))
        zt = self.positives(z)
        zn = _uniform_s2(self.rng, (r, m))
        dot_pos = np.sum(z * zt, axis=-1)
        dot_neg = (zn @ z[:, :, None])[..., 0]
        out = {"isometry": (k * dot_pos, k * dot_neg, np.full(r, float(log_sinh(k) - math.log(k))))}
        tz, tzt, tzn = twist(z, self.beta), twist(zt, self.beta), twist(zn, self.beta)
        out["twist"] = (
            k * np.sum(tz * tzt, axis=-1),
            k * (tzn @ tz[:, :, None])[..., 0],
            out["isometry"][2],
        )
        for km in self.kappa_models:
            log_m = np.full(r, float(log_sinh(km) - math.log(km)))
            out[f"wrong radius, kappa'={km:g}"] = (km * dot_pos, km * dot_neg, log_m)
        return out


def _series(sim: _Simulation, ms: list[int], replicates: int, chunk: int = 1 << 15) -> dict:
    """Per map: bias series (control variates), plain estimates; plus CRN differences to
    isometry."""
    names: list[str] | None = None
    stats: dict[str, dict[str, list[float]]] = {}
    for m in ms:
        per_block = max(1, chunk // m)
        acc: dict[str, list[list[np.ndarray]]] = {}
        done = 0
        while done < replicates:
            r = min(per_block, replicates - done)
            done += r
            for name, (sp, sn, lm) in sim.block(r, m).items():
                d, d2, pl = per_replicate(sp, sn, lm)
                acc.setdefault(name, [[], [], []])
                for lst, val in zip(acc[name], (d, d2, pl), strict=True):
                    lst.append(val)
        names = list(acc)
        plain_iso = np.concatenate(acc["isometry"][2])
        for name in names:
            st = stats.setdefault(name, {})
            for key, lst in zip(("bias", "bias_nopos", "plain"), acc[name], strict=True):
                v = np.concatenate(lst)
                st.setdefault(key, []).append(float(v.mean()))
                st.setdefault(key + "_se", []).append(float(v.std(ddof=1) / math.sqrt(v.size)))
            diff = np.concatenate(acc[name][2]) - plain_iso
            st.setdefault("plain_minus_isometry", []).append(float(diff.mean()))
            st.setdefault("plain_minus_isometry_se", []).append(
                float(diff.std(ddof=1) / math.sqrt(diff.size))
            )
    out = {}
    for name, st in stats.items():
        out[name] = {k: np.asarray(v) for k, v in st.items()}
        out[name]["M"] = np.asarray(ms, dtype=np.float64)
    return out


def twist_excess(kappa: float, beta: float, pairs: int, seed: int) -> tuple[float, float]:
    r"""Monte-Carlo :math:`\Delta_\beta = \kappa\,\mathbb{E}[z^\top\tilde z - T(z)^\top T(\tilde
    z)]`
    and its standard error, from ``pairs`` positive pairs (common random numbers)."""
    sim = _Simulation(kappa, beta, (), seed, stream="zimmermann-twist")
    z = _uniform_s2(sim.rng, (pairs,))
    zt = sim.positives(z)
    d = kappa * (np.sum(z * zt, axis=-1) - np.sum(twist(z, beta) * twist(zt, beta), axis=-1))
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(pairs))


@lru_cache(maxsize=2)
def _simulate(seed: int, replicates: int, log2_m: tuple[int, int], kappa: float, beta: float):
    """The shared simulation of both checks (cached so that running both costs one simulation)."""
    ms = [2**k for k in range(log2_m[0], log2_m[1] + 1)]
    sim = _Simulation(kappa, beta, (kappa / 2, 2 * kappa), seed)
    return _series(sim, ms, replicates)


def check_limit_is_vmf_entropy(
    *,
    seed: int = 0,
    replicates: int = 2000,
    log2_m: tuple[int, int] = (4, 12),
    kappa: float = 4.0,
    beta: float = math.pi / 2,
) -> CheckResult:
    r"""Theorem 1 with the isometry :math:`h = \sqrt{\tau\kappa}\,\mathrm{id}`: the limit of
    :math:`\mathcal L - \log M + \log|\mathcal Z|` is the vMF entropy, approached at rate
    :math:`O(1/M)`.

    Measured: the plain Monte-Carlo estimate at the largest :math:`M` minus :math:`H_{vMF}`.
    Criteria (as in :func:`unmix.papers.wang_isola.checks.assess_rate`): plain estimate within 3.29 SE (+
    the
    predicted bias :math:`|c_1|/M`) of :math:`H_{vMF}`; bias slope :math:`-1` within 3.29 SE and
    excluding :math:`-1/2`; :math:`M\cdot`bias matching the delta-method :math:`c_1` within 3.29 SE.
    """
    series = _simulate(seed, replicates, tuple(log2_m), kappa, beta)["isometry"]
    terms = theorem1_uniform_terms(1.0 / kappa, kappa)  # logits kappa z.z' <=> tau_eff = 1/kappa
    h = vmf_entropy_s2(kappa)
    passed, details = assess_rate(series, terms["c1"], terms["c1_nopos"], terms["limit"])
    limit_plus_log_z = terms["limit"] + LOG_AREA_S2
    dev = details["plain_minus_limit_at_Mmax"]
    details.update(
        {
            "vmf_entropy": h,
            "limit_plus_log_area": limit_plus_log_z,
            "limit_plus_log_area_minus_entropy": limit_plus_log_z - h,
            "estimate_plus_log_area": series["plain"] + LOG_AREA_S2,
            "estimate_se": series["plain_se"],
            "replicates": replicates,
            "kappa": kappa,
        }
    )
    passed = passed and abs(limit_plus_log_z - h) <= 1e-12
    return CheckResult(
        group=GROUP,
        name="limit-is-vmf-entropy",
        claim="Theorem 1: with h = sqrt(tau*kappa) * identity and a vMF(kappa) conditional, "
        "q_h = p and lim_M [L_contr - log M + log|Z|] is the vMF entropy.",
        measured=dev,
        expected=(
            f"estimate at M = 2^{log2_m[1]} minus H_vMF({kappa:g}) = {h:.6f} within 3.29 SE "
            f"(+|c1|/M); bias slope -1 within 3.29 SE, excluding -1/2; M*bias -> c1 = "
            f"{terms['c1']:.4f} within 3.29 SE ({replicates} replicates per M, S^2)"
        ),
        passed=passed,
        details=details,
    )


def check_non_isometry_larger(
    *,
    seed: int = 0,
    replicates: int = 2000,
    log2_m: tuple[int, int] = (4, 12),
    kappa: float = 4.0,
    beta: float = math.pi / 2,
    pairs: int = 1_000_000,
) -> CheckResult:
    r"""A non-isometric :math:`h` gives a strictly larger limit (and larger finite-:math:`M` loss).

    Measured: :math:`\Delta_\beta` (nats), the twist's excess over :math:`H_{vMF}` in the limit, by
    Monte Carlo over ``pairs`` positive pairs; pass if :math:`\Delta_\beta > 3.29` SE. Also: at the
    largest :math:`M`, the simulated loss difference twist − isometry (same draws) is positive by
    3.29 SE and equals :math:`\Delta_\beta` + (bias difference) within 3.29 combined SE; the
    wrong-radius maps :math:`\kappa' = \kappa/2, 2\kappa` have closed-form excess
    :math:`\mathrm{KL} > 0` and their simulated differences match it the same way.
    """
    sims = _simulate(seed, replicates, tuple(log2_m), kappa, beta)
    h = vmf_entropy_s2(kappa)
    delta, delta_se = twist_excess(kappa, beta, pairs, seed)
    passed = delta > Z999 * delta_se
    rows = {}
    for name, st in sims.items():
        if name == "isometry":
            continue
        if name == "twist":
            excess, excess_se = delta, delta_se
        else:
            km = float(name.split("=")[1])
            excess, excess_se = wrong_radius_limit(kappa, km) - h, 0.0
        diff, diff_se = st["plain_minus_isometry"][-1], st["plain_minus_isometry_se"][-1]
        bias_diff = st["bias"][-1] - sims["isometry"]["bias"][-1]
        bias_se = math.hypot(st["bias_se"][-1], sims["isometry"]["bias_se"][-1])
        total_se = math.sqrt(diff_se**2 + excess_se**2 + bias_se**2)
        z_match = (diff - (excess + bias_diff)) / total_se
        ok = excess > 0 and diff > Z999 * diff_se and abs(z_match) <= Z999
        passed = passed and ok
        rows[name] = {
            "limit_excess": excess,
            "limit_excess_se": excess_se,
            "loss_difference_at_Mmax": diff,
            "loss_difference_se": diff_se,
            "bias_difference_at_Mmax": bias_diff,
            "z_match": z_match,
            "ok": ok,
            "estimate_plus_log_area": st["plain"] + LOG_AREA_S2,
            "estimate_se": st["plain_se"],
            "bias": st["bias"],
            "bias_se": st["bias_se"],
        }
    return CheckResult(
        group=GROUP,
        name="non-isometry-larger",
        claim="A non-isometric h (an area-preserving twist of S^2, or the wrong radius) gives a "
        "strictly larger limit than the vMF entropy.",
        measured=delta,
        expected=(
            f"twist (beta={beta:.4g}) excess Delta > 3.29 SE ({pairs} pairs); at M = 2^{log2_m[1]} "
            "the simulated loss difference to the isometry > 3.29 SE and equal to Delta + bias "
            "difference within 3.29 SE; same for kappa' = kappa/2, 2*kappa (closed-form KL)"
        ),
        passed=bool(passed),
        details={
            "vmf_entropy": h,
            "twist_excess": delta,
            "twist_excess_se": delta_se,
            "maps": rows,
            "M": sims["isometry"]["M"],
            "isometry_estimate_plus_log_area": sims["isometry"]["plain"] + LOG_AREA_S2,
            "isometry_estimate_se": sims["isometry"]["plain_se"],
            "kappa": kappa,
            "beta": beta,
        },
    )


CHECKS = (check_limit_is_vmf_entropy, check_non_isometry_larger)
