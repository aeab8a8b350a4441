"""What every paper's figures share."""

from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
