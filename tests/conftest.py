"""Test-suite settings: one torch thread (small ops on a loaded 2-core machine run faster so);
``benchmark_script``, a benchmark script of ``benchmarks/`` imported as a module."""

import importlib.util
from pathlib import Path

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
torch.set_num_threads(1)

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmark_script():
    """``benchmark_script("grad_norms")``: ``benchmarks/grad_norms.py`` as a module."""

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
