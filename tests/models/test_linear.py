"""unmix.models.linear: the oneDNN path of Linear against float64 and against nn.Linear."""

import json

import pytest
import torch
from torch import nn

from unmix.devices import cpu_flags
from unmix.errors import ConfigError
from unmix.models.linear import (
    Linear,
    auto_cpu_gemm,
    cpu_gemm,
    cpu_vendor,
    current_cpu_gemm,
    linear,
    onednn_available,
    resolve_cpu_gemm,
)

needs_onednn = pytest.mark.skipif(not onednn_available(), reason="PyTorch built without oneDNN")


def _grads(layer: nn.Module, x: torch.Tensor, g: torch.Tensor):
    layer.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_(True)
    y = layer(x)
    y.backward(g)
    return (
        y.detach(),
        x.grad,
        layer.weight.grad,
        layer.bias.grad if layer.bias is not None else None,
    )


@needs_onednn
@pytest.mark.parametrize("shape", [(37, 5, 11), (64, 100, 7), (3, 8, 200)])
@pytest.mark.parametrize("bias", [True, False])
def test_values_and_gradients_match_float64(shape, bias):
    m, k, n = shape
    torch.manual_seed(0)
    layer = Linear(k, n, bias=bias)
    ref = nn.Linear(k, n, bias=bias).double()
    ref.load_state_dict({key: v.double() for key, v in layer.state_dict().items()})
    x, g = torch.randn(m, k), torch.randn(m, n)
    with cpu_gemm("onednn") as lib:
        assert lib == "onednn"
        got = _grads(layer, x, g)
    want = _grads(ref, x.double(), g.double())
    for a, b in zip(got, want, strict=True):
        if b is None:
            assert a is None
            continue
        assert a.dtype == torch.float32
        # float32 rounding of sums over k (values, x-grad) or m (weight-grad) terms
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-5 * b.abs().max().item())


@needs_onednn
def test_same_as_nn_linear_to_float32_rounding_and_same_state_dict():
    torch.manual_seed(1)
    layer = Linear(20, 30)
    plain = nn.Linear(20, 30)
    plain.load_state_dict(layer.state_dict())  # same keys, same shapes
    assert isinstance(layer, nn.Linear)
    x, g = torch.randn(50, 20), torch.randn(50, 30)
    with cpu_gemm("onednn"):
        a = _grads(layer, x, g)
    with cpu_gemm("blas"):
        b = _grads(layer, x, g)
        c = _grads(plain, x, g)
    for u, v, w in zip(a, b, c, strict=True):
        torch.testing.assert_close(u, v, rtol=1e-5, atol=1e-5)
        assert torch.equal(v, w)  # blas = nn.Linear itself, bit for bit


@needs_onednn
def test_batched_input_frozen_weight_and_strided_input():
    torch.manual_seed(2)
    layer = Linear(6, 4)
    layer.weight.requires_grad_(False)
    x = torch.randn(3, 5, 12)[..., ::2].requires_grad_(True)  # (3, 5, 6), non-contiguous
    with cpu_gemm("onednn"):
        y = layer(x)
        y.sum().backward()
    assert y.shape == (3, 5, 4)
    assert layer.weight.grad is None and layer.bias.grad is not None
    want = x.detach().double() @ layer.weight.double().t() + layer.bias.double()
    torch.testing.assert_close(y.double(), want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(x.grad, layer.weight.sum(0).expand(3, 5, 6), rtol=1e-6, atol=1e-6)


@needs_onednn
def test_in_place_activation_after_the_layer_keeps_its_gradient():
    # the encoders apply LeakyReLU in place on each layer's output
    torch.manual_seed(3)
    net = nn.Sequential(Linear(4, 8), nn.LeakyReLU(0.01, inplace=True), Linear(8, 2))
    ref = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.01), nn.Linear(8, 2)).double()
    ref.load_state_dict({k: v.double() for k, v in net.state_dict().items()})
    x = torch.randn(16, 4)
    with cpu_gemm("onednn"):
        net(x).square().sum().backward()
    ref(x.double()).square().sum().backward()
    for p, q in zip(net.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad.double(), q.grad, rtol=1e-5, atol=1e-6)


def test_torch_func_transforms_and_autocast_take_the_torch_path():
    torch.manual_seed(4)
    layer = Linear(3, 3)
    x = torch.randn(5, 3)
    with cpu_gemm("auto"):
        jac = torch.func.vmap(torch.func.jacrev(layer))(x)  # the c_IMA metric's pattern
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y16 = layer(x)
    torch.testing.assert_close(jac, layer.weight.detach().expand(5, 3, 3))
    assert y16.dtype == torch.bfloat16


def test_auto_keeps_mkl_on_intel_and_takes_onednn_elsewhere():
    assert auto_cpu_gemm("GenuineIntel", blas_is_mkl=True, has_onednn=True) == "blas"
    assert auto_cpu_gemm("AuthenticAMD", blas_is_mkl=True, has_onednn=True) == "onednn"
    assert auto_cpu_gemm("GenuineIntel", blas_is_mkl=False, has_onednn=True) == "onednn"
    assert auto_cpu_gemm("", blas_is_mkl=True, has_onednn=True) == "onednn"
    for vendor in ("GenuineIntel", "AuthenticAMD", ""):
        assert auto_cpu_gemm(vendor, blas_is_mkl=True, has_onednn=False) == "blas"
        # without AVX-512 both libraries run AVX2 kernels and MKL keeps its own path
        assert auto_cpu_gemm(vendor, blas_is_mkl=True, has_onednn=True, avx512=False) == "blas"
    assert auto_cpu_gemm("AuthenticAMD", blas_is_mkl=False, has_onednn=True, avx512=False) == (
        "onednn"
    )


def test_choice_is_validated_and_scoped():
    mkl = bool(torch.backends.mkl.is_available())
    assert current_cpu_gemm() == auto_cpu_gemm(
        cpu_vendor(), mkl, onednn_available(), "avx512f" in cpu_flags()
    )
    with cpu_gemm("blas"):
        assert current_cpu_gemm() == "blas"
        with cpu_gemm("auto") as inner:
            assert inner == current_cpu_gemm()
        assert current_cpu_gemm() == "blas"
    with pytest.raises(ConfigError, match="train.cpu_gemm must be one of"):
        resolve_cpu_gemm("mkl")
    x = torch.randn(2, 3, dtype=torch.float64)
    w = torch.randn(4, 3, dtype=torch.float64)
    assert linear(x, w).dtype == torch.float64  # not float32: the torch path


def test_train_cpu_gemm_is_a_setting_field_recorded_in_the_run(tmp_path):
    from unmix.resolve import resolve
    from unmix.train import train

    s = resolve("zimmermann-table1-row1", "smoke", overrides={"train.cpu_gemm": "blas"}).setting
    assert s.train.cpu_gemm == "blas"
    train(s, tmp_path / "run")
    assert "cpu_gemm: blas" in (tmp_path / "run" / "config.yaml").read_text()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["cpu_gemm"] == "blas"  # the library the run used
    with pytest.raises(ConfigError, match="cpu_gemm"):
        resolve("zimmermann-table1-row1", "smoke", overrides={"train.cpu_gemm": "mkl"})


@needs_onednn
def test_both_libraries_take_the_same_first_steps():
    # Adam turns float32-rounding differences of near-zero gradients into full-size updates, so
    # trajectories part after some steps (as they do between thread counts); the first steps'
    # losses agree to rounding
    from unmix.experiment import Experiment
    from unmix.resolve import resolve

    s = resolve("zimmermann-table1-row1", "smoke").setting
    losses = {}
    for lib in ("blas", "onednn"):
        exp = Experiment.build(s)
        opt = torch.optim.Adam(exp.encoder.parameters(), lr=s.train.lr)
        gen = exp.stream_generator("train/batches")
        out = []
        with cpu_gemm(lib):
            for _ in range(3):
                loss = exp.loss(gen, s.train.batch_size)
                opt.zero_grad()
                loss.backward()
                opt.step()
                out.append(loss.item())
        losses[lib] = out
    assert losses["blas"] == pytest.approx(losses["onednn"], rel=1e-6)
