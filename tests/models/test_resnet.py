"""ResNet-18 backbone: torchvision's published parameter count, layout, init, shapes, normalisation.

References: 11,689,512 parameters for resnet18 with its 1000-way fc (torchvision's published
count); He et al. 2016's layer table (20 conv layers incl. 3 projections); Kaiming fan_out std.
"""

import math

import pytest
import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.models.conv import ImageEncoder
from unmix.models.resnet import IMAGENET_MEAN, ResNet18Backbone


def _n_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def test_parameter_count_with_imagenet_fc_is_torchvisions():
    bb = ResNet18Backbone()
    assert bb.feature_dim == 512
    assert _n_params(bb) + _n_params(nn.Linear(512, 1000)) == 11_689_512
    small = ResNet18Backbone(small_input=True)  # stem 3×3 instead of 7×7 kernels
    assert _n_params(bb) - _n_params(small) == (7 * 7 - 3 * 3) * 3 * 64
    mask = ResNet18Backbone(in_channels=1)
    assert _n_params(bb) - _n_params(mask) == 7 * 7 * 2 * 64


def test_layout_matches_resnet18():
    bb = ResNet18Backbone()
    convs = [m for m in bb.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 20  # stem + 8 blocks × 2 + 3 projection shortcuts
    assert sum(m.kernel_size == (1, 1) for m in convs) == 3
    assert sum(isinstance(m, nn.BatchNorm2d) for m in bb.modules()) == 20
    assert sum(isinstance(m, nn.MaxPool2d) for m in bb.modules()) == 1
    assert (
        sum(isinstance(m, nn.MaxPool2d) for m in ResNet18Backbone(small_input=True).modules()) == 0
    )
    assert convs[0].kernel_size == (7, 7) and convs[0].stride == (2, 2)
    assert all(m.bias is None for m in convs)


def test_initialisation_is_kaiming_fan_out():
    torch.manual_seed(0)
    bb = ResNet18Backbone()
    w = bb.stages[3][1].conv2.weight  # 512×512×3×3: fan_out = 512·9
    assert w.std().item() == pytest.approx(math.sqrt(2 / (512 * 9)), rel=0.01)
    assert w.mean().abs().item() < 1e-4
    for m in bb.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert torch.equal(m.weight, torch.ones_like(m.weight))
            assert torch.equal(m.bias, torch.zeros_like(m.bias))


@pytest.mark.parametrize("size, batch", [(64, 2), (224, 1)])
def test_output_shape(size, batch):
    bb = ResNet18Backbone().eval()
    with torch.no_grad():
        out = bb(torch.rand(batch, 3, size, size))
    assert out.shape == (batch, 512)
    assert torch.isfinite(out).all() and (out >= 0).all()  # pooled ReLU features


def test_small_input_variant_at_32_px_and_encoder():
    torch.manual_seed(1)
    enc = ImageEncoder(ResNet18Backbone(small_input=True), out_dim=3, space="sphere")
    out = enc(torch.rand(2, 3, 32, 32))
    assert out.shape == (2, 3)
    torch.testing.assert_close(out.norm(dim=1), torch.ones(2))
    out.sum().backward()
    assert all(p.grad is not None for p in enc.parameters())


def test_eval_mode_is_batch_independent_and_train_mode_is_not():
    torch.manual_seed(2)
    bb = ResNet18Backbone().eval()
    x = torch.rand(3, 3, 64, 64)
    with torch.no_grad():
        full = bb(x)
        for i in range(3):
            torch.testing.assert_close(bb(x[i : i + 1])[0], full[i], atol=1e-5, rtol=1e-4)
        bb.train()
        assert not torch.allclose(bb(x[:2])[0], bb(x[[0, 2]])[0], atol=1e-4)


def test_input_normalisation():
    bb = ResNet18Backbone().eval()
    mean_img = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1).expand(1, 3, 40, 40)
    with torch.no_grad():  # normalised to exactly 0; no biases and fresh BN → zero features
        assert torch.equal(bb(mean_img), torch.zeros(1, 512))
        assert bb(torch.full((1, 3, 40, 40), 0.9)).abs().sum() > 0
        mask = ResNet18Backbone(in_channels=1).eval()  # no normalisation for 1 channel
        assert torch.equal(mask(torch.zeros(1, 1, 40, 40)), torch.zeros(1, 512))
        assert mask(torch.full((1, 1, 40, 40), 0.45)).abs().sum() > 0


def test_bad_input_is_a_config_error():
    bb = ResNet18Backbone(in_channels=1)
    with pytest.raises(ConfigError, match=r"\(B, 1, H, W\)"):
        bb(torch.rand(2, 3, 32, 32))
    with pytest.raises(ConfigError, match=r"\(B, 1, H, W\)"):
        bb(torch.rand(32, 32))
    with pytest.raises(ConfigError, match="in_channels"):
        ResNet18Backbone(in_channels=0)
