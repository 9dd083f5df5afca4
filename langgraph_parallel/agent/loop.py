"""The Search-R1 step loop, written once for every graph that runs it: its parts and its graph.

``think -> <act> -> think ... -> answer``: ``think`` calls the model once and routes with
``Command``; what a search step does between two thinks is the *act*, which the caller gives
(:class:`Act`: its nodes, the entry and exit nodes it declares, its state): ParallelSearch's
fan-out (``fan_out --Send per sub-query--> search -> observe``,
:func:`langgraph_parallel.parallel_search.loop.search_act`) for its graph, its sequential
baseline and every ParallelMuse rollout. The loop knows neither paper: ParallelMuse gets the
loop as :class:`LoopRollouts` (a model and the act), built by the paper that owns the act, and
forks the loop's graph (:func:`create_loop_graph`) through its checkpoints as it forks any agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import LoopContext, with_defaults
from langgraph_parallel.agent.limits import recursion_limit_for
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.state import LoopInput, LoopOutput, LoopState
from langgraph_parallel.agent.think import ThinkNode, answer_node

__all__ = ["Act", "LoopRollouts", "add_agent_loop", "create_loop_graph"]


@dataclass(frozen=True)
class Act:
    """What a search step runs between two thinks, as its owner declares it.

    Attributes:
        add: Adds the act's nodes (and the edges between them) to a builder.
        entry: The node ``think`` routes a search step to (it reads the state's ``queries``).
        exit: The act's last node, whose update appends the observation to ``transcript`` and
            shows the step's results in the chat (:func:`~.chat.extend_transcript`,
            :func:`~.chat.branch_result`); the loop adds its edge back to ``think``.
        state: The graph's state schema: :class:`~.state.LoopState` with the act's keys.
        output: The graph's output schema: :class:`~.state.LoopOutput` with the act's keys.
        fresh: Returns the update that clears the act's keys when a thread's new question
            starts (``think`` writes it with the loop's own).
    """

    add: Callable[[StateGraph[Any, Any, Any, Any]], None]
    entry: str
    exit: str
    state: type[Any] = LoopState
    output: type[Any] = LoopOutput
    fresh: Callable[[], dict[str, Any]] = dict


@dataclass(frozen=True)
class LoopRollouts:
    """The agent loop as ParallelMuse's rollouts: the model that steps and the act it runs.

    Built by the paper that owns the act (``parallel_search_rollouts(model, search)``) and given
    to :func:`~langgraph_parallel.parallel_muse.graph.create_parallel_muse_graph`, which runs
    each rollout as this loop's graph (:meth:`graph`) and forks it from its checkpoints.

    Attributes:
        model: The chat model of every step (and, by default, of reports and the analyst).
        act: Returns the act for the run's settings and retry policy.
        passage_sentences: How the act shows each retrieved passage: its title and first N
            sentences, or ``None`` for whole passages (already resolved from ``auto``).
    """

    model: BaseChatModel
    act: Callable[[LoopContext, RetryPolicy | None], Act]
    passage_sentences: int | None = None

    def graph(
        self, context: LoopContext, retry: RetryPolicy | None, *, checkpointer: Any = None
    ) -> CompiledStateGraph[Any, Any, Any, Any]:
        """Return the loop's graph for ``context``, each step's token logprobs kept.

        Args:
            context: Build-time settings of the loop (the act adds its own); a run's own
                context must be of the same type to be read (``run_context``), so pass a
                plain :class:`~.context.LoopContext`.
            retry: Retry policy of the loop's nodes.
            checkpointer: Passed to ``compile`` (``None``: forked through the running one).
        """
        act = self.act(context, retry)
        return create_loop_graph(
            self.model,
            context,
            act,
            retry=retry,
            keep_logprobs=True,
            checkpointer=checkpointer,
            name="rollout",
        )


def create_loop_graph(
    model: BaseChatModel,
    context: LoopContext,
    act: Act,
    *,
    retry: RetryPolicy | None,
    keep_logprobs: bool = False,
    checkpointer: Any = None,
    store: Any = None,
    name: str,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the loop as a graph: ``START -> think -> <act> -> think ... -> answer -> END``.

    Input ``{"messages": [...]}`` or ``{"question": str}`` (:class:`~.state.LoopInput`),
    output the act's (:attr:`Act.output`); per-run
    overrides through ``invoke(..., context=...)`` (unset fields keep ``context``). Its
    ``recursion_limit`` defaults to one that fits ``context.max_turns`` turns.

    Args:
        model: Any LangChain chat model.
        context: Build-time settings (the graph's ``context_schema`` defaults).
        act: What a search step runs between two thinks.
        retry: Retry policy of ``think`` (and what the act applies to its own nodes).
        keep_logprobs: Keep each step's token logprobs in its message
            (:class:`~.think.ThinkNode`).
        checkpointer: Passed to ``compile``.
        store: Passed to ``compile``.
        name: Graph name.
    """
    builder = StateGraph(
        act.state,
        context_schema=with_defaults(context),
        input_schema=LoopInput,
        output_schema=act.output,
    )
    add_agent_loop(builder, model, context, act, retry=retry, keep_logprobs=keep_logprobs)
    builder.add_edge(START, "think")
    builder.add_edge("answer", END)
    graph = builder.compile(checkpointer=checkpointer, store=store, name=name)
    # A config passed to invoke/stream overrides this limit; it only replaces the default.
    return graph.with_config(recursion_limit=recursion_limit_for(context.max_turns))


def add_agent_loop(
    builder: StateGraph[Any, Any, Any, Any],
    model: BaseChatModel,
    context: LoopContext,
    act: Act,
    *,
    retry: RetryPolicy | None,
    keep_logprobs: bool = False,
) -> None:
    """Add the step loop (``think``, the act, ``answer``) to ``builder``.

    The caller adds the edge into ``think`` and the edge out of ``answer``. ``think`` runs
    under ``retry`` (LangGraph retries the node; its last failure becomes the run's
    ``stop_reason``).

    Args:
        builder: The graph being built; its state needs the loop's keys (``messages``,
            ``transcript``, ``steps``, ``answer``, ``stop_reason``, ``counters``) and the act's.
        model: Any LangChain chat model.
        context: Build-time settings of the loop.
        act: What a search step runs between two thinks (see :class:`Act`).
        retry: Retry policy of ``think`` (and what the act applies to its own nodes).
        keep_logprobs: ``think`` keeps each step's token logprobs in its message.
    """
    think = ThinkNode(
        model, context, retry=retry, keep_logprobs=keep_logprobs, act=act.entry, fresh=act.fresh
    )
    # Where think may route, so Studio draws the edges.
    routes = (act.entry, "think", "answer", "__end__")
    builder.add_node("think", as_node(think, "think"), retry_policy=retry, destinations=routes)
    act.add(builder)
    builder.add_node("answer", as_node(answer_node, "answer"))
    builder.add_edge(act.exit, "think")
