"""Fan-out and join of the parallel search step.

``fan_out`` caps this turn's sub-queries and a conditional edge sends one ``Send("search", ...)``
per sub-query; LangGraph runs the branches concurrently and joins their results through the
``search_results`` reducer, keyed by ``(turn, index)``. ``observe`` formats the joined results in
the order the model wrote the sub-queries. In the agent loop a sub-query already searched in
an earlier turn gets no branch: ``fan_out`` writes its result (:data:`~.turn.REPEATED`) itself.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Send

from langgraph_parallel.agent.chat import extend_transcript, search_result
from langgraph_parallel.agent.context import SearchContext, run_context
from langgraph_parallel.agent.state import FanOutState, SearchResult, SubQuery
from langgraph_parallel.parallel_search.turn import REPEATED, repeated, turn_counters
from langgraph_parallel.protocol import cap_queries, format_observation


class FanOutNode:
    """Cap the sub-queries of this turn, open a new turn number, and answer repeats.

    Args:
        max_parallel_queries: Sub-queries run per turn; the rest are reported as skipped.
        repeats: Answer a sub-query an earlier turn searched with :data:`~.turn.REPEATED`
            instead of searching it (the agent loop, where the earlier documents are in the
            transcript; the run's ``skip_repeats`` can turn it off).
    """

    def __init__(self, max_parallel_queries: int, *, repeats: bool = False) -> None:
        self.max_parallel_queries = max_parallel_queries
        self.defaults = SearchContext(max_parallel_queries=max_parallel_queries)
        self.repeats = repeats

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the capped queries, the skipped ones, the new turn number and any repeats."""
        context = run_context(runtime, self.defaults)
        run, skipped = cap_queries(list(state.get("queries") or []), context.max_parallel_queries)
        turn = int(state.get("turn") or 0) + 1
        update: dict[str, Any] = {"queries": run, "skipped": skipped, "turn": turn}
        if self.repeats and context.skip_repeats:
            earlier = [r["query"] for r in state.get("search_results") or [] if r["turn"] < turn]
            update["search_results"] = [
                SearchResult(turn=turn, index=i, query=q, text=REPEATED, titles=[], repeat=True)
                for i, (q, again) in enumerate(zip(run, repeated(run, earlier), strict=True))
                if again
            ]
        return update


def dispatch(state: FanOutState) -> list[Send] | Literal["observe"]:
    """Conditional edge: one ``Send("search", SubQuery)`` per sub-query still to search.

    The branches share a fresh ``group`` key and know the group's ``size``, so the search node
    can search them in one call (:class:`~langgraph_parallel.retrieval.batching.SearchBatcher`).
    A turn whose sub-queries were all answered by ``fan_out`` (repeats) goes to ``observe``.
    """
    turn = int(state.get("turn") or 0)
    answered = {r["index"] for r in state.get("search_results") or [] if r["turn"] == turn}
    todo = [(i, q) for i, q in enumerate(state.get("queries") or []) if i not in answered]
    if not todo:
        return "observe"
    group = uuid.uuid4().hex
    return [
        Send("search", SubQuery(turn=turn, index=i, query=q, group=group, size=len(todo)))
        for i, q in todo
    ]


def turn_results(state: FanOutState) -> list[SearchResult]:
    """Results of the current turn, in sub-query order."""
    turn = int(state.get("turn") or 0)
    return [r for r in state.get("search_results") or [] if r["turn"] == turn]


class ObserveNode:
    """Join this turn's results into one ``<information>`` observation.

    Args:
        max_parallel_queries: Quoted in the note naming skipped sub-queries.
        as_message: Append the observation to ``transcript``, show it in the chat and update
            counters (agent loop;
            ``search_errors`` counts the turn's failed and timed-out searches); ``False`` only
            writes ``observation`` (a fan-out step inside a user's graph, whose
            ``search_results`` keep each failure's ``error``).
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
        repeats = sum(bool(r.get("repeat")) for r in results)
        errors = sum(bool(r.get("error")) for r in results)
        return {
            "observation": text,
            # The model reads the observation next; the chat shows it as the search's result.
            "transcript": extend_transcript(state, [HumanMessage(text)]),
            "messages": [search_result(state, text, results)],
            # first_turn_parallel: whether the first search fanned out (the paper's
            # decomposition rate of the first search)
            "counters": {
                **turn_counters(len(results), repeats, errors),
                "first_turn_parallel": int(len(results) > 1 and state.get("turn") == 1),
            },
        }
