"""Models ẑ = f(x): MLP and image encoders, output heads (and the VAE in :mod:`.vae`)."""

from unmix.models.conv import ConvBackbone, ConvDecoder, ImageEncoder
from unmix.models.encoders import IdentityEncoder, MLPEncoder, n_parameters
from unmix.models.heads import BoxHead, IdentityHead, SigmoidBoxHead, SphereHead, make_head
from unmix.models.resnet import ResNet18Backbone
from unmix.models.slowvae import SlowVAE

__all__ = [
    "MLPEncoder",
    "IdentityEncoder",
    "ConvBackbone",
    "ConvDecoder",
    "ImageEncoder",
    "ResNet18Backbone",
    "SlowVAE",
    "n_parameters",
    "SphereHead",
    "BoxHead",
    "SigmoidBoxHead",
    "IdentityHead",
    "make_head",
]
