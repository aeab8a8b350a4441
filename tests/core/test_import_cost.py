"""Building and timing a step imports neither scikit-learn nor pandas, nor scipy's heavy parts.

scikit-learn (with the pandas and scipy.stats it pulls in) adds ≈ 100 MB of resident memory and
about a second of start-up; the metrics that need it import it when they run
(docs/performance.md, "Memory"). scipy.stats alone adds ≈ 60 MB and scipy.integrate ≈ 40 MB
after torch (scipy.special, which the samplers use, ≈ 17 MB); the Table 3 report's t-test and the
quadratures import them when they run. ``unmix bench``'s peak-RSS figure depends on this.
"""

import subprocess
import sys

HEAVY = ("sklearn", "pandas", "matplotlib")
HEAVY_SCIPY = ("scipy.stats", "scipy.integrate", "scipy.optimize")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return set(out)


def _loaded_after(code: str) -> set[str]:
    return {m.split(".")[0] for m in _modules_after(code)}


BUILD = (
    "from unmix.resolve import resolve\n"
    "from unmix.experiment import Experiment\n"
    "import unmix.bench, unmix.cli\n"
    "Experiment.build(resolve('zimmermann-table1-row1', 'quick').setting)"
)


def test_building_an_experiment_imports_no_heavy_library():
    loaded = _loaded_after(BUILD)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_building_an_experiment_imports_no_heavy_scipy_module():
    modules = _modules_after(BUILD)
    assert not modules & set(HEAVY_SCIPY), sorted(modules & set(HEAVY_SCIPY))


def test_the_deferred_scipy_imports_still_load_when_used():
    # the check above would also pass if the t-test and the quadratures had stopped using scipy
    modules = _modules_after(
        "from unmix.papers.zimmermann.table3 import difference_text\n"
        "from unmix.distributions.mass import mass_to_move_vmf\n"
        "assert 'Welch' in difference_text([1.0, 2.0, 3.0], [0.0, 0.5, 1.0])\n"
        "assert 0 < mass_to_move_vmf(2, 3.0).value < 1"
    )
    assert {"scipy.stats", "scipy.integrate"} <= modules


def test_the_r2_metric_still_imports_sklearn_when_it_runs():
    # the check above would also pass if the metric had stopped using scikit-learn
    loaded = _loaded_after(
        "import numpy as np\n"
        "from unmix.metrics import r2_affine\n"
        "z = np.random.default_rng(0).normal(size=(200, 3))\n"
        "assert r2_affine(z, z @ np.eye(3)).r2 > 0.999"
    )
    assert "sklearn" in loaded
