"""Output heads: each puts the raw output into its model space; box heads with a fixed magnitude."""

import pytest
import torch

from unmix.errors import ConfigError
from unmix.models.heads import BoxHead, IdentityHead, SigmoidBoxHead, SphereHead, make_head


def _raw(seed=0, b=64, n=5):
    return 3 * torch.randn(b, n, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("cls", [BoxHead, SigmoidBoxHead])
def test_box_heads_learn_their_magnitude_by_default(cls):
    head = cls(5)
    assert [name for name, _ in head.named_parameters()] == ["magnitude"]
    head(_raw()).sum().backward()
    assert head.magnitude.grad is not None and head.magnitude.grad.abs().sum() > 0


@pytest.mark.parametrize("cls", [BoxHead, SigmoidBoxHead])
def test_a_fixed_magnitude_is_a_buffer_saved_with_the_model(cls):
    head = cls(5, init_magnitude=2.0, learn_magnitude=False)
    assert list(head.parameters()) == []
    state = head.state_dict()
    torch.testing.assert_close(state["magnitude"], torch.full((5,), 2.0))
    fresh = cls(5, learn_magnitude=False)
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh(_raw()), head(_raw()))


def test_fixed_unit_sigmoid_head_spans_the_unit_box_and_the_linf_head_its_surface():
    y = _raw(1)
    sig = make_head("box_sigmoid", 5, learn_magnitude=False)(y)
    torch.testing.assert_close(sig, torch.sigmoid(y))  # b = 1: exactly the unit box (0, 1)^5
    assert ((sig > 0) & (sig < 1)).all()
    box = make_head("box", 5, learn_magnitude=False)(y)
    torch.testing.assert_close(box.abs().amax(dim=1), torch.ones(64))  # on the cube's surface
    torch.testing.assert_close(box, y / y.abs().amax(dim=1, keepdim=True))


def test_make_head_names_each_space_and_refuses_others():
    assert isinstance(make_head("sphere", 3), SphereHead)
    assert isinstance(make_head("unbounded", 3), IdentityHead)
    with pytest.raises(ConfigError):
        make_head("simplex", 3)


def test_the_setting_field_reaches_the_head():
    from unmix.models.builders import build_model
    from unmix.registry import MODELS

    spec_cls = MODELS.entry("mlp").spec
    for learn in (True, False):
        spec = spec_cls(kind="mlp", hidden=[2], space="box_sigmoid", learn_magnitude=learn)
        model = build_model(spec, 0, in_dim=3, out_dim=3, image_shape=None)
        assert isinstance(model.head.magnitude, torch.nn.Parameter) is learn
