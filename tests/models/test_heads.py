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


def test_standardised_linf_head_matches_its_formula_in_training_and_at_evaluation():
    head = BoxHead(5, standardize=True)
    with torch.no_grad():
        head.magnitude.copy_(torch.tensor([0.5, 1.0, 2.0, 3.0, 1.5]))
    y = _raw(2, b=256) + torch.tensor([0.0, 0.0, 9.0, 0.0, -1.0])
    # training: the batch's own mean and (biased) variance, eps 1e-5, then b ⊙ u/‖u‖∞
    u = (y - y.mean(0)) / torch.sqrt(y.var(0, unbiased=False) + 1e-5)
    want = head.magnitude * u / u.abs().amax(dim=1, keepdim=True)
    torch.testing.assert_close(head(y), want)
    # evaluation: the running statistics (one update with momentum 0.1 from mean 0, variance 1)
    head.eval()
    mean = 0.1 * y.mean(0)
    var = 0.9 + 0.1 * y.var(0, unbiased=True)
    u = (y - mean) / torch.sqrt(var + 1e-5)
    torch.testing.assert_close(head(y), head.magnitude * u / u.abs().amax(dim=1, keepdim=True))


def test_an_offset_output_locks_one_face_unless_the_head_standardises_it():
    # one raw output far from 0 is the largest |y_j| for every input: every output lies on its
    # face, pinned at +b (docs/images.md, "Why seed 2 leaves α out")
    y = _raw(3, b=2000) + torch.tensor([0.0, 0.0, 20.0, 0.0, 0.0])
    plain = BoxHead(5)(y)
    assert (plain[:, 2] == 1.0).all()
    std = BoxHead(5, standardize=True)(y)
    share = torch.bincount((std.abs() == 1.0).float().argmax(1), minlength=5) / len(y)
    assert (share > 0.1).all() and (share < 0.3).all()  # each output holds a fair share of faces
    assert std[:, 2].std() > 0.3


def test_standardize_output_is_the_box_heads_only():
    from pydantic import ValidationError

    from unmix.models.builders import build_model
    from unmix.registry import MODELS

    spec_cls = MODELS.entry("mlp").spec
    for space in ("sphere", "box_sigmoid", "unbounded"):
        with pytest.raises(ValidationError, match="standardize_output"):
            spec_cls(kind="mlp", hidden=[2], space=space, standardize_output=True)
        with pytest.raises(ConfigError, match="standardize_output"):
            make_head(space, 3, standardize_output=True)
    spec = spec_cls(kind="mlp", hidden=[2], space="box", standardize_output=True)
    model = build_model(spec, 0, in_dim=3, out_dim=3, image_shape=None)
    assert isinstance(model.head.norm, torch.nn.BatchNorm1d) and not model.head.norm.affine
    plain = spec_cls(kind="mlp", hidden=[2], space="box")
    assert build_model(plain, 0, in_dim=3, out_dim=3, image_shape=None).head.norm is None
