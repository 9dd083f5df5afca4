"""The agent loop as graph parts, written once for every graph that runs it.

``think -> fan_out --Send per sub-query--> search -> observe -> think ... -> answer``: the
ParallelSearch graph, its sequential baseline and every ParallelMuse rollout (a subgraph started
from a message prefix) are built by :func:`add_agent_loop`; the fan-out step alone by
:func:`add_fan_out`. Both add nodes to a caller's builder, which wires the entry and the exit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import SearchContext
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.state import SubQuery
from langgraph_parallel.agent.think import THINK_ROUTES, ThinkNode, answer_node
from langgraph_parallel.parallel_search.fan_out import FanOutNode, ObserveNode, dispatch
from langgraph_parallel.parallel_search.search import SearchNode
from langgraph_parallel.retrieval.search import SearchSource, as_searcher

__all__ = ["add_agent_loop", "add_fan_out"]


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
        context: Build-time settings (``top_k``, ``search_timeout``, ``max_parallel_queries``,
            ``passage_sentences``).
        as_message: ``observe`` appends the observation to ``messages`` (agent loop).
        retry: Retry policy of the ``search`` node (transient errors only).
    """
    node = SearchNode(
        as_searcher(search),
        top_k=context.top_k,
        timeout=context.search_timeout,
        retry=retry,
        passage_sentences=context.passage_sentences,
    )
    builder.add_node("fan_out", as_node(FanOutNode(context.max_parallel_queries), "fan_out"))
    # The Send payload (SubQuery) is not the graph state, which the overloads cannot express.
    search_node = cast(Any, as_node(node, "search"))
    builder.add_node("search", search_node, input_schema=SubQuery, retry_policy=retry)
    observe = ObserveNode(context.max_parallel_queries, as_message=as_message)
    builder.add_node("observe", as_node(observe, "observe"))
    builder.add_conditional_edges("fan_out", dispatch, ["search"])
    builder.add_edge("search", "observe")


def add_agent_loop(
    builder: StateGraph[Any, Any, Any, Any],
    model: BaseChatModel,
    search: SearchSource,
    context: SearchContext,
    *,
    retry: RetryPolicy | None,
    record_steps: bool = False,
    answer: Callable[..., Any] = answer_node,
) -> None:
    """Add the Search-R1 step loop (``think``, the fan-out step, ``answer``) to ``builder``.

    The caller adds the edge into ``think`` and the edge out of ``answer``. ``think`` and
    ``search`` run under ``retry`` (LangGraph retries the node; its last failure becomes the
    run's ``stop_reason`` or the search's observation).

    Args:
        builder: The graph being built; its state needs the ``ParallelSearchState`` keys.
        model: Any LangChain chat model.
        search: A searcher or LangChain retriever.
        context: Build-time settings of the loop.
        retry: Retry policy of ``think`` and ``search``.
        record_steps: ``think`` also writes ``step_records`` (token logprobs per step).
        answer: The node run when the loop ends (default: :func:`answer_node`); it must set
            ``answer`` and ``stop_reason`` as that one does.
    """
    think = ThinkNode(model, context, retry=retry, record_steps=record_steps)
    builder.add_node(
        "think", as_node(think, "think"), retry_policy=retry, destinations=THINK_ROUTES
    )
    add_fan_out(builder, search, context, as_message=True, retry=retry)
    builder.add_node("answer", as_node(answer, "answer"))
    builder.add_edge("observe", "think")
