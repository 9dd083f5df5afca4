"""ParallelSearch's state: a sub-query's branch payload, its result, and the fan-out's keys.

The agent loop's own keys are :class:`~langgraph_parallel.agent.state.LoopState`;
:class:`ParallelSearchState` is the loop's state with the fan-out's, the state the act
declares for the loop's graph (:func:`~.loop.search_act`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

from langgraph_parallel.agent.state import LoopInput, LoopOutput, LoopState

__all__ = [
    "FanOutState",
    "ParallelSearchInput",
    "ParallelSearchOutput",
    "ParallelSearchState",
    "SearchResult",
    "SubQuery",
    "merge_results",
]


def merge_results(
    left: Sequence[Mapping[str, Any]] | None, right: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, Any]]:
    """Join search results from parallel branches, keyed and ordered by ``(turn, index)``.

    A later write for the same key replaces the earlier one, so a retried branch cannot
    duplicate its result.
    """
    merged: dict[tuple[int, int], dict[str, Any]] = {}
    for item in [*(left or []), *(right or [])]:
        merged[(int(item["turn"]), int(item["index"]))] = dict(item)
    return [merged[key] for key in sorted(merged)]


class SubQuery(TypedDict):
    """Payload of one ``Send("search", ...)`` branch.

    ``group`` (unique per fan-out) and ``size`` (its sub-query count) let the search node
    search the branches of one fan-out in one call; a payload without them searches alone.
    ``call_id`` (the agent loop's) is the id of the sub-query's call in the chat: the branch
    answers it there as it finishes.
    """

    turn: int
    index: int
    query: str
    group: NotRequired[str]
    size: NotRequired[int]
    call_id: NotRequired[str]


class SearchResult(TypedDict):
    """What one search branch returns: its documents, formatted, and their titles.

    ``passages`` (each ``{"id", "title", "text", "sentence_ends"}``) only when the turn lists
    a passage once (``dedupe_passages``): ``observe`` needs every sub-query's passages to do it.
    """

    turn: int
    index: int
    query: str
    text: str
    titles: list[str]
    error: NotRequired[str | None]
    repeat: NotRequired[bool]
    """Searched in an earlier turn, so not searched again (ParallelSearch's ``fan_out``)."""
    passages: NotRequired[list[dict[str, Any]]]


class FanOutState(TypedDict):
    """State of the fan-out search step, usable alone inside a user's graph.

    Attributes:
        queries: Sub-queries to run this step (already split; capped by the fan-out node).
        turn: Search round number, used to key results.
        skipped: Sub-queries over the per-turn limit, reported in the observation.
        search_results: Joined branch results (deterministic order).
        observation: The ``<information>...</information>`` text for this round.
    """

    queries: list[str]
    turn: NotRequired[int]
    skipped: NotRequired[list[str]]
    search_results: NotRequired[Annotated[list[SearchResult], merge_results]]
    observation: NotRequired[str]


ParallelSearchInput = LoopInput
"""Input of the ParallelSearch graphs: the loop's (a chat, or a question)."""


class ParallelSearchOutput(LoopOutput):
    """The loop's output with the run's ``search_results``.

    ``counters`` also holds the turn's (:meth:`~.turn.SearchTurn.finish`): ``turns``,
    ``searches``, ``sub_queries``, ``parallel_turns``, ``first_turn_parallel`` and, when there
    were some, ``repeat_skips``, ``search_errors`` and ``duplicate_passages``.
    """

    search_results: list[SearchResult]


class ParallelSearchState(LoopState, FanOutState):
    """Full state of the ParallelSearch agent loop: the loop's keys and the fan-out's."""
