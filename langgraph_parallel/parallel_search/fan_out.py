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
from langgraph_parallel.parallel_search.context import SearchContext, search_settings
from langgraph_parallel.parallel_search.state import FanOutState, SearchResult, SubQuery
from langgraph_parallel.parallel_search.turn import (
    REPEATED,
    Outcome,
    SearchTurn,
    SubQueryText,
    TurnStart,
)
from langgraph_parallel.retrieval.documents import Passage


class FanOutNode:
    """Start the turn: cap its sub-queries, open a new turn number, and answer repeats.

    The turn is :class:`~.turn.SearchTurn`'s (:meth:`~.turn.SearchTurn.start`).

    Args:
        settings: The turn's build-time settings (a run's context overrides them).
        repeats: Answer a sub-query an earlier turn searched with :data:`~.turn.REPEATED`
            instead of searching it (the agent loop, where the earlier documents are in the
            transcript; the run's ``skip_repeats`` can turn it off).
        chat: Answer the chat's calls of the sub-queries that get no branch (agent loop).
    """

    def __init__(
        self, settings: SearchContext, *, repeats: bool = False, chat: bool = False
    ) -> None:
        self.settings = settings
        self.repeats = repeats
        self.chat = chat

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the capped queries, the skipped ones, the new turn number and any repeats."""
        settings = search_settings(runtime, self.settings)
        number = int(state.get("turn") or 0) + 1
        earlier = [r["query"] for r in state.get("search_results") or [] if r["turn"] < number]
        start = SearchTurn(settings).start(
            list(state.get("queries") or []), earlier if self.repeats else [], number=number
        )
        run, skipped = start.queries, start.skipped
        update: dict[str, Any] = {"queries": run, "skipped": skipped, "turn": number}
        answered = [
            SearchResult(turn=number, index=i, query=q, text=REPEATED, titles=[], repeat=True)
            for i, (q, again) in enumerate(zip(run, start.repeats, strict=True))
            if again
        ]
        if answered:
            update["search_results"] = answered
        if self.chat:
            ids = search_call_ids(state)
            shown = [(r["index"], r["query"], REPEATED) for r in answered]
            limit = settings.max_parallel_queries
            over = f"Not searched: over the limit of {limit} sub-queries a turn."
            shown += [(len(run) + j, q, over) for j, q in enumerate(skipped)]
            update["messages"] = [
                branch_result(ids[i], q, text, [], turn=number, index=i)
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


def branch_outcome(result: SearchResult) -> Outcome | SubQueryText:
    """Return what a branch's result gives the turn's :meth:`~.turn.SearchTurn.finish`.

    Its passages when the branch kept them (``dedupe_passages``: listed once across the turn),
    else the text the branch read (:meth:`~.turn.SearchTurn.read`).
    """
    if "passages" in result and not result.get("error"):
        return [
            Passage(p["id"], p["title"], p["text"], sentence_ends=tuple(p["sentence_ends"]))
            for p in result["passages"]
        ]
    return SubQueryText(result["text"], list(result["titles"]), result.get("error"))


class ObserveNode:
    """Finish the turn: its results joined into one ``<information>`` observation.

    The turn is :class:`~.turn.SearchTurn`'s (:meth:`~.turn.SearchTurn.finish`), from the
    state ``fan_out`` and the branches wrote.

    Args:
        settings: The turn's build-time settings (a run's context overrides them).
        as_message: Append the observation to ``transcript`` and add the turn's counters
            (agent loop); ``False`` only writes ``observation`` (a fan-out step inside a
            user's graph, whose ``search_results`` keep each failure's ``error``).
    """

    def __init__(self, settings: SearchContext, *, as_message: bool = True) -> None:
        self.settings = settings
        self.as_message = as_message

    def __call__(self, state: FanOutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the observation update."""
        results = turn_results(state)
        start = TurnStart(
            number=int(state.get("turn") or 0),
            queries=[r["query"] for r in results],
            skipped=list(state.get("skipped") or []),
            repeats=[bool(r.get("repeat")) for r in results],
        )
        turn = SearchTurn(search_settings(runtime, self.settings))
        end = turn.finish(start, [branch_outcome(r) for r in results])
        if not self.as_message:
            return {"observation": end.observation}
        return {
            "observation": end.observation,
            # The model reads the observation next; the chat has each result already (its
            # branch's tool message).
            "transcript": extend_transcript(state, [HumanMessage(end.observation)]),
            "counters": end.counters,
        }
