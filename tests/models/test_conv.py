"""The small conv encoder / decoder: shapes, sizes, heads, per-sample independence, gradients.

References: parameter counts worked out by hand from the layer list, the head definitions
(unit norm, L∞ box), and recomputation of each sample on its own.
"""

import pytest
import torch
from torch import nn

from unmix.errors import ConfigError
from unmix.models.conv import BroadcastDecoder, ConvBackbone, ConvDecoder, ImageEncoder
from unmix.models.heads import BoxHead, SigmoidBoxHead


def _n_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


@pytest.mark.parametrize("size", [64, 32])
def test_backbone_and_encoder_shapes(size):
    torch.manual_seed(0)
    bb = ConvBackbone(image_size=size)
    x = torch.rand(3, 3, size, size)
    assert bb(x).shape == (3, 256)
    assert bb.feature_dim == 256
    enc = ImageEncoder(ConvBackbone(image_size=size), out_dim=7)
    assert enc(x).shape == (3, 7)


def test_backbone_parameter_count_matches_the_layer_list():
    bb = ConvBackbone()  # 3→32→32→64→64 convs k=4, 64 px → 4×4, Linear(64·4·4, 256)
    convs = (3 * 32 + 32 * 32 + 32 * 64 + 64 * 64) * 16 + (32 + 32 + 64 + 64)
    assert _n_params(bb) == convs + 64 * 16 * 256 + 256
    one = ConvBackbone(in_channels=1, image_size=32, channels=(8, 16), feature_dim=5)
    assert _n_params(one) == (1 * 8 + 8 * 16) * 16 + 8 + 16 + 16 * 8 * 8 * 5 + 5


def test_encoder_projection_widths():
    enc = ImageEncoder(ConvBackbone(), out_dim=10)  # paper 000: one hidden layer of width 10·N
    lin = [m for m in enc.projection.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in lin] == [(256, 100), (100, 10)]
    acts = [m for m in enc.projection.modules() if isinstance(m, nn.LeakyReLU)]
    assert len(acts) == 1 and acts[0].negative_slope == 0.01
    single = ImageEncoder(ConvBackbone(), out_dim=4, hidden_mult=0)
    assert isinstance(single.projection, nn.Linear)
    assert (single.projection.in_features, single.projection.out_features) == (256, 4)


def test_pooled_readout_reads_the_last_map_flat_and_pooled():
    """``pool=True``: the linear readout takes the flattened last map, then its per-channel
    spatial mean and maximum — checked against a per-channel loop over the conv stack's output;
    ``pool=False`` keeps the single Sequential (and so the parameter names of checkpoints)."""
    torch.manual_seed(0)
    bb = ConvBackbone(image_size=32, channels=(8, 16), feature_dim=6, pool=True)
    x = torch.rand(4, 3, 32, 32)
    m = bb.net(x - 0.5)  # (4, 16, 8, 8)
    cols = [m.flatten(1)]
    cols.append(torch.stack([m[:, c].mean((1, 2)) for c in range(16)], 1))
    cols.append(torch.stack([m[:, c].amax((1, 2)) for c in range(16)], 1))
    expect = bb.readout(torch.cat(cols, 1))
    torch.testing.assert_close(bb(x), expect)
    lin = bb.readout[0]
    assert (lin.in_features, lin.out_features) == (16 * 8 * 8 + 2 * 16, 6)
    plain = ConvBackbone(image_size=32, channels=(8, 16), feature_dim=6)
    assert not hasattr(plain, "readout")
    assert any(k.startswith("net.") and k.endswith(".weight") for k in plain.state_dict())
    # convs at net.0 / net.2, Flatten at net.4, the Linear readout at net.5: the old names
    assert {"net.0.weight", "net.2.weight", "net.5.weight"} <= set(plain.state_dict())
    with pytest.raises(ConfigError, match="pool must be true or false"):
        ConvBackbone(pool=1)


def test_conv_pool_backbone_is_built_from_the_setting():
    from unmix.models.builders import build_backbone

    assert build_backbone("conv_pool", (3, 32, 32)).pool is True
    assert build_backbone("conv", (3, 32, 32)).pool is False


@pytest.mark.parametrize("size", [50, 8])
def test_image_size_not_divisible_is_a_config_error(size):
    with pytest.raises(ConfigError, match="image_size"):
        ConvBackbone(image_size=size)
    with pytest.raises(ConfigError, match="image_size"):
        ConvDecoder(3, image_size=size)


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="channels"):
        ConvBackbone(channels=())
    with pytest.raises(ConfigError, match="feature_dim"):
        ConvBackbone(feature_dim=0)
    with pytest.raises(ConfigError, match="feature_dim"):
        ImageEncoder(nn.Linear(3, 3), out_dim=2)
    with pytest.raises(ConfigError, match="hidden_mult"):
        ImageEncoder(ConvBackbone(image_size=32), out_dim=2, hidden_mult=-1)
    with pytest.raises(ConfigError, match="space"):
        ImageEncoder(ConvBackbone(image_size=32), out_dim=2, space="torus")


def test_forward_checks_the_input_shape():
    bb = ConvBackbone(image_size=32)
    for bad in (torch.rand(3, 32, 32), torch.rand(2, 1, 32, 32), torch.rand(2, 3, 64, 64)):
        with pytest.raises(ConfigError, match=r"expected|shape \(B, 3, 32, 32\)"):
            bb(bad)
    dec = ConvDecoder(4, image_size=32)
    with pytest.raises(ConfigError, match=r"\(B, 4\)"):
        dec(torch.rand(2, 5))


@pytest.mark.parametrize("size, out_channels", [(64, 3), (32, 1)])
def test_decoder_shape_and_mid_grey_offset(size, out_channels):
    torch.manual_seed(0)
    dec = ConvDecoder(6, out_channels=out_channels, image_size=size)
    z = torch.randn(5, 6)
    assert dec(z).shape == (5, out_channels, size, size)
    last = [m for m in dec.modules() if isinstance(m, nn.ConvTranspose2d)][-1]
    assert last.out_channels == out_channels
    with torch.no_grad():  # a zero network output is mid-grey
        last.weight.zero_()
        last.bias.zero_()
    assert torch.equal(dec(z), torch.full((5, out_channels, size, size), 0.5))


def test_decoder_mirrors_the_backbone():
    dec = ConvDecoder(3)
    deconvs = [m for m in dec.modules() if isinstance(m, nn.ConvTranspose2d)]
    assert [(m.in_channels, m.out_channels) for m in deconvs] == [
        (64, 64),
        (64, 32),
        (32, 32),
        (32, 3),
    ]
    assert all(m.kernel_size == (4, 4) and m.stride == (2, 2) for m in deconvs)
    assert dec.base_side == 4


def test_heads_put_outputs_into_their_space():
    torch.manual_seed(1)
    x = torch.rand(6, 3, 32, 32)
    sphere = ImageEncoder(ConvBackbone(image_size=32), 5, space="sphere", radius=2.0)
    torch.testing.assert_close(sphere(x).norm(dim=1), torch.full((6,), 2.0))
    box = ImageEncoder(ConvBackbone(image_size=32), 5, space="box")
    assert isinstance(box.head, BoxHead)
    with torch.no_grad():
        box.head.magnitude.copy_(torch.tensor([0.5, 1.0, 2.0, 3.0, 4.0]))
    scaled = box(x).abs() / box.head.magnitude
    assert (scaled <= 1 + 1e-6).all()
    torch.testing.assert_close(scaled.amax(dim=1), torch.ones(6))  # L∞-normalised
    sig = ImageEncoder(ConvBackbone(image_size=32), 5, space="box_sigmoid")
    assert isinstance(sig.head, SigmoidBoxHead)
    out = sig(x)
    assert ((out > 0) & (out < 1)).all()


@pytest.mark.parametrize("train", [True, False])
def test_samples_do_not_depend_on_the_rest_of_the_batch(train):
    torch.manual_seed(2)
    enc = ImageEncoder(ConvBackbone(image_size=32), 4, space="sphere")
    dec = ConvDecoder(4, image_size=32)
    enc.train(train)
    dec.train(train)
    x = torch.rand(5, 3, 32, 32)
    z = torch.randn(5, 4)
    with torch.no_grad():
        batch_e, batch_d = enc(x), dec(z)
        for i in range(5):
            torch.testing.assert_close(enc(x[i : i + 1])[0], batch_e[i], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(dec(z[i : i + 1])[0], batch_d[i], atol=1e-5, rtol=1e-5)
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in enc.modules())


def test_gradient_reaches_every_parameter():
    torch.manual_seed(3)
    enc = ImageEncoder(ConvBackbone(image_size=32), 4, space="box")
    dec = ConvDecoder(4, image_size=32)
    x = torch.rand(4, 3, 32, 32)
    loss = ((dec(enc(x)) - x) ** 2).mean()
    loss.backward()
    for name, p in [*enc.named_parameters(), *dec.named_parameters()]:
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("hidden_mult", [0, 2])
def test_bf16_autocast_keeps_the_output_layer_and_head_in_float32(hidden_mult):
    from unmix.models.linear import Linear

    torch.manual_seed(0)
    enc = ImageEncoder(ConvBackbone(3, 16, (4, 4), 8), 3, hidden_mult, space="sphere")
    seen: list[tuple[torch.dtype, torch.dtype]] = []
    for layer in enc.modules():
        if isinstance(layer, Linear):
            layer.register_forward_hook(lambda m, i, o: seen.append((i[0].dtype, o.dtype)))
    x = torch.rand(4, 3, 16, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = enc(x)
    f32, b16 = torch.float32, torch.bfloat16
    # the backbone's linear layer (and the hidden projection) in bf16, the output layer in fp32
    assert seen[-1] == (f32, f32)
    assert all(o == b16 for _, o in seen[:-1])
    assert z.dtype == f32
    assert 0 < (z - enc(x)).abs().max() < 0.05


# ------------------------------------------------------------------ spatial-broadcast decoder
def _broadcast_pixel_loop(dec: BroadcastDecoder, z: torch.Tensor) -> torch.Tensor:
    """Slow reference: the module's MLP applied to [z, column, row] pixel by pixel."""
    s = dec.image_size
    w_in = torch.cat([dec.latent_in.weight, dec.coord_in.weight], 1)  # acts on [z, c_col, c_row]
    out = torch.empty(z.shape[0], dec.out_channels, s, s, dtype=torch.float64)
    for b in range(z.shape[0]):
        for i in range(s):
            for j in range(s):
                inp = torch.cat([z[b], torch.tensor([-1 + 2 * j / (s - 1), -1 + 2 * i / (s - 1)])])
                h = w_in.double() @ inp.double() + dec.latent_in.bias.double()
                for m in dec.body:
                    if isinstance(m, nn.Linear):
                        h = m.weight.double() @ h + m.bias.double()
                    else:
                        h = nn.functional.leaky_relu(h, m.negative_slope)
                out[b, :, i, j] = h + 0.5
    return out


def test_broadcast_decoder_is_one_mlp_of_latent_and_pixel_coordinates():
    torch.manual_seed(0)
    dec = BroadcastDecoder(3, out_channels=2, image_size=8, width=5, layers=3)
    z = torch.randn(2, 3)
    got = dec(z)
    assert got.shape == (2, 2, 8, 8)
    torch.testing.assert_close(got.double(), _broadcast_pixel_loop(dec, z), rtol=1e-5, atol=1e-5)
    assert [m.out_features for m in dec.body if isinstance(m, nn.Linear)] == [5, 2]


def test_broadcast_decoder_samples_gradients_and_bad_arguments():
    torch.manual_seed(1)
    dec = BroadcastDecoder(4, image_size=16)
    z = torch.randn(6, 4)
    full = dec(z)
    torch.testing.assert_close(full[2:3], dec(z[2:3]), rtol=1e-6, atol=1e-6)
    full.square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in dec.parameters())
    for kwargs, words in [({"layers": 1}, "layers"), ({"width": 0}, "width")]:
        with pytest.raises(ConfigError, match=words):
            BroadcastDecoder(4, **kwargs)
    with pytest.raises(ConfigError, match="shape"):
        dec(torch.randn(2, 5))
