"""Running the registered checks (``unmix verify``): :func:`run_checks`, :func:`check_names`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from unmix.errors import ConfigError
from unmix.verify.checks import CHECKS, GROUPS, CheckResult


def _registry() -> dict[str, list[Callable[..., CheckResult]]]:
    import unmix.papers  # noqa: F401  (the papers register their checks on import)

    return CHECKS


def _validate_group(group: str) -> list[str]:
    _registry()
    if group == "all":
        return list(GROUPS)
    if group not in GROUPS:
        raise ConfigError(
            f"Unknown verify group {group!r}: choose one of {', '.join(GROUPS)} or 'all'."
        )
    return [group]


def check_names(group: str = "all") -> list[str]:
    """``"group/function"`` names of the checks :func:`run_checks` would run for ``group``."""
    reg = _registry()
    return [f"{g}/{fn.__name__}" for g in _validate_group(group) for fn in reg[g]]


def run_checks(
    group: str = "all", plots_dir: Path | None = None, seed: int = 0
) -> list[CheckResult]:
    """Run every check of ``group`` (one of :data:`GROUPS`, or ``"all"``) and return the results.

    Args:
        group: ``"wang-isola"``, ``"zimmermann"``, ``"ima"`` or ``"all"``.
        plots_dir: if given, the figures (``wang_isola_rate.png``,
        ``wang_isola_configurations.png``,
            ``zimmermann_convergence.png``, ``ima_gap.png`` — those whose checks ran) are written
            there (created if needed).
        seed: base seed; each check draws from its own stream derived from it, so results are
            reproducible and do not depend on which other checks run.

    Raises:
        ConfigError: for an unknown group (the message lists the valid ones).
    """
    groups = _validate_group(group)
    reg = _registry()
    results: list[CheckResult] = []
    for g in groups:
        for fn in reg[g]:
            t0 = time.perf_counter()
            res = fn(seed=seed)
            res.seconds = time.perf_counter() - t0
            results.append(res)
    if plots_dir is not None:
        from unmix.verify.plots import write_figures

        write_figures(results, Path(plots_dir))
    return results
