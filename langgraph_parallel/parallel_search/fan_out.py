"""Fan-out and join of the parallel search step.

``fan_out`` caps this turn's sub-queries and a conditional edge sends one ``Send("search", ...)``
per sub-query; LangGraph runs the branches concurrently and joins their results through the
``search_results`` reducer, keyed by ``(turn, index)``. ``observe`` formats the joined results in
the order the model wrote the sub-queries.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Send

from langgraph_parallel.agent.context import SearchContext, run_context
from langgraph_parallel.agent.state import FanOutState, SearchResult, SubQuery
from langgraph_parallel.parallel_search.turn import turn_counters
from langgraph_parallel.protocol import cap_queries, format_observation


class FanOutNode:
    """Cap the sub-queries of this turn and open a new turn number.

    Args:
        max_parallel_queries: Sub-queries run per turn; the rest are reported as skipped.
    """

    def __init__(self, max_parallel_queries: int) -> None:
        self.max_parallel_queries = max_parallel_queries
        self.defaults = SearchContext(max_parallel_queries=max_parallel_queries)

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the capped queries, the skipped ones and the new turn number."""
        limit = run_context(runtime, self.defaults).max_parallel_queries
        run, skipped = cap_queries(list(state.get("queries") or []), limit)
        return {"queries": run, "skipped": skipped, "turn": int(state.get("turn") or 0) + 1}


def dispatch(state: FanOutState) -> list[Send]:
    """Conditional edge: one ``Send("search", SubQuery)`` per sub-query of this turn.

    The branches share a fresh ``group`` key and know the group's ``size``, so the search node
    can search them in one call (:class:`~langgraph_parallel.retrieval.batching.SearchBatcher`).
    """
    turn = int(state.get("turn") or 0)
    queries = list(state.get("queries") or [])
    group = uuid.uuid4().hex
    return [
        Send("search", SubQuery(turn=turn, index=i, query=q, group=group, size=len(queries)))
        for i, q in enumerate(queries)
    ]


def turn_results(state: FanOutState) -> list[SearchResult]:
    """Results of the current turn, in sub-query order."""
    turn = int(state.get("turn") or 0)
    return [r for r in state.get("search_results") or [] if r["turn"] == turn]


class ObserveNode:
    """Join this turn's results into one ``<information>`` observation.

    Args:
        max_parallel_queries: Quoted in the note naming skipped sub-queries.
        as_message: Append the observation to ``messages`` and update counters (agent loop);
            ``False`` only writes ``observation`` (a fan-out step inside a user's graph).
    """

    def __init__(self, max_parallel_queries: int, *, as_message: bool = True) -> None:
        self.max_parallel_queries = max_parallel_queries
        self.defaults = SearchContext(max_parallel_queries=max_parallel_queries)
        self.as_message = as_message

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the observation update."""
        results = turn_results(state)
        text = format_observation(
            [(r["query"], r["text"]) for r in results],
            state.get("skipped") or [],
            limit=run_context(runtime, self.defaults).max_parallel_queries,
        )
        if not self.as_message:
            return {"observation": text}
        return {
            "observation": text,
            "messages": [HumanMessage(text)],
            # first_turn_parallel: whether the first search fanned out (the paper's
            # decomposition rate of the first search)
            "counters": {
                **turn_counters(len(results)),
                "first_turn_parallel": int(len(results) > 1 and state.get("turn") == 1),
            },
        }
