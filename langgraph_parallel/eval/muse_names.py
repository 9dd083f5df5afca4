"""The names benchmark rows give ParallelMuse's two systems: partial and independent rollouts.

A row's ``graph`` is a name of the graph registry (:mod:`~langgraph_parallel.apps.registry`).
The reports of this package compare these two by name, and the registry sits above them
(imports point down), so the two names are written here once: the registry's table, the
harness's reports and the lab's analyses all read them from here.
"""

from __future__ import annotations

from typing import Final

__all__ = ["INDEPENDENT", "PARTIAL"]

PARTIAL: Final = "parallel-muse"
"""ParallelMuse's graph: partial rollouts forked at the most uncertain steps."""
INDEPENDENT: Final = "rollouts-majority"
"""Its baseline: the same budget of independent rollouts (``rounds=0``), majority vote."""
