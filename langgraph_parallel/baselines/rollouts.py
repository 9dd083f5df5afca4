"""The independent-rollouts baseline of ParallelMuse: the same graph, never forking.

``budget`` full rollouts start at once, each sampled with its own seed, and are reported and
joined as ParallelMuse's are; the comparison with ParallelMuse isolates what forking at uncertain
steps adds. It is a :class:`~langgraph_parallel.parallel_muse.context.MuseContext` with
``rounds=0``, given to the one door,
:func:`~langgraph_parallel.parallel_muse.graph.create_parallel_muse_graph`.
"""

from __future__ import annotations

from typing import Any

from langgraph_parallel.parallel_muse.context import MuseContext

__all__ = ["independent_rollouts"]


def independent_rollouts(**settings: Any) -> MuseContext:
    """Return the settings of ``budget`` independent rollouts, joined by majority by default.

    Example:
        >>> independent_rollouts(budget=4).rounds
        0

    Args:
        **settings: Any :class:`MuseContext` field (``budget``, ``join``, ``max_turns``, ...);
            ``rounds`` is 0 and ``initial_rollouts`` 1 (every rollout starts at once).
    """
    return MuseContext(**{"join": "majority", **settings, "rounds": 0, "initial_rollouts": 1})
