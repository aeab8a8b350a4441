"""A re-implementation of the 2021 reference code's training step, for A/B step timing only.

Written from a description of that code (not copied from it); it is what
``benchmarks/contrastive_ratios.py`` times against unmix. What it does, per step:

* encoder: ``nn.Sequential`` MLP n → 10n → 50n → 50n → 50n → 50n → 10n → n with LeakyReLU(0.01)
  between the linear layers (854,210 parameters at n = 10); on the sphere the output is
  L2-normalised; on the box it goes through a sigmoid (what the reference code did instead of the
  paper's L∞ normalisation); otherwise it is used as is;
* loss (τ = 1): negatives are the anchors of the same batch, one direction, the anchor's pair with
  itself included. Dot product: ``neg = einsum("ij,kj->ik", h, h)`` (B × B) and
  ``pos = (h * h_pos).sum(-1)``; Lp: ``neg = -(h[:, None] - h[None]).abs().pow(p).sum(-1)``
  through a (B, B, n) difference tensor and ``pos = -(h - h_pos).abs().pow(p).sum(-1)``. Then
  ``logits = cat([pos[:, None], neg], 1)`` and the loss is ``(-pos + logsumexp(logits, 1)).mean()``;
* Adam with lr 1e-4 (``zero_grad``, ``backward``, ``step``).
"""

from __future__ import annotations

import torch
from torch import nn

HIDDEN = (10, 50, 50, 50, 50, 10)


def reference_encoder(n: int, negative_slope: float = 0.01) -> nn.Sequential:
    """The reference MLP n → 10n → 50n → 50n → 50n → 50n → 10n → n with LeakyReLU."""
    widths = [n, *(k * n for k in HIDDEN), n]
    layers: list[nn.Module] = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.LeakyReLU(negative_slope))
    return nn.Sequential(*layers)


def encoder_matmul_flop(n: int, rows: int) -> float:
    """FLOPs of the encoder's linear layers in one step (forward + backward) for ``rows`` inputs:
    forward 2·rows·in·out per layer; backward the same twice (input and weight gradients), except
    the first layer, whose input needs no gradient."""
    widths = [n, *(k * n for k in HIDDEN), n]
    macs = [widths[i] * widths[i + 1] for i in range(len(widths) - 1)]
    return 2.0 * rows * (3 * sum(macs) - macs[0])


class ReferenceStep:
    """One training step of the reference code on observations ``x, x_pos`` (each ``(B, n)``)."""

    def __init__(self, n: int, space: str, p: float | None, tau: float = 1.0, seed: int = 0):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.encoder = reference_encoder(n)
        self.space, self.p, self.tau = space, p, tau
        self.optimizer = torch.optim.Adam(self.encoder.parameters(), lr=1e-4)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x)
        if self.space == "sphere":
            h = h / h.norm(dim=-1, keepdim=True)
        elif self.space == "box":
            h = torch.sigmoid(h)
        return h

    def loss(self, h: torch.Tensor, h_pos: torch.Tensor) -> torch.Tensor:
        if self.p is None:  # dot product (InfoNCE on the sphere)
            neg = torch.einsum("ij,kj->ik", h, h) / self.tau
            pos = (h * h_pos).sum(-1) / self.tau
        else:
            neg = -(h[:, None, :] - h[None, :, :]).abs().pow(self.p).sum(-1) / self.tau
            pos = -(h - h_pos).abs().pow(self.p).sum(-1) / self.tau
        logits = torch.cat([pos[:, None], neg], dim=1)
        return (-pos + torch.logsumexp(logits, dim=1)).mean()

    def step(self, x: torch.Tensor, x_pos: torch.Tensor, timings: dict | None = None) -> float:
        """Forward (both views in one pass), loss, backward, Adam; returns the loss value."""
        import time

        t0 = time.perf_counter()
        h, h_pos = self.features(torch.cat([x, x_pos])).split(x.shape[0])
        t1 = time.perf_counter()
        loss = self.loss(h, h_pos)
        t2 = time.perf_counter()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        t3 = time.perf_counter()
        if timings is not None:
            for key, dt in (("forward", t1 - t0), ("loss", t2 - t1), ("backward", t3 - t2)):
                timings.setdefault(key, []).append(dt)
        return float(loss.detach())
