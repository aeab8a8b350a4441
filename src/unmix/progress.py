"""One look for unmix's progress bars (training steps, sweep runs, rendered images).

Every bar goes to stderr, so stdout keeps only results (``--json``, tables, file paths), and shows
``label  ━━━━  k/N  elapsed  remaining`` followed by any extra columns the caller adds.

Example:
    >>> from rich.progress import TextColumn
    >>> bar = progress_bar("rendering images", TextColumn("{task.fields[note]}"))
    >>> task = bar.add_task("render", total=10, note="")
    >>> len(bar.columns)
    6
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn

__all__ = ["progress_bar"]


def progress_bar(
    label: str,
    *extra: ProgressColumn,
    console: Console | None = None,
    transient: bool = False,
) -> Progress:
    """A rich ``Progress`` (not started) with unmix's columns: the label, the bar, ``k/N``, the time
    elapsed and the time remaining, then ``extra``. ``label`` may use rich markup and the task's
    fields (``{task.description}``). It prints to ``console``, by default a new stderr console."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        *extra,
        console=console if console is not None else Console(stderr=True),
        transient=transient,
    )
