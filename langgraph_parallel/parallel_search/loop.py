"""ParallelSearch's fan-out step as graph parts: alone, or as the act of the agent loop.

``fan_out --Send per sub-query--> search -> observe``: :func:`add_fan_out` adds it to a
caller's builder (which wires the entry and the exit); :func:`search_act` gives it as the act
of :func:`~langgraph_parallel.agent.loop.add_agent_loop`, so the ParallelSearch graph, its
sequential baseline and every ParallelMuse rollout run the same loop and the same turn.
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.checks import check_model
from langgraph_parallel.agent.context import PassageBudgetOption, SearchContext
from langgraph_parallel.agent.loop import Act, LoopRollouts
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.state import SubQuery
from langgraph_parallel.agent.step import passage_budget
from langgraph_parallel.parallel_search.fan_out import FanOutNode, ObserveNode, dispatch
from langgraph_parallel.parallel_search.search import SearchNode
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
        context: Build-time settings (``top_k``, ``search_timeout``, ``max_parallel_queries``,
            ``passage_sentences``).
        as_message: The agent loop's step: ``observe`` appends the observation to the
            transcript, and each sub-query's result is shown in the chat as it finishes.
        retry: Retry policy of the ``search`` node (transient errors only).
    """
    node = SearchNode(
        as_searcher(search),
        top_k=context.top_k,
        timeout=context.search_timeout,
        retry=retry,
        passage_sentences=context.passage_sentences,
    )
    fan_out = FanOutNode(context.max_parallel_queries, repeats=as_message, chat=as_message)
    builder.add_node("fan_out", as_node(fan_out, "fan_out"))
    # The Send payload (SubQuery) is not the graph state, which the overloads cannot express.
    search_node = cast(Any, as_node(node, "search"))
    builder.add_node("search", search_node, input_schema=SubQuery, retry_policy=retry)
    observe = ObserveNode(context.max_parallel_queries, as_message=as_message)
    builder.add_node("observe", as_node(observe, "observe"))
    # In the agent loop each branch answers its sub-query's call in the chat as it finishes.
    route = partial(dispatch, chat=True) if as_message else dispatch
    builder.add_conditional_edges("fan_out", route, ["search", "observe"])
    builder.add_edge("search", "observe")


def search_act(search: SearchSource, context: SearchContext, *, retry: RetryPolicy | None) -> Act:
    """Return the fan-out step as the agent loop's act (the observation becomes a message).

    Args:
        search: A searcher or LangChain retriever.
        context: Build-time settings (``top_k``, ``search_timeout``, ``max_parallel_queries``,
            ``passage_sentences``).
        retry: Retry policy of the ``search`` node (transient errors only).
    """
    return partial(add_fan_out, search=search, context=context, as_message=True, retry=retry)


def parallel_search_rollouts(
    model: BaseChatModel, search: SearchSource, *, passage_sentences: PassageBudgetOption = "auto"
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

    Raises:
        UserError: ``model`` is not a chat model (``None``, a name).
    """
    check_model(model, "parallel_search_rollouts(model, search)")

    def act(context: SearchContext, retry: RetryPolicy | None) -> Act:
        return search_act(search, context, retry=retry)

    budget = passage_budget(model, passage_sentences)
    return LoopRollouts(model=model, act=act, passage_sentences=budget)
