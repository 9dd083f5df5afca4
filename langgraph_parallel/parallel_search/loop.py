"""ParallelSearch's fan-out step as graph parts: alone, or as the act of the agent loop.

``fan_out --Send per sub-query--> search -> observe``: :func:`add_fan_out` adds it to a
caller's builder (which wires the entry and the exit); :func:`search_act` gives it as the act
of :func:`~langgraph_parallel.agent.loop.add_agent_loop`, so the ParallelSearch graph, its
sequential baseline and every ParallelMuse rollout run the same loop and the same turn.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from langgraph.types import Overwrite, RetryPolicy

from langgraph_parallel.agent.checks import check_model
from langgraph_parallel.agent.context import LoopContext, PassageBudgetOption
from langgraph_parallel.agent.loop import Act, LoopRollouts
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.step import passage_budget
from langgraph_parallel.parallel_search.context import SearchContext
from langgraph_parallel.parallel_search.fan_out import FanOutNode, ObserveNode, dispatch
from langgraph_parallel.parallel_search.search import SearchNode
from langgraph_parallel.parallel_search.state import (
    ParallelSearchOutput,
    ParallelSearchState,
    SubQuery,
)
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES
from langgraph_parallel.retrieval.search import SearchSource, as_searcher

__all__ = ["add_fan_out", "parallel_search_rollouts", "search_act"]


def add_fan_out(
    builder: StateGraph[Any, Any, Any, Any],
    search: SearchSource,
    context: SearchContext,
    *,
    as_message: bool,
    retry: RetryPolicy | None,
) -> None:
    """Add ``fan_out -> search (one Send per sub-query) -> observe`` to ``builder``.

    Args:
        builder: The graph being built; its state needs the :class:`FanOutState` keys.
        search: A searcher or LangChain retriever.
        context: Build-time settings of the turn (one object, held by every node).
        as_message: The agent loop's step: ``observe`` appends the observation to the
            transcript, and each sub-query's result is shown in the chat as it finishes.
        retry: Retry policy of the ``search`` node (transient errors only).
    """
    node = SearchNode(as_searcher(search), context, retry=retry)
    fan_out = FanOutNode(context, repeats=as_message, chat=as_message)
    builder.add_node("fan_out", as_node(fan_out, "fan_out"))
    # The Send payload (SubQuery) is not the graph state, which the overloads cannot express.
    search_node = cast(Any, as_node(node, "search"))
    builder.add_node("search", search_node, input_schema=SubQuery, retry_policy=retry)
    observe = ObserveNode(context, as_message=as_message)
    builder.add_node("observe", as_node(observe, "observe"))
    # In the agent loop each branch answers its sub-query's call in the chat as it finishes.
    route = partial(dispatch, chat=True) if as_message else dispatch
    builder.add_conditional_edges("fan_out", route, ["search", "observe"])
    builder.add_edge("search", "observe")


def _fresh() -> dict[str, Any]:
    """Return the fan-out's keys as a thread's new question starts them."""
    return {"search_results": Overwrite([]), "turn": 0, "skipped": [], "observation": ""}


def search_act(search: SearchSource, context: SearchContext, *, retry: RetryPolicy | None) -> Act:
    """Return the fan-out step as the agent loop's act (the observation becomes a message).

    Entered at ``fan_out``, left from ``observe``, over :class:`~.state.ParallelSearchState`.

    Args:
        search: A searcher or LangChain retriever.
        context: Build-time settings of the loop and the turn.
        retry: Retry policy of the ``search`` node (transient errors only).
    """
    add = partial(add_fan_out, search=search, context=context, as_message=True, retry=retry)
    return Act(
        add=add,
        entry="fan_out",
        exit="observe",
        state=ParallelSearchState,
        output=ParallelSearchOutput,
        fresh=_fresh,
    )


def parallel_search_rollouts(
    model: BaseChatModel,
    search: SearchSource,
    *,
    passage_sentences: PassageBudgetOption = "auto",
    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
    dedupe_passages: bool = False,
) -> LoopRollouts:
    """Return the ParallelSearch loop as ParallelMuse's rollouts.

    Example:
        >>> muse = create_parallel_muse_graph(  # doctest: +SKIP
        ...     parallel_search_rollouts(ChatVLLM(model="smollm2-parallel"), default_index()),
        ...     context=MuseContext(budget=4),
        ... )

    Args:
        model: The chat model of every step.
        search: A searcher or LangChain retriever.
        passage_sentences: Show each retrieved passage as its title and first N sentences;
            ``auto`` (default): the budget the model declares, as the ParallelSearch graph's;
            ``None``: whole passages.
        max_parallel_queries: Sub-queries searched per turn (the turn's own setting: the
            loop's settings, which ParallelMuse passes, do not hold it).
        dedupe_passages: List a passage several sub-queries found once (:class:`SearchContext`).

    Raises:
        UserError: ``model`` is not a chat model (``None``, a name).
        ValueError: ``max_parallel_queries`` below 1.
    """
    check_model(model, "parallel_search_rollouts(model, search)")
    turn = SearchContext(max_parallel_queries=max_parallel_queries, dedupe_passages=dedupe_passages)

    def act(context: LoopContext, retry: RetryPolicy | None) -> Act:
        loop = {f.name: getattr(context, f.name) for f in dataclasses.fields(LoopContext)}
        return search_act(search, dataclasses.replace(turn, **loop), retry=retry)

    budget = passage_budget(model, passage_sentences)
    return LoopRollouts(model=model, act=act, passage_sentences=budget)
