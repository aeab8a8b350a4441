"""Distributions on latent spaces: marginals p(z) and positive-pair conditionals p(z̃ | z).

All follow :class:`torch.distributions.Distribution` (batch/event shapes, ``log_prob``) and take a
``generator`` in ``sample`` for reproducibility (see :mod:`unmix.distributions.base`).
"""

from unmix.distributions.beta import FactorizedBeta, random_beta_shapes
from unmix.distributions.factorized import (
    GeneralizedNormal,
    Laplace,
    Normal,
    TruncatedGeneralizedNormal,
    TruncatedLaplace,
    TruncatedNormal,
)
from unmix.distributions.mass import MassToMove, mass_to_move_box_normal, mass_to_move_vmf
from unmix.distributions.projected import (
    ProjectedGeneralizedNormal,
    ProjectedLaplace,
    ProjectedNormal,
)
from unmix.distributions.uniform import UniformBox, UniformSphere, uniform_on
from unmix.distributions.vmf import VonMisesFisher, vmf_mean_resultant_length

__all__ = [
    "VonMisesFisher",
    "vmf_mean_resultant_length",
    "Normal",
    "Laplace",
    "GeneralizedNormal",
    "TruncatedNormal",
    "TruncatedLaplace",
    "TruncatedGeneralizedNormal",
    "ProjectedNormal",
    "ProjectedLaplace",
    "ProjectedGeneralizedNormal",
    "UniformSphere",
    "UniformBox",
    "uniform_on",
    "MassToMove",
    "mass_to_move_vmf",
    "mass_to_move_box_normal",
    "FactorizedBeta",
    "random_beta_shapes",
]
