"""Building and timing a step imports neither scikit-learn nor pandas.

scikit-learn (with the pandas and scipy.stats it pulls in) adds ≈ 100 MB of resident memory and
about a second of start-up; the metrics that need it import it when they run
(docs/performance.md, "Memory"). ``unmix bench``'s peak-RSS figure depends on this.
"""

import subprocess
import sys

HEAVY = ("sklearn", "pandas", "matplotlib")


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {m.split(".")[0] for m in out}


def test_building_an_experiment_imports_no_heavy_library():
    loaded = _loaded_after(
        "from unmix.resolve import resolve\n"
        "from unmix.experiment import Experiment\n"
        "import unmix.bench, unmix.cli\n"
        "Experiment.build(resolve('zimmermann-table1-row1', 'quick').setting)"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_r2_metric_still_imports_sklearn_when_it_runs():
    # the check above would also pass if the metric had stopped using scikit-learn
    loaded = _loaded_after(
        "import numpy as np\n"
        "from unmix.metrics import r2_affine\n"
        "z = np.random.default_rng(0).normal(size=(200, 3))\n"
        "assert r2_affine(z, z @ np.eye(3)).r2 > 0.999"
    )
    assert "sklearn" in loaded
