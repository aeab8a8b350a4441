"""Training objectives: ``loss = objective(...)`` returns a scalar tensor to minimise.

* :class:`InfoNCE` — contrastive loss with dot-product similarity (Zimmermann et al., Eq. 1).
* :class:`LpInfoNCE` — contrastive loss with similarity ``-‖a − b‖_p^q / τ`` (Eq. 6).
* :class:`AlignUniform` — Wang & Isola's alignment + uniformity loss on the sphere.
* :class:`Supervised` — mean squared error to the true latents (the supervised topline).

The contrastive objectives and :class:`AlignUniform` are called as ``loss(h, h_pos)`` (and
``loss(h, h_pos, h_neg)`` for separately drawn negatives); :class:`Supervised` as
``loss(z_hat, z)``.
"""

from unmix.objectives.align_uniform import AlignUniform
from unmix.objectives.infonce import InfoNCE, LpInfoNCE
from unmix.objectives.supervised import Supervised

__all__ = ["InfoNCE", "LpInfoNCE", "AlignUniform", "Supervised"]
