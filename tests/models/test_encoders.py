"""MLPEncoder: in-place activations change memory, not numbers."""


def test_mlp_encoder_in_place_activations_give_the_same_gradients():
    """The encoder's LeakyReLUs run in place (one saved activation per layer, not two); the
    forward and the gradients equal an out-of-place copy's exactly."""
    import copy

    import torch
    from torch import nn

    from unmix.models import MLPEncoder

    torch.manual_seed(0)
    enc = MLPEncoder(4, 4, (3, 3), negative_slope=0.01, space="unbounded")
    ref = copy.deepcopy(enc)
    for m in ref.modules():
        if isinstance(m, nn.LeakyReLU):
            m.inplace = False
    assert any(isinstance(m, nn.LeakyReLU) and m.inplace for m in enc.modules())
    x = torch.randn(32, 4)
    for model in (enc, ref):
        model(x).pow(2).sum().backward()
    assert torch.equal(enc(x), ref(x))
    for a, b in zip(enc.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a.grad, b.grad)
    relu = MLPEncoder(4, 4, (3,), negative_slope=0.0, space="unbounded")  # slope 0: not in place
    assert not any(m.inplace for m in relu.modules() if isinstance(m, nn.LeakyReLU))


def test_bf16_autocast_keeps_the_input_and_output_layers_in_float32():
    import torch

    from unmix.models.encoders import MLPEncoder
    from unmix.models.linear import Linear

    torch.manual_seed(0)
    enc = MLPEncoder(3, 3, hidden=(4, 4), space="sphere")
    seen: list[tuple[torch.dtype, torch.dtype]] = []  # (input, output) dtype per linear layer
    for layer in enc.backbone:
        if isinstance(layer, Linear):
            layer.register_forward_hook(lambda m, i, o: seen.append((i[0].dtype, o.dtype)))
    x = torch.randn(16, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = enc(x)
    f32, b16 = torch.float32, torch.bfloat16
    assert seen == [(f32, f32), (f32, b16), (f32, f32)]  # first, hidden (bf16), last
    assert z.dtype == f32
    # close to the float32 encoder (the hidden layer's bf16 rounding only), not equal to it
    z32 = enc(x)
    assert 0 < (z - z32).abs().max() < 0.05
    z.sum().backward()  # gradients reach every parameter through the mixed precisions
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in enc.parameters())
