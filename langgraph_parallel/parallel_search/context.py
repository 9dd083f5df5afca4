"""ParallelSearch's settings: the loop's, with the fan-out's cap and passage rule.

One settings object reaches every part of a turn: the graph's nodes and the ``create_agent``
tool hold a :class:`SearchContext` and hand it to :class:`~.turn.SearchTurn`, which applies the
cap; nothing unpacks ``max_parallel_queries`` and packs it again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from langgraph_parallel.agent.context import LoopContext
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES

__all__ = ["SearchContext", "search_settings"]


@dataclass(frozen=True, kw_only=True)
class SearchContext(LoopContext):
    """Settings of the ParallelSearch loop: the loop's (:class:`LoopContext`) and the turn's.

    Attributes:
        max_parallel_queries: Sub-queries run per turn; the rest are named in the observation.
        dedupe_passages: List a passage that several sub-queries of a turn found once, under
            the one ranking it highest (:func:`~.turn.listed`; ``counters
            ["duplicate_passages"]``). Off by default on every path (the graph, the tool), as
            the policies were trained without it.
    """

    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES
    dedupe_passages: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_parallel_queries < 1:
            raise ValueError(
                f"max_parallel_queries must be at least 1 (got {self.max_parallel_queries})."
            )


def search_settings(runtime: Any, defaults: SearchContext) -> SearchContext:
    """Return a turn's settings: the run's context over the node's build-time ``defaults``.

    A run's :class:`SearchContext` is taken whole. A run of the loop's settings alone (a
    ParallelMuse rollout passes a :class:`LoopContext`) overrides the loop's fields and keeps
    the turn's own (``max_parallel_queries``, ``dedupe_passages``) from ``defaults``; any other
    context (a user's graph) leaves ``defaults``.
    """
    context = getattr(runtime, "context", None)
    if isinstance(context, SearchContext):
        return context
    if isinstance(context, LoopContext):
        loop = {f.name: getattr(context, f.name) for f in dataclasses.fields(LoopContext)}
        return dataclasses.replace(defaults, **loop)
    return defaults
