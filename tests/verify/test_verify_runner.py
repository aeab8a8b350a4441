"""Tests of the verify runner: groups, errors, result records, slope fitting and figures."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from unmix.errors import ConfigError
from unmix.papers.reizinger import checks as ima
from unmix.papers.wang_isola import checks as wang_isola
from unmix.papers.zimmermann import checks as zimmermann
from unmix.verify import GROUPS, CheckResult, check_names, run_checks
from unmix.verify.checks import fit_loglog_slope, rng_for
from unmix.verify.plots import write_figures


def test_groups_and_names():
    assert tuple(GROUPS) == ("wang-isola", "zimmermann", "ima")
    names = check_names("all")
    assert len(names) == len(wang_isola.CHECKS) + len(zimmermann.CHECKS) + len(ima.CHECKS)
    assert all(n.split("/")[0] in GROUPS for n in names)
    assert check_names("ima") == [f"ima/{fn.__name__}" for fn in ima.CHECKS]


def test_unknown_group_message_lists_valid_ones():
    with pytest.raises(ConfigError) as err:
        run_checks("wang")
    msg = str(err.value)
    assert "'wang'" in msg
    for g in GROUPS:
        assert g in msg
    assert "all" in msg


def test_run_checks_ima_and_json(tmp_path):
    results = run_checks("ima", plots_dir=tmp_path)
    assert [r.group for r in results] == ["ima"] * 3
    assert all(isinstance(r, CheckResult) and r.passed for r in results)
    assert all(r.seconds > 0 for r in results)
    text = json.dumps([r.to_dict() for r in results])
    back = json.loads(text)
    assert back[0]["name"] == "posterior-variances"
    assert (tmp_path / "ima_gap.png").stat().st_size > 1000
    assert not (tmp_path / "wang_isola_rate.png").exists()


def test_figures_from_reduced_checks(tmp_path):
    results = [
        wang_isola.check_theorem1_uniform(replicates=300, log2_m=(4, 10)),
        wang_isola.check_theorem1_vmf(replicates=300, log2_m=(4, 9)),
        wang_isola.check_equispaced_beats_random(draws=500),
        wang_isola.check_gradient_descent_equispaced(starts=1),
        zimmermann.check_limit_is_vmf_entropy(replicates=200, log2_m=(4, 8)),
        zimmermann.check_non_isometry_larger(replicates=200, log2_m=(4, 8), pairs=20_000),
    ]
    paths = write_figures(results, tmp_path)
    assert {p.name for p in paths} == {
        "wang_isola_rate.png",
        "wang_isola_configurations.png",
        "zimmermann_convergence.png",
    }
    assert all(p.stat().st_size > 1000 for p in paths)
    json.dumps([r.to_dict() for r in results])  # details are JSON-serialisable


def test_fit_loglog_slope_exact_and_curved():
    x = 2.0 ** np.arange(4, 15)
    fit = fit_loglog_slope(x, 3.0 * x**-0.7)
    assert fit["slope"] == pytest.approx(-0.7, abs=1e-12)
    curved = 2.0 / x * np.exp(-0.8 / x)
    fit_c = fit_loglog_slope(x, curved, curvature=True)
    assert fit_c["slope"] == pytest.approx(-1.0, abs=1e-12)
    assert fit_c["curvature"] == pytest.approx(-0.8, abs=1e-10)


def test_fit_loglog_slope_ci_covers_truth_with_noise():
    """With noisy data and correct standard errors, the 95% CI covers the true slope ~95% of the
    time: over 400 synthetic series it must cover at least 90% (binomial 4-SE margin ~4.4%)."""
    rng = np.random.default_rng(0)
    x = 2.0 ** np.arange(4, 15)
    covered = 0
    for _ in range(400):
        se = 0.02 / x
        y = 1.0 / x + se * rng.standard_normal(x.size)
        f = fit_loglog_slope(x, y, se)
        covered += f["ci95_low"] <= -1.0 <= f["ci95_high"]
    assert covered / 400 >= 0.90


def test_fit_loglog_slope_rejects_bad_input():
    with pytest.raises(ConfigError):
        fit_loglog_slope([1.0, 2.0, 3.0], [1.0, 0.0, 2.0])
    with pytest.raises(ConfigError):
        fit_loglog_slope([1.0, 2.0], [1.0, 2.0])


def test_rng_streams_are_independent_and_reproducible():
    a = rng_for(0, "x").random(3)
    assert np.array_equal(a, rng_for(0, "x").random(3))
    assert not np.array_equal(a, rng_for(0, "y").random(3))
    assert not np.array_equal(a, rng_for(1, "x").random(3))


@pytest.mark.slow
def test_run_checks_all_under_two_minutes(tmp_path):
    t0 = time.perf_counter()
    results = run_checks("all", plots_dir=tmp_path)
    elapsed = time.perf_counter() - t0
    failed = [r.id for r in results if not r.passed]
    assert not failed, failed
    assert elapsed < 120, elapsed
    assert len(list(tmp_path.glob("*.png"))) == 4
