"""unmix.devices: the CPU feature flags, native bf16 and its warning."""

import platform
import warnings
from pathlib import Path

import pytest
import torch

from unmix import devices
from unmix.devices import BF16_FLAGS, bf16_warning, cpu_flags, native_bf16
from unmix.errors import ConfigError


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


def test_heap_pad_is_applied_on_glibc_and_refuses_bad_values():
    from unmix.devices import _glibc, set_heap_pad

    assert set_heap_pad(0) is False  # 0: the C library's default is left alone
    assert set_heap_pad(64) is (_glibc() is not None)
    for bad in (-1, 1025, 1.5, True, "64"):
        with pytest.raises(ConfigError, match="heap_pad_mb"):
            set_heap_pad(bad)


def test_heap_pad_is_a_train_field_refused_in_one_line():
    from unmix.resolve import load_setting

    s = load_setting("zimmermann-table1-row1")
    assert s.train.heap_pad_mb == 0  # opt-in: it slows the paper's batch
    assert s.replace(**{"train.heap_pad_mb": 0}).train.heap_pad_mb == 0
    with pytest.raises(ConfigError, match="heap_pad_mb"):
        s.replace(**{"train.heap_pad_mb": 4096})
