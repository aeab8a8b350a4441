"""Training objectives: ``loss = objective(model, batch)`` (see :mod:`unmix.objectives.base`).

Registered kinds (``objective: {kind: ...}``), each next to its loss:

* ``infonce`` — :class:`InfoNCE`, contrastive loss with dot-product similarity (Zimmermann et al., Eq. 1).
* ``lp_infonce`` — :class:`LpInfoNCE`, similarity ``-‖a − b‖_p^q / τ`` (Eq. 6).
* ``align_uniform`` — :class:`AlignUniform`, Wang & Isola's alignment + uniformity on the sphere.
* ``supervised`` — :class:`Supervised`, mean squared error to the true latents (the topline).
* ``elbo`` — :class:`~unmix.objectives.elbo.ELBO`, the negative ELBO of a VAE (paper 004).
* ``slowvae`` — :class:`~unmix.objectives.slowvae.SlowVAEObjective`, Klindt et al.'s SlowVAE loss.

The loss modules are called on features, ``loss(h, h_pos)`` (``loss(h, h_pos, h_neg)`` for
separately drawn negatives; :class:`Supervised` as ``loss(z_hat, z)``); the registered objectives
wrap them into the ``objective(model, batch)`` contract.
"""

from unmix.objectives.align_uniform import AlignUniform
from unmix.objectives.base import Batch, Contrastive, Objective
from unmix.objectives.elbo import ELBO
from unmix.objectives.infonce import InfoNCE, LpInfoNCE
from unmix.objectives.slowvae import SlowVAEObjective
from unmix.objectives.supervised import Supervised

__all__ = [
    "InfoNCE",
    "LpInfoNCE",
    "AlignUniform",
    "Supervised",
    "ELBO",
    "SlowVAEObjective",
    "Batch",
    "Objective",
    "Contrastive",
]
