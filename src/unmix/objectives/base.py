r"""The objective contract: ``loss = objective(model, batch)``.

Every registered objective (:func:`unmix.registry.register_objective`) builds an
:class:`Objective`: a module that takes the model being trained and a :class:`Batch` — built by the
latent process or the finite data set — and returns a 0-dim loss to minimise. It declares what its
batches must hold: :attr:`Objective.needs_pairs` (positives ``x_pos``) and
:attr:`Objective.n_negatives` (separately drawn negatives ``x_neg`` per anchor, 0 = none; or
shared by every anchor when ``shared_negatives``).

The loss modules themselves (:class:`~unmix.objectives.InfoNCE`, :class:`~unmix.objectives.LpInfoNCE`,
:class:`~unmix.objectives.AlignUniform`, :class:`~unmix.objectives.Supervised`,
:class:`~unmix.objectives.elbo.ELBO`) keep their feature-level signatures (``loss(h, h_pos)`` …),
tested against loop references; the wrappers here only encode the batch:

* :class:`Contrastive` — ``h, h_pos = f(x), f(x_pos)`` in one forward pass (plus
  ``h_neg = f(x_neg)``), then ``loss(h, h_pos[, h_neg])``;
* :class:`SupervisedObjective` — ``loss(f(x), z)``;
* :class:`ELBOObjective` — ``elbo(vae, x, generator)``.

Example — a user's objective in their own module::

    import torch, unmix
    from unmix.objectives.base import Objective

    class MeanAlign(Objective):
        def forward(self, model, batch):
            h, h_pos = model(torch.cat([batch.x, batch.x_pos])).chunk(2)
            return (h - h_pos).pow(2).sum(-1).mean() - torch.pdist(h).mean()

    @unmix.register_objective("mean_align")
    def mean_align() -> Objective:
        return MeanAlign()
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from unmix.errors import ConfigError


@dataclass
class Batch:
    """One training batch. ``x`` anchors' observations ``(B, ...)``; ``z`` their latents;
    ``x_pos``/``z_pos`` the positives (when the objective needs pairs); ``x_neg`` separately drawn
    negatives ``(B, M, ...)``, or ``(M, ...)`` when they are shared; ``generator`` the training
    stream (for objectives that sample)."""

    x: torch.Tensor
    z: torch.Tensor | None = None
    x_pos: torch.Tensor | None = None
    z_pos: torch.Tensor | None = None
    x_neg: torch.Tensor | None = None
    generator: torch.Generator | None = None

    @property
    def size(self) -> int:
        return int(self.x.shape[0])


class Objective(nn.Module):
    """Base of every objective: ``forward(model, batch) -> loss``.

    Class attributes say what a batch must hold: ``needs_pairs`` (default True) and
    ``n_negatives`` (default 0)."""

    needs_pairs: bool = True
    n_negatives: int = 0

    def forward(self, model: nn.Module, batch: Batch) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def set_progress(self, step: int, total_steps: int) -> None:
        """Called by the trainer before the loss of step ``step`` (0-based) of ``total_steps``:
        an objective whose terms follow a schedule sets them here, from these two numbers only,
        so that a resumed run continues exactly. The default does nothing."""


def linear_warmup(start: float, fraction: float, step: int, total_steps: int) -> float:
    """A weight rising linearly from ``start`` at step 0 to 1 at ``fraction · total_steps`` and
    1 after: the schedule of the alignment and KL warm-ups."""
    end = fraction * total_steps
    if step >= end:
        return 1.0
    return start + (1.0 - start) * step / end


class Contrastive(Objective):
    r"""A feature-level contrastive loss ``loss(h, h_pos[, h_neg])`` as an objective.

    ``align_warmup`` > 0 (a fraction of the run) warms the loss's positive term up: its weight
    ``loss.align_weight`` rises linearly from ``align_start`` at the first step to 1 at
    ``align_warmup · total_steps`` and stays 1 after (see
    :class:`~unmix.objectives.infonce.InfoNCE`, "Alignment warm-up").

    ``tau_warmup`` > 0 anneals the temperature: ``loss.tau`` moves geometrically from
    ``tau_start`` at the first step to the loss's own τ at ``tau_warmup · total_steps``,
    :math:`\tau_t = \tau\,(\tau_0/\tau)^{1 - t/T_w}`, and stays τ after — the rest of the
    run, and its minimiser, are the loss's own (:mod:`unmix.objectives.infonce`, "Temperature
    warm-up").

    ``queue`` > 0 keeps a negatives queue (a memory bank): after each training step's loss the
    detached features of its ``2B`` images (anchors and positives) enter a first-in-first-out
    queue of ``queue`` rows, and every later step passes the queue to the loss as its shared
    negatives (the loss must be built with ``negatives='shared'``; the first step passes none).
    ``queue_warmup`` > 0 (a fraction of the run) keeps the queue out of the loss before that
    point (it is filled all along), so the network first spreads its features on in-batch
    negatives (from a nearly constant network at initialisation, queued features push every
    anchor the same way, away from where the network was). Measured on Table 4 row 1, neither
    start keeps the features from collapsing to one point (docs/images.md): a queue without a
    momentum encoder is an experiment's switch, not a recipe.
    The queue is the module's extra state (:meth:`get_extra_state`), so it travels in
    ``state_dict`` and a checkpoint. It is only updated in training mode with gradients on, so
    an evaluation of the loss does not change it.

    ``detach_negatives`` encodes the drawn negatives (``n_negatives``, shared or per anchor)
    without gradients: the same loss value, the gradient through the anchors and positives only
    (each anchor is still pushed from every negative). The negatives then cost a forward pass,
    not a forward and a backward one, and are the current network's features, unlike a queue's.

    Example::

        >>> import torch
        >>> from unmix.objectives import InfoNCE
        >>> obj = Contrastive(InfoNCE(negatives="shared"), queue=6)
        >>> f = torch.nn.Linear(3, 2)
        >>> x = torch.randn(4, 3)
        >>> _ = obj(f, Batch(x=x, x_pos=x + 0.1))
        >>> obj.queued().shape  # 2B = 8 features, the last 6 kept
        torch.Size([6, 2])
    """

    def __init__(
        self,
        loss: nn.Module,
        n_negatives: int = 0,
        *,
        align_start: float = 1.0,
        align_warmup: float = 0.0,
        tau_start: float | None = None,
        tau_warmup: float = 0.0,
        queue: int = 0,
        queue_warmup: float = 0.0,
        detach_negatives: bool = False,
    ) -> None:
        super().__init__()
        self.loss = loss
        self.n_negatives = int(n_negatives)
        self.queue_size = int(queue)
        if self.queue_size < 0:
            raise ConfigError(f"'queue' must be a length >= 0, got {queue!r}.")
        if self.queue_size and (self.n_negatives or not self.shared_negatives):
            raise ConfigError(
                "a negatives queue is passed to the loss as its shared negatives: build the loss "
                "with negatives='shared' and draw no negatives (n_negatives=0)."
            )
        self.detach_negatives = bool(detach_negatives)
        if self.detach_negatives and not self.n_negatives:
            raise ConfigError(
                "detach_negatives applies to drawn negatives (n_negatives >= 1): the in-batch "
                "ones are the pairs' own features."
            )
        if not 0 <= queue_warmup < 1 or (queue_warmup and not self.queue_size):
            raise ConfigError(
                f"'queue_warmup' is a fraction in [0, 1) of the run, for a negatives queue; got "
                f"{queue_warmup!r} with queue={self.queue_size}."
            )
        self.queue_warmup = float(queue_warmup)
        self._queue_on = self.queue_warmup == 0
        self._queue: torch.Tensor | None = None  # (queue_size, n), filled from row 0
        self._queue_next = 0  # the row the next feature is written to
        self._queue_filled = 0
        self.align_start = float(align_start)
        self.align_warmup = float(align_warmup)
        self.tau_warmup = float(tau_warmup)
        self.tau_final = float(loss.tau) if hasattr(loss, "tau") else None
        self.tau_start = float(tau_start) if tau_start is not None else self.tau_final
        if self.tau_warmup > 0 and self.tau_final is not None:
            self.loss.tau = self.tau_start

    def align_weight_at(self, step: int, total_steps: int) -> float:
        """The positive term's weight at step ``step`` (0-based) of ``total_steps``."""
        return linear_warmup(self.align_start, self.align_warmup, step, total_steps)

    def tau_at(self, step: int, total_steps: int) -> float:
        """The temperature at step ``step`` (0-based) of ``total_steps``."""
        end = self.tau_warmup * total_steps
        if step >= end:
            return self.tau_final
        return self.tau_final * (self.tau_start / self.tau_final) ** (1.0 - step / end)

    def set_progress(self, step: int, total_steps: int) -> None:
        if self.queue_warmup > 0:
            self._queue_on = step >= self.queue_warmup * total_steps
        if self.align_warmup > 0:
            self.loss.align_weight = self.align_weight_at(step, total_steps)
        if self.tau_warmup > 0:
            self.loss.tau = self.tau_at(step, total_steps)

    @property
    def shared_negatives(self) -> bool:
        """True when the loss takes one set of negatives for every anchor (``negatives:
        shared``): ``batch.x_neg`` is then ``(M, ...)``."""
        return getattr(self.loss, "negatives", None) == "shared"

    # ------------------------------------------------------------------------ negatives queue
    def queued(self) -> torch.Tensor | None:
        """The queued features ``(M, n)`` (``M`` ≤ ``queue``; ``None`` before the first step)."""
        if self._queue is None:
            return None
        return self._queue[: self._queue_filled]

    def _enqueue(self, feats: torch.Tensor) -> None:
        k = self.queue_size
        feats = feats.detach()[-k:]
        q = self._queue
        if q is None:
            q = feats.new_zeros(k, feats.shape[1])
        q = q.to(feats.device)  # a queue loaded from a checkpoint on another device
        rows = (self._queue_next + torch.arange(len(feats), device=q.device)) % k
        # out of place: the loss of this step saved the old queue for its backward
        self._queue = q.index_copy(0, rows, feats.to(q.dtype))
        self._queue_next = (self._queue_next + len(feats)) % k
        self._queue_filled = min(k, self._queue_filled + len(feats))

    def get_extra_state(self) -> dict:
        if not self.queue_size or self._queue is None:
            return {}
        return {"queue": self._queue, "next": self._queue_next, "filled": self._queue_filled}

    def set_extra_state(self, state: dict) -> None:
        if not state:
            self._queue, self._queue_next, self._queue_filled = None, 0, 0
            return
        queue = state["queue"]
        if not self.queue_size or queue.shape[0] != self.queue_size:
            raise ConfigError(
                f"the saved negatives queue has {queue.shape[0]} rows, this objective's has "
                f"{self.queue_size}."
            )
        self._queue = queue.clone()
        self._queue_next, self._queue_filled = int(state["next"]), int(state["filled"])

    def forward(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        b = batch.size
        shared = self.shared_negatives
        if self.n_negatives and shared and not self.detach_negatives:
            # one encoder call for all 2B + M rows
            h, h_pos, h_neg = (
                model(torch.cat([batch.x, batch.x_pos, batch.x_neg]))
                .float()
                .split([b, b, self.n_negatives])
            )
            return self.loss(h, h_pos, h_neg)
        feats = model(torch.cat([batch.x, batch.x_pos])).float()  # the loss in fp32
        h, h_pos = feats.split(b)
        if self.queue_size:
            queued = self.queued() if self._queue_on else None
            neg = feats[:0].detach() if queued is None else queued.to(feats.device)
            loss = self.loss(h, h_pos, neg)
            if self.training and torch.is_grad_enabled():
                self._enqueue(feats)
            return loss
        if not self.n_negatives:
            return self.loss(h, h_pos)
        neg = batch.x_neg if shared else batch.x_neg.flatten(0, 1)
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.detach_negatives):
            h_neg = model(neg).float()
        return self.loss(h, h_pos, h_neg if shared else h_neg.reshape(b, self.n_negatives, -1))


class SupervisedObjective(Objective):
    """Regression onto the true latents: ``loss(f(x), z)`` (the supervised topline)."""

    needs_pairs = False

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return self.loss(model(batch.x).float(), batch.z)


class ELBOObjective(Objective):
    r"""The negative ELBO of a VAE model on ``batch.x`` (paper 004, eq. (1)).

    ``kl_warmup`` > 0 (a fraction of the run) warms the KL term up: its weight rises linearly from
    ``kl_start`` at the first step to the ELBO's own ``kl_weight`` β at ``kl_warmup ·
    total_steps`` and stays β after (Bowman et al. 2016, "Generating sentences from a continuous
    space", Sec. 3.1; Sønderby et al. 2016, "Ladder VAEs", Sec. 2.3), so the rest of the run —
    and its optimum — are the ELBO's own. Its usual motivation is posterior collapse (a latent
    the decoder cannot use yet falls onto the prior at full weight); on paper 004's Fig. 5 it did
    not help — there the decoder's weak gradient for scale is the limit (docs/images.md). The
    weight is a function of ``(step, total_steps)`` only, so a resumed run continues exactly.
    """

    needs_pairs = False

    def __init__(self, elbo: nn.Module, *, kl_start: float = 1.0, kl_warmup: float = 0.0) -> None:
        super().__init__()
        self.elbo = elbo
        self.kl_final = float(elbo.kl_weight)
        self.kl_start = float(kl_start)
        self.kl_warmup = float(kl_warmup)
        if self.kl_warmup > 0:
            self.elbo.kl_weight = self.kl_start * self.kl_final

    def kl_weight_at(self, step: int, total_steps: int) -> float:
        """The KL term's weight at step ``step`` (0-based) of ``total_steps``: ``kl_start·β`` at
        step 0, rising linearly to β at ``kl_warmup · total_steps``, β after."""
        return self.kl_final * linear_warmup(self.kl_start, self.kl_warmup, step, total_steps)

    def set_progress(self, step: int, total_steps: int) -> None:
        if self.kl_warmup > 0:
            self.elbo.kl_weight = self.kl_weight_at(step, total_steps)

    def forward(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        with torch.autocast(batch.x.device.type, enabled=False):  # the ELBO's densities: fp32
            return self.elbo(model, batch.x, batch.generator)

    def terms(self, *args, **kwargs):
        """The ELBO's terms (:meth:`unmix.objectives.elbo.ELBO.terms`)."""
        return self.elbo.terms(*args, **kwargs)
