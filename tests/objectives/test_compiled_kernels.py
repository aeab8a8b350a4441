"""The compiled general-p block kernels (torch.compile) against the eager path and a loop."""

import math

import pytest
import torch

from unmix.errors import ConfigError
from unmix.objectives import LpInfoNCE, _chunked, _compiled
from unmix.objectives._compiled import AUTO_MIN_CANDIDATES, loss_kernels, use_compiled

needs_compiler = pytest.mark.skipif(
    not _compiled.compiler_available("cpu"), reason="torch.compile cannot build CPU kernels here"
)


def _feats(b, n, seed, dtype=torch.float64):
    return torch.randn(b, n, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _loss_and_grads(fn, h, hp):
    a, b = h.clone().requires_grad_(), hp.clone().requires_grad_()
    loss = fn(a, b)
    loss.backward()
    return loss.detach(), a.grad, b.grad


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 1.5, 0.7])
def test_block_functions_match_a_loop(p):
    """S = Σ_k |x−c|^p and the weighted slopes Σ_j w φ(d), Σ_i w φ(d) against python loops
    (the eager versions of the same functions; compiled ones below)."""
    x, c, w = _feats(5, 3, 1), _feats(4, 3, 2), _feats(5, 4, 3)
    sums, slopes = _compiled.block_fns(p, compiled=False)
    s = sums(x[:4], c.T.contiguous(), 5)  # 4 rows padded to 5
    assert s.shape == (4, 4)
    s = sums(x, c.T.contiguous(), 5)
    gx, gcT = slopes(x, c.T.contiguous(), w, 5)
    gx4, gcT4 = slopes(x[:4], c.T.contiguous(), w[:4], 6)  # padded rows weigh 0
    torch.testing.assert_close(gx4, gx[:4])
    torch.testing.assert_close(gcT4, slopes(x[:4], c.T.contiguous(), w[:4], 4)[1])

    def phi(d):
        return p * math.copysign(1.0, d) * abs(d) ** (p - 1) if d != 0 else 0.0

    for i in range(5):
        for j in range(4):
            ref = sum(abs(float(x[i, k] - c[j, k])) ** p for k in range(3))
            assert float(s[i, j]) == pytest.approx(ref, rel=1e-12)
    for i in range(5):
        for k in range(3):
            ref = sum(float(w[i, j]) * phi(float(x[i, k] - c[j, k])) for j in range(4))
            assert float(gx[i, k]) == pytest.approx(ref, rel=1e-10, abs=1e-12)
    for k in range(3):
        for j in range(4):
            ref = sum(float(w[i, j]) * phi(float(x[i, k] - c[j, k])) for i in range(5))
            assert float(gcT[k, j]) == pytest.approx(ref, rel=1e-10, abs=1e-12)


LAYOUTS = [
    dict(),
    dict(same_view_negatives=True),
    dict(cross_view_negatives=False, same_view_negatives=True, include_self=True),
    dict(symmetric=True),
]


@needs_compiler
@pytest.mark.parametrize("kw", LAYOUTS)
@pytest.mark.parametrize("pq", [(1.0, 1.0), (3.0, 3.0), (1.5, 1.5), (2.0, 1.0), (1.0, 0.5)])
def test_compiled_loss_and_gradients_equal_the_eager_path(pq, kw):
    """float64 to 1e-10, blocks of 16 rows over B = 45 (a short last block), and float32 to
    float32 rounding; the compiled path runs (its use is recorded)."""
    p, q = pq
    for dtype, rtol, atol in ((torch.float64, 1e-10, 1e-12), (torch.float32, 2e-5, 1e-6)):
        h, hp = _feats(45, 6, 1, dtype), _feats(45, 6, 2, dtype)
        out = {}
        for mode in ("compiled", "eager"):
            with loss_kernels(mode) as choice:
                fn = LpInfoNCE(p=p, q=q, tau=0.9, chunk_size=16, **kw)
                out[mode] = _loss_and_grads(fn, h, hp)
            assert choice.used == {mode}
        for x, y in zip(out["compiled"], out["eager"], strict=True):
            torch.testing.assert_close(x, y, rtol=rtol, atol=atol)


@needs_compiler
def test_compiled_unequal_row_weights_recompute_the_same_gradients():
    """A backward whose anchors weigh differently recomputes the blocks (compiled too)."""
    a0, b0, ex0 = _feats(30, 4, 5), _feats(30, 4, 6), _feats(30, 1, 7)
    w = torch.linspace(0.5, 2.0, 30, dtype=torch.float64)
    res = []
    for kernel in (
        _chunked.CompiledPowerKernel(1.0, 1.0, 0.7),
        _chunked.PowerKernel(1.0, 1.0, 0.7),
    ):
        a, b, ex = (t.clone().requires_grad_(True) for t in (a0, b0, ex0))
        lse = _chunked._ChunkedLSE.apply(a, b, None, ex, kernel, True, True, 8, 80.0, True)
        (lse * w).sum().backward()
        res.append((lse.detach(), a.grad, b.grad, ex.grad))
    for x, y in zip(*res, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)


def test_auto_compiles_large_cpu_blocks_only_and_eager_never(monkeypatch):
    monkeypatch.setattr(_compiled, "compiler_available", lambda device_type="cpu": True)
    cpu = torch.device("cpu")
    with loss_kernels("auto") as choice:
        assert not use_compiled(cpu, AUTO_MIN_CANDIDATES - 1)
        assert use_compiled(cpu, AUTO_MIN_CANDIDATES)
    assert choice.used == {"eager", "compiled"}
    with loss_kernels("eager") as choice:
        assert not use_compiled(cpu, 10**6)
    monkeypatch.setattr(_compiled, "compiler_available", lambda device_type="cpu": False)
    with loss_kernels("auto"):
        assert not use_compiled(cpu, 10**6)  # no compiler: the eager path, no error


def test_compiled_without_a_compiler_and_unknown_modes_are_one_line(monkeypatch):
    monkeypatch.setattr(_compiled, "compiler_available", lambda device_type="cpu": False)
    with pytest.raises(ConfigError, match=r"train.loss_kernels: compiled.*auto or eager"):
        with loss_kernels("compiled", "cpu"):
            pass
    with pytest.raises(ConfigError, match="train.loss_kernels must be one of"):
        with loss_kernels("fast"):
            pass


def test_eager_mode_keeps_the_eager_kernel():
    """In eager mode the loss never builds a compiled kernel (and so never calls the compiler)."""
    h, hp = _feats(600, 3, 8, torch.float32), _feats(600, 3, 9, torch.float32)
    with loss_kernels("eager") as choice:
        LpInfoNCE(p=1.0, tau=0.5)(h, hp)
    assert choice.used == {"eager"}


@needs_compiler
def test_compiling_leaves_distribution_validation_on():
    """TorchDynamo switches torch.distributions' validation off on first use; unmix puts it back
    (a vMF with κ = 0 still raises after a compiled loss ran)."""
    from torch.distributions import Distribution

    from unmix.distributions import VonMisesFisher

    assert Distribution._validate_args
    h, hp = _feats(40, 3, 10, torch.float32), _feats(40, 3, 11, torch.float32)
    with loss_kernels("compiled"):
        LpInfoNCE(p=3.0, tau=0.5)(h, hp)
    assert Distribution._validate_args
    with pytest.raises(ConfigError, match="concentration"):
        VonMisesFisher(torch.tensor([1.0, 0.0, 0.0]), 0.0)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_the_setting_field_reaches_the_loss_and_the_manifest(tmp_path, mode):
    """``train.loss_kernels`` is a setting field: the run's config has it, its manifest says
    which block kernels the general-p loss took; an unknown value is one ConfigError line."""
    import json

    from unmix.resolve import resolve
    from unmix.train import train

    if mode == "compiled" and not _compiled.compiler_available("cpu"):
        pytest.skip("torch.compile cannot build CPU kernels here")
    s = resolve(
        "zimmermann-table2-row1", "smoke", overrides={"train.loss_kernels": mode, "train.steps": 2}
    ).setting
    train(s, tmp_path / "run")
    assert f"loss_kernels: {mode}" in (tmp_path / "run" / "config.yaml").read_text()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["loss_kernels"] == {"setting": mode, "used": [mode]}
    with pytest.raises(ConfigError, match="loss_kernels"):
        resolve("zimmermann-table2-row1", "smoke", overrides={"train.loss_kernels": "jit"})
