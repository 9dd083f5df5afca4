"""The Search-R1 step loop as graph parts, written once for every graph that runs it.

``think -> <act> -> think ... -> answer``: ``think`` calls the model once and routes with
``Command``; what a search step does between two thinks is the *act*, which the caller adds
(:data:`Act`): ParallelSearch's fan-out (``fan_out --Send per sub-query--> search -> observe``,
:func:`langgraph_parallel.parallel_search.loop.search_act`) for its graph, its sequential
baseline and every ParallelMuse rollout. The loop knows neither paper: ParallelMuse gets the
loop as :class:`LoopRollouts` (a model and the act), built by the paper that owns the act.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import SearchContext
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.think import THINK_ROUTES, ThinkNode, answer_node

__all__ = ["ACT_ENTRY", "ACT_EXIT", "Act", "LoopRollouts", "add_agent_loop"]

ACT_ENTRY = "fan_out"
"""The node ``think`` routes a search step to: the act's first node."""
ACT_EXIT = "observe"
"""The act's last node; the loop adds its edge back to ``think``."""

Act = Callable[[StateGraph[Any, Any, Any, Any]], None]
"""Adds the act's nodes to a builder, entered at :data:`ACT_ENTRY`, leaving from
:data:`ACT_EXIT` (whose update appends the observation to ``messages``)."""


@dataclass(frozen=True)
class LoopRollouts:
    """The agent loop as ParallelMuse's rollouts: the model that steps and the act it runs.

    Built by the paper that owns the act (``parallel_search_rollouts(model, search)``) and given
    to :func:`~langgraph_parallel.parallel_muse.graph.create_parallel_muse_graph`, which runs
    each rollout as this loop, started from its branch's message prefix.

    Attributes:
        model: The chat model of every step (and, by default, of reports and the analyst).
        act: Returns the act for the run's settings and retry policy.
        passage_sentences: How the act shows each retrieved passage: its title and first N
            sentences, or ``None`` for whole passages (already resolved from ``auto``).
    """

    model: BaseChatModel
    act: Callable[[SearchContext, RetryPolicy | None], Act]
    passage_sentences: int | None = None


def add_agent_loop(
    builder: StateGraph[Any, Any, Any, Any],
    model: BaseChatModel,
    context: SearchContext,
    act: Act,
    *,
    retry: RetryPolicy | None,
    record_steps: bool = False,
    answer: Callable[..., Any] = answer_node,
) -> None:
    """Add the step loop (``think``, the act, ``answer``) to ``builder``.

    The caller adds the edge into ``think`` and the edge out of ``answer``. ``think`` runs
    under ``retry`` (LangGraph retries the node; its last failure becomes the run's
    ``stop_reason``).

    Args:
        builder: The graph being built; its state needs the loop's keys (``messages``,
            ``steps``, ``answer``, ``stop_reason``, ``counters``) and the act's.
        model: Any LangChain chat model.
        context: Build-time settings of the loop.
        act: What a search step runs between two thinks (see :data:`Act`).
        retry: Retry policy of ``think`` (and what the act applies to its own nodes).
        record_steps: ``think`` also writes ``step_records`` (token logprobs per step).
        answer: The node run when the loop ends (default: :func:`answer_node`); it must set
            ``answer`` and ``stop_reason`` as that one does.
    """
    think = ThinkNode(model, context, retry=retry, record_steps=record_steps)
    builder.add_node(
        "think", as_node(think, "think"), retry_policy=retry, destinations=THINK_ROUTES
    )
    act(builder)
    builder.add_node("answer", as_node(answer, "answer"))
    builder.add_edge(ACT_EXIT, "think")
