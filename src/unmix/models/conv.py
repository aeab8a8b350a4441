r"""Small convolutional image encoder / decoder for 32–64 px observations.

* :class:`ConvBackbone` — ``len(channels)`` stages of ``Conv2d(k=4, stride=2, padding=1)`` +
  LeakyReLU, each halving the side, then flatten → ``Linear(→ feature_dim)`` → LeakyReLU.
  The input :math:`x \in [0, 1]` is centred as :math:`x - 1/2` first. No normalisation layers, so
  every sample's features depend on that sample only (in training and evaluation mode alike).
  With the defaults at 64 px: 64 → 32 → 16 → 8 → 4, a 64·4·4 = 1024-dim flatten, 256 features.
  ``pool=True`` (backbone ``conv_pool``) also reads the last map's spatial mean and maximum per
  channel (2·64 more inputs to the linear layer): a readout shared by every position. The
  flatten's weights belong to one cell of the 4×4 map each, so what an object looks like (its
  orientation, say) is otherwise learned once per cell it can occupy; the pooled channels say it
  once, wherever the object is (ResNet-18 reads only a global average). On Table 4's quick scene
  it read the rotation angles no better than ``conv`` (a supervised probe, docs/images.md).
* :class:`ImageEncoder` — any backbone with an integer attribute ``feature_dim`` followed by the
  paper-000 projection (Appx A.3, 3DIdent): ``Linear(feature_dim, hidden_mult·out_dim)`` →
  LeakyReLU(negative_slope) → ``Linear(→ out_dim)`` → head (:func:`unmix.models.heads.make_head`,
  space ``sphere`` / ``box`` / ``box_sigmoid`` / ``unbounded``). ``hidden_mult = 0`` replaces the
  projection by a single ``Linear(feature_dim, out_dim)``.
* :class:`ConvDecoder` — the mirror of :class:`ConvBackbone`: ``Linear(latent_dim, hidden)`` →
  LeakyReLU → ``Linear(→ channels[0]·s·s)`` → LeakyReLU → reshape to ``(channels[0], s, s)``
  with :math:`s = \text{image\_size} / 2^{L}` → ``L`` stages of ``ConvTranspose2d(k=4, stride=2,
  padding=1)`` (each doubling the side) with LeakyReLU between them; the last stage produces
  ``out_channels`` with no output nonlinearity (a Gaussian mean) and 1/2 is added, so that a zero
  network output is mid-grey.
* :class:`BroadcastDecoder` — a spatial-broadcast decoder (Watters et al. 2019, "Spatial
  Broadcast Decoder", arXiv:1901.07017): every pixel's value is one small MLP of the latent and
  that pixel's coordinates, :math:`x_{:, i, j} = m([z, c_j, c_i]) + 1/2` with
  :math:`c_k = -1 + 2k/(S - 1)` (column then row, both in [-1, 1]); ``layers`` Linear layers of
  width ``width`` with LeakyReLU between them, the first split as :math:`W_z z + W_c c` so that
  the latent part is computed once per image. The same weights draw every position, so what a
  latent does to colour is learned once rather than per region of the image (the mirrored conv
  decoder's first linear layers are position-specific). It costs more than
  :class:`ConvDecoder` (an MLP per pixel: a quick Sprites VAE run at 64 px takes ≈ 2.5× as
  long, 25 against 10 CPU-minutes).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.models.heads import make_head
from unmix.models.linear import Linear, float32_tail

__all__ = ["BroadcastDecoder", "ConvBackbone", "ConvDecoder", "ImageEncoder"]


def _positive_int(value, name: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{owner}: {name} must be a positive integer, got {value!r}.")
    return value


def _channel_list(channels, owner: str) -> list[int]:
    try:
        out = list(channels)
    except TypeError:
        out = None
    if not out or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in out):
        raise ConfigError(
            f"{owner}: channels must be a non-empty sequence of positive integers, "
            f"got {channels!r}."
        )
    return out


def _base_side(image_size: int, n_stages: int, owner: str) -> int:
    """Side after ``n_stages`` halvings; ConfigError unless ``image_size`` is divisible."""
    factor = 2**n_stages
    if image_size % factor != 0:
        raise ConfigError(
            f"{owner}: image_size must be divisible by 2**len(channels) = {factor} "
            f"({n_stages} stride-2 stages), got image_size={image_size}; use e.g. "
            f"{max(factor, image_size // factor * factor)} or fewer channel stages."
        )
    return image_size // factor


def check_image_batch(x, channels: int, size: int | None, owner: str) -> None:
    """Raise :class:`ConfigError` unless ``x`` is a ``(B, channels, size, size)`` tensor.

    ``size=None`` accepts any spatial size. Only the shape is checked (cheap: no data access).
    """
    if not isinstance(x, torch.Tensor):
        raise ConfigError(f"{owner}: input x must be a torch.Tensor, got {type(x).__name__}.")
    expected = f"(B, {channels}, {size}, {size})" if size is not None else f"(B, {channels}, H, W)"
    ok = x.dim() == 4 and x.shape[1] == channels
    if ok and size is not None:
        ok = x.shape[2] == size and x.shape[3] == size
    if not ok:
        raise ConfigError(
            f"{owner}: input x must be an image batch of shape {expected}, got "
            f"{tuple(x.shape)}; add a batch dimension with x[None] or resize the images."
        )


def check_latent_batch(z, dim: int, owner: str) -> None:
    """Raise :class:`ConfigError` unless ``z`` is a ``(B, dim)`` tensor (a decoder's input)."""
    if not isinstance(z, torch.Tensor) or z.dim() != 2 or z.shape[1] != dim:
        got = tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__
        raise ConfigError(f"{owner}: input z must have shape (B, {dim}), got {got}.")


class ConvBackbone(nn.Module):
    """Strided-conv feature extractor ``(B, C, H, H) → (B, feature_dim)``; see the module doc."""

    def __init__(
        self,
        in_channels: int = 3,
        image_size: int = 64,
        channels: Sequence[int] = (32, 32, 64, 64),
        feature_dim: int = 256,
        negative_slope: float = 0.01,
        pool: bool = False,
    ) -> None:
        super().__init__()
        owner = "ConvBackbone"
        if not isinstance(pool, bool):
            raise ConfigError(f"{owner}: pool must be true or false, got {pool!r}.")
        self.pool = pool
        self.in_channels = _positive_int(in_channels, "in_channels", owner)
        self.image_size = _positive_int(image_size, "image_size", owner)
        self.feature_dim = _positive_int(feature_dim, "feature_dim", owner)
        chans = _channel_list(channels, owner)
        side = _base_side(self.image_size, len(chans), owner)
        layers: list[nn.Module] = []
        prev = self.in_channels
        for c in chans:
            layers += [nn.Conv2d(prev, c, 4, stride=2, padding=1), nn.LeakyReLU(negative_slope)]
            prev = c
        n_flat = prev * side * side
        if pool:
            self.readout = nn.Sequential(
                Linear(n_flat + 2 * prev, self.feature_dim), nn.LeakyReLU(negative_slope)
            )
        else:  # the readout inside ``net``, as before ``pool`` existed (checkpoints keep their keys)
            layers += [nn.Flatten(), Linear(n_flat, self.feature_dim), nn.LeakyReLU(negative_slope)]
        self.net = nn.Sequential(*layers)
        self.channels = tuple(chans)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_image_batch(x, self.in_channels, self.image_size, "ConvBackbone")
        m = self.net(x - 0.5)  # features, or with ``pool`` the last map (B, C, s, s)
        if not self.pool:
            return m
        return self.readout(torch.cat([m.flatten(1), m.mean((2, 3)), m.amax((2, 3))], dim=1))


class ImageEncoder(nn.Module):
    """Backbone → one hidden layer of width ``hidden_mult·out_dim`` → head; ``(B, out_dim)``."""

    def __init__(
        self,
        backbone: nn.Module,
        out_dim: int,
        hidden_mult: int = 10,
        negative_slope: float = 0.01,
        space: str = "unbounded",
        radius: float = 1.0,
        learn_radius: bool = False,
        learn_magnitude: bool = True,
        standardize_output: bool = False,
    ) -> None:
        super().__init__()
        owner = "ImageEncoder"
        if not isinstance(backbone, nn.Module):
            raise ConfigError(
                f"{owner}: backbone must be a torch.nn.Module, got {type(backbone).__name__}."
            )
        feature_dim = getattr(backbone, "feature_dim", None)
        if isinstance(feature_dim, bool) or not isinstance(feature_dim, int) or feature_dim < 1:
            raise ConfigError(
                f"{owner}: backbone must have a positive integer attribute feature_dim (the width "
                f"of its output), got {feature_dim!r} on {type(backbone).__name__}."
            )
        self.out_dim = _positive_int(out_dim, "out_dim", owner)
        if isinstance(hidden_mult, bool) or not isinstance(hidden_mult, int) or hidden_mult < 0:
            raise ConfigError(
                f"{owner}: hidden_mult must be an integer >= 0 (0 = a single Linear layer), "
                f"got {hidden_mult!r}."
            )
        self.backbone = backbone
        self.feature_dim = feature_dim
        if hidden_mult == 0:
            self.projection: nn.Module = Linear(feature_dim, self.out_dim)
        else:
            width = hidden_mult * self.out_dim
            self.projection = nn.Sequential(
                Linear(feature_dim, width),
                nn.LeakyReLU(negative_slope),
                Linear(width, self.out_dim),
            )
        self.head = make_head(
            space, self.out_dim, radius, learn_radius, learn_magnitude, standardize_output
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.backbone(x)
        if not torch.is_autocast_enabled(f.device.type):
            return self.head(self.projection(f))
        # bf16 autocast: the output layer and the head in float32, as MLPEncoder's (the code's
        # differences are what the loss compares; bf16 keeps 8 significant bits)
        *front, last = (
            self.projection if isinstance(self.projection, nn.Sequential) else [self.projection]
        )
        for layer in front:
            f = layer(f)
        return float32_tail(f, last, self.head)


class ConvDecoder(nn.Module):
    """Latent ``(B, latent_dim)`` → image mean ``(B, out_channels, image_size, image_size)``."""

    def __init__(
        self,
        latent_dim: int,
        out_channels: int = 3,
        image_size: int = 64,
        channels: Sequence[int] = (64, 64, 32, 32),
        hidden: int = 256,
        negative_slope: float = 0.01,
    ) -> None:
        super().__init__()
        owner = "ConvDecoder"
        self.latent_dim = _positive_int(latent_dim, "latent_dim", owner)
        self.out_channels = _positive_int(out_channels, "out_channels", owner)
        self.image_size = _positive_int(image_size, "image_size", owner)
        hidden = _positive_int(hidden, "hidden", owner)
        chans = _channel_list(channels, owner)
        self.base_side = _base_side(self.image_size, len(chans), owner)
        self.channels = tuple(chans)
        self.fc = nn.Sequential(
            Linear(self.latent_dim, hidden),
            nn.LeakyReLU(negative_slope),
            Linear(hidden, chans[0] * self.base_side**2),
            nn.LeakyReLU(negative_slope),
        )
        stages: list[nn.Module] = []
        targets = [*chans[1:], self.out_channels]
        for i, (a, b) in enumerate(zip(chans, targets, strict=True)):
            stages.append(nn.ConvTranspose2d(a, b, 4, stride=2, padding=1))
            if i < len(chans) - 1:
                stages.append(nn.LeakyReLU(negative_slope))
        self.deconv = nn.Sequential(*stages)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        check_latent_batch(z, self.latent_dim, "ConvDecoder")
        h = self.fc(z).view(z.shape[0], self.channels[0], self.base_side, self.base_side)
        return self.deconv(h) + 0.5


class BroadcastDecoder(nn.Module):
    """Latent ``(B, latent_dim)`` → image mean ``(B, out_channels, image_size, image_size)`` by one
    MLP of (latent, pixel coordinates) shared by all pixels; see the module docstring.

    Example::

        dec = BroadcastDecoder(4, image_size=64)
        dec(torch.rand(8, 4)).shape  # torch.Size([8, 3, 64, 64])
    """

    def __init__(
        self,
        latent_dim: int,
        out_channels: int = 3,
        image_size: int = 64,
        width: int = 32,
        layers: int = 3,
        negative_slope: float = 0.01,
    ) -> None:
        super().__init__()
        owner = "BroadcastDecoder"
        self.latent_dim = _positive_int(latent_dim, "latent_dim", owner)
        self.out_channels = _positive_int(out_channels, "out_channels", owner)
        self.image_size = _positive_int(image_size, "image_size", owner)
        width = _positive_int(width, "width", owner)
        if _positive_int(layers, "layers", owner) < 2:
            raise ConfigError(f"{owner}: layers must be >= 2 (a hidden layer), got {layers}.")
        side = torch.linspace(-1.0, 1.0, self.image_size)
        rows, cols = torch.meshgrid(side, side, indexing="ij")
        self.register_buffer("coords", torch.stack([cols, rows], -1).reshape(-1, 2))
        self.latent_in = Linear(self.latent_dim, width)
        self.coord_in = Linear(2, width, bias=False)
        body: list[nn.Module] = []
        for _ in range(layers - 2):
            body += [nn.LeakyReLU(negative_slope), Linear(width, width)]
        body += [nn.LeakyReLU(negative_slope), Linear(width, self.out_channels)]
        self.body = nn.Sequential(*body)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        check_latent_batch(z, self.latent_dim, "BroadcastDecoder")
        h = self.latent_in(z)[:, None, :] + self.coord_in(self.coords)[None]  # (B, S·S, width)
        out = self.body(h) + 0.5  # (B, S·S, C)
        s = self.image_size
        return out.transpose(1, 2).reshape(z.shape[0], self.out_channels, s, s)
