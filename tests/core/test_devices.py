"""unmix.devices: the CPU feature flags, native bf16 and its warning."""

import platform
import warnings
from pathlib import Path

import pytest
import torch

from unmix import devices
from unmix.devices import BF16_FLAGS, bf16_warning, cpu_flags, native_bf16


def test_cpu_flags_are_read_once_from_the_machine():
    flags = cpu_flags()
    assert isinstance(flags, frozenset)
    assert cpu_flags() is flags  # cached
    if Path("/proc/cpuinfo").exists() and platform.machine() in ("x86_64", "AMD64"):
        assert {"sse2", "fpu"} <= flags  # every x86-64 CPU has them


@pytest.mark.parametrize("flag", sorted(BF16_FLAGS))
def test_native_bf16_is_any_of_the_bf16_flags(flag):
    assert native_bf16("cpu", frozenset({"avx2", flag}))
    assert not native_bf16("cpu", frozenset({"avx2", "avx512f", "fma"}))
    assert not native_bf16("cpu", frozenset())


def test_the_warning_names_the_missing_hardware_and_the_fix(monkeypatch):
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset({"avx2"}))
    assert bf16_warning("fp32", "cpu") is None
    message = bf16_warning("bf16", "cpu")
    assert message is not None and "\n" not in message
    assert "avx512_bf16" in message and "precision fp32" in message
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    assert bf16_warning("bf16", torch.device("cpu")) is None


@pytest.mark.parametrize("native", [False, True])
def test_training_in_bf16_warns_only_without_native_bf16(monkeypatch, native):
    from test_train import tiny

    from unmix.train import train

    flags = frozenset({"avx2", "avx512_bf16"} if native else {"avx2"})
    monkeypatch.setattr(devices, "cpu_flags", lambda: flags)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(tiny(steps=4, eval_every=4, precision="bf16"))
    ours = [w for w in caught if "native bfloat16" in str(w.message)]
    assert len(ours) == (0 if native else 1)
    assert result.summary["r2"] == result.summary["r2"]  # it still trains (not NaN)
