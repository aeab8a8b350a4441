"""Models ẑ = f(x): encoders and output heads."""

from unmix.models.encoders import IdentityEncoder, MLPEncoder, n_parameters
from unmix.models.heads import BoxHead, IdentityHead, SigmoidBoxHead, SphereHead, make_head

__all__ = [
    "MLPEncoder",
    "IdentityEncoder",
    "n_parameters",
    "SphereHead",
    "BoxHead",
    "SigmoidBoxHead",
    "IdentityHead",
    "make_head",
]
