"""A matplotlib figure for the benchmark plots, without pyplot (no display, no global state).

Its own module so every report (:mod:`.report`, :mod:`.muse_report`) draws on the same canvas
without importing another report.
"""

from __future__ import annotations

from typing import Any

from langgraph_parallel.errors import UserError, install_hint

__all__ = ["new_figure"]


def new_figure(width: float, height: float) -> Any:
    """Return a matplotlib ``Figure`` on the Agg canvas (no pyplot, no display)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UserError(f"Plots need matplotlib: {install_hint('eval')}.") from exc
    figure = Figure(figsize=(width, height), dpi=120, layout="constrained")
    FigureCanvasAgg(figure)
    return figure
