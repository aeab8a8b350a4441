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
