"""Fan-out and join of the parallel search step.

``fan_out`` caps this turn's sub-queries and a conditional edge sends one ``Send("search", ...)``
per sub-query; LangGraph runs the branches concurrently and joins their results through the
``search_results`` reducer, keyed by ``(turn, index)``. ``observe`` formats the joined results in
the order the model wrote the sub-queries. In the agent loop a sub-query already searched in
an earlier turn gets no branch: ``fan_out`` writes its result (:data:`~.turn.REPEATED`) itself.

In the agent loop (``chat``) each sub-query's result is also shown in the chat as its call's
tool message (:mod:`~langgraph_parallel.agent.chat`): a branch writes its own as it finishes,
so the ``messages`` stream carries the fan-out live; ``fan_out`` answers the calls that get no
branch (repeats, and sub-queries over the cap).
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Send

from langgraph_parallel.agent.chat import branch_result, extend_transcript, search_call_ids
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
        chat: Answer the chat's calls of the sub-queries that get no branch (agent loop).
    """

    def __init__(
        self, max_parallel_queries: int, *, repeats: bool = False, chat: bool = False
    ) -> None:
        self.max_parallel_queries = max_parallel_queries
        self.defaults = SearchContext(max_parallel_queries=max_parallel_queries)
        self.repeats = repeats
        self.chat = chat

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the capped queries, the skipped ones, the new turn number and any repeats."""
        context = run_context(runtime, self.defaults)
        limit = context.max_parallel_queries
        run, skipped = cap_queries(list(state.get("queries") or []), limit)
        turn = int(state.get("turn") or 0) + 1
        update: dict[str, Any] = {"queries": run, "skipped": skipped, "turn": turn}
        answered: list[SearchResult] = []
        if self.repeats and context.skip_repeats:
            earlier = [r["query"] for r in state.get("search_results") or [] if r["turn"] < turn]
            answered = [
                SearchResult(turn=turn, index=i, query=q, text=REPEATED, titles=[], repeat=True)
                for i, (q, again) in enumerate(zip(run, repeated(run, earlier), strict=True))
                if again
            ]
            update["search_results"] = answered
        if self.chat:
            ids = search_call_ids(state)
            shown = [(r["index"], r["query"], REPEATED) for r in answered]
            over = f"Not searched: over the limit of {limit} sub-queries a turn."
            shown += [(len(run) + j, q, over) for j, q in enumerate(skipped)]
            update["messages"] = [
                branch_result(ids[i], q, text, [], turn=turn, index=i)
                for i, q, text in shown
                if i < len(ids)
            ]
        return update


def dispatch(state: FanOutState, *, chat: bool = False) -> list[Send] | Literal["observe"]:
    """Conditional edge: one ``Send("search", SubQuery)`` per sub-query still to search.

    The branches share a fresh ``group`` key and know the group's ``size``, so the search node
    can search them in one call (:class:`~langgraph_parallel.retrieval.batching.SearchBatcher`).
    A turn whose sub-queries were all answered by ``fan_out`` (repeats) goes to ``observe``.
    With ``chat`` (the agent loop) each branch carries its call's id in the chat (``call_id``).
    """
    turn = int(state.get("turn") or 0)
    answered = {r["index"] for r in state.get("search_results") or [] if r["turn"] == turn}
    todo = [(i, q) for i, q in enumerate(state.get("queries") or []) if i not in answered]
    if not todo:
        return "observe"
    group = uuid.uuid4().hex
    ids = search_call_ids(state) if chat else []
    sends = []
    for i, q in todo:
        payload = SubQuery(turn=turn, index=i, query=q, group=group, size=len(todo))
        if i < len(ids):
            payload["call_id"] = ids[i]
        sends.append(Send("search", payload))
    return sends


def turn_results(state: FanOutState) -> list[SearchResult]:
    """Results of the current turn, in sub-query order."""
    turn = int(state.get("turn") or 0)
    return [r for r in state.get("search_results") or [] if r["turn"] == turn]


class ObserveNode:
    """Join this turn's results into one ``<information>`` observation.

    Args:
        max_parallel_queries: Quoted in the note naming skipped sub-queries.
        as_message: Append the observation to ``transcript`` and update counters (agent loop;
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
            # The model reads the observation next; the chat has each result already (its
            # branch's tool message).
            "transcript": extend_transcript(state, [HumanMessage(text)]),
            # first_turn_parallel: whether the first search fanned out (the paper's
            # decomposition rate of the first search)
            "counters": {
                **turn_counters(len(results), repeats, errors),
                "first_turn_parallel": int(len(results) > 1 and state.get("turn") == 1),
            },
        }
