r"""ResNet-18 (He et al. 2016) in plain torch, as the image backbone of paper 000 (Appx A.3).

Architecture (the standard ImageNet ResNet-18, identical in layout and parameter count to
torchvision's ``resnet18`` without its final ``fc``):

* stem: ``Conv2d(C, 64, 7, stride=2, padding=3, bias=False)`` → BatchNorm → ReLU →
  ``MaxPool2d(3, stride=2, padding=1)``;
* four stages of two :class:`BasicBlock` each with 64, 128, 256, 512 channels. A block computes
  :math:`\mathrm{ReLU}(\mathrm{BN}(\mathrm{conv}_{3\times3}(\mathrm{ReLU}(\mathrm{BN}(
  \mathrm{conv}_{3\times3}(x))))) + \mathrm{shortcut}(x))`; the first block of stages 2–4 has
  stride 2 and a projection shortcut ``Conv2d(1×1, stride 2, bias=False)`` + BatchNorm, all other
  shortcuts are the identity;
* global average pooling → 512 features (``feature_dim = 512``).

With a 1000-way ``Linear(512, 1000)`` on top this has 11,689,512 parameters, torchvision's
published count. Initialisation as in torchvision: convolutions Kaiming-normal (``fan_out``,
ReLU gain), BatchNorm weight 1 and bias 0.

``small_input=True`` replaces the stem by ``Conv2d(C, 64, 3, stride=1, padding=1, bias=False)``
→ BN → ReLU and drops the max-pool (the usual CIFAR-style variant for 32–64 px images: the
standard stem would shrink a 64 px image to 16 px before the first block). The feature maps are
then 16× larger, and so is the compute.

Input normalisation: for ``in_channels = 3`` images in :math:`[0, 1]` are standardised per channel
with the ImageNet statistics, mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225), as the
first step of ``forward``; for any other channel count (e.g. 1-channel masks) the input is used
as is. The BatchNorm layers make training-mode outputs depend on the whole batch; in evaluation
mode (running statistics) each sample's features depend on that sample only.
"""

from __future__ import annotations

import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.models.conv import check_image_batch

__all__ = ["BasicBlock", "ResNet18Backbone", "IMAGENET_MEAN", "IMAGENET_STD"]

#: ImageNet per-channel statistics (RGB) used to standardise 3-channel inputs.
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)


class BasicBlock(nn.Module):
    """Two 3×3 conv + BN layers with a residual connection (projection when the shape changes)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut: nn.Module
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet18Backbone(nn.Module):
    """ResNet-18 feature extractor ``(B, C, H, W) → (B, 512)``; see the module docstring."""

    feature_dim: int = 512

    def __init__(self, in_channels: int = 3, small_input: bool = False) -> None:
        super().__init__()
        if isinstance(in_channels, bool) or not isinstance(in_channels, int) or in_channels < 1:
            raise ConfigError(
                f"ResNet18Backbone: in_channels must be a positive integer, got {in_channels!r}."
            )
        self.in_channels = in_channels
        self.small_input = bool(small_input)
        if self.small_input:
            stem: list[nn.Module] = [
                nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(inplace=True),
            ]
        else:
            stem = [
                nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, stride=2, padding=1),
            ]
        self.stem = nn.Sequential(*stem)
        stages: list[nn.Module] = []
        prev = 64
        for i, width in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(prev, width, stride), BasicBlock(width, width)))
            prev = width
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        normalise = in_channels == 3
        mean = torch.tensor(IMAGENET_MEAN if normalise else (0.0,)).view(1, -1, 1, 1)
        std = torch.tensor(IMAGENET_STD if normalise else (1.0,)).view(1, -1, 1, 1)
        self.register_buffer("input_mean", mean)
        self.register_buffer("input_std", std)
        self.normalise_input = normalise
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_image_batch(x, self.in_channels, None, "ResNet18Backbone")
        if self.normalise_input:
            x = (x - self.input_mean) / self.input_std
        return self.pool(self.stages(self.stem(x))).flatten(1)
