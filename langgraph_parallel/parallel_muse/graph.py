"""ParallelMuse's one door: fork rollouts at their most uncertain steps, report, join.

:func:`create_parallel_muse_graph` takes the rollouts to fork, either the agent loop
(:class:`~langgraph_parallel.agent.loop.LoopRollouts`, e.g. ``parallel_search_rollouts(model,
search)``) or any checkpointed agent (``create_agent``, a ``MessagesState`` graph of your own),
and its settings as one :class:`~.context.MuseContext`. One graph runs both::

    START -> router --Send per rollout--> rollout -> router ... --Send per report--> report
          -> aggregate -> END        (router -> aggregate directly when no report is needed)

A rollout is one run of the agent in a thread of its own: the router first reads the input (a
question, messages, or a finished ``from_thread``), the first run goes on the input, and each
fork re-runs the agent from the checkpoint just before the chosen step (:mod:`.agent_thread`,
LangGraph's time travel); the agent's replies are scored from the logprobs its chat model put
in them (:mod:`.agent_steps`) and the output's ``messages`` are the chosen trajectory's
conversation. The agent loop is such an agent: its graph
(:func:`~langgraph_parallel.agent.loop.create_loop_graph`) keeps each step's logprobs in its
messages, and runs with the loop's fields of the run's context.

Sampling: each run's config carries ``temperature``, ``top_p`` and a seed per trajectory
(:mod:`~langgraph_parallel.models.sampling`), which the agent loop, ``ChatVLLM`` and
``ChatVLLMServer`` apply; any other model applies them when built with ``init_chat_model(...,
configurable_fields=("temperature", "top_p", "seed"), config_prefix="sampling")``, else samples
as it was built.

The independent-rollouts baseline is the same door with ``rounds=0``
(:func:`~langgraph_parallel.baselines.rollouts.independent_rollouts`). Budget and rounds:
:mod:`.plan`; scores and branch points: :mod:`.uncertainty`; joins: :mod:`.reduce`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast, get_args

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.checks import check_model
from langgraph_parallel.agent.context import loop_settings, with_defaults
from langgraph_parallel.agent.loop import LoopRollouts
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY, UserError
from langgraph_parallel.parallel_muse.agent_nodes import (
    AgentAggregateNode,
    AgentInput,
    AgentRolloutNode,
)
from langgraph_parallel.parallel_muse.agent_thread import check_agent, forkable, has_checkpointer
from langgraph_parallel.parallel_muse.candidates import BranchSampler
from langgraph_parallel.parallel_muse.context import (
    MuseContext,
    muse_recursion_limit,
    resolve_join,
)
from langgraph_parallel.parallel_muse.report import JUDGE_CANNOT_CONTINUE, ReportNode
from langgraph_parallel.parallel_muse.router import MuseRoute, RouterNode
from langgraph_parallel.parallel_muse.state import (
    MuseInput,
    MuseOutput,
    MuseState,
    ReportTask,
    RolloutInput,
)

__all__ = ["create_parallel_muse_graph"]


def create_parallel_muse_graph(
    rollouts: LoopRollouts | Any,
    *,
    context: MuseContext | None = None,
    model: BaseChatModel | None = None,
    agent_config: Mapping[str, Any] | None = None,
    keep_threads: bool = True,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build ParallelMuse over ``rollouts``: fork at the most uncertain steps, report, join.

    Example:
        >>> muse = create_parallel_muse_graph(  # doctest: +SKIP
        ...     parallel_search_rollouts(ChatVLLM(model="smollm2-parallel"), default_index()),
        ...     context=MuseContext(budget=4),
        ... )
        >>> muse.invoke({"question": "..."})["answer"]  # doctest: +SKIP
        >>> agent = create_agent(model, tools=[...], checkpointer=InMemorySaver())  # +SKIP
        >>> create_parallel_muse_graph(agent).invoke({"messages": [...]})  # doctest: +SKIP

    Args:
        rollouts: What a rollout runs. The agent loop (:class:`LoopRollouts`), or a compiled
            graph whose state has ``messages``, forked through its own checkpointer, else
            this graph's ``checkpointer``, else (LangGraph Server's graphs have none when
            built) one of this graph's own, whose threads are deleted once joined.
            Uncertainty needs token logprobs in ``response_metadata["logprobs"]["content"]``
            (``ChatVLLM``, ``ChatVLLMServer``, or ``ChatOpenAI(logprobs=True,
            top_logprobs=16)``); without them no step is forked and the budget goes to fresh
            rollouts.
        context: Every setting (:class:`MuseContext`; default ``MuseContext()``; its
            ``join="auto"`` is resolved here: ``select`` with a chat-model analyst, else
            ``majority``). Over an agent, the loop's fields (``max_turns``, ``top_k``, ...) are
            not read: the agent bounds its own steps.
            ``rounds=0`` is the independent-rollouts baseline. Over the loop, the build-time
            ``passage_sentences`` is the rollouts' (``parallel_search_rollouts(...,
            passage_sentences=...)``, the model's declared budget by default).
        model: Writes reports and is the analyst of ``join="select"``; default: the loop's
            model, and over an agent none (reports are extracted and the join votes). Any
            other chat model is a judge of your choice (a larger served model, ``ChatOpenAI``,
            ``ChatAnthropic``): it reads in its own prompt style, at the sampling it was built
            with, and its tokens are counted apart from the agent's (``report_*``,
            ``aggregate_*``; :mod:`.report`).
        agent_config: Config merged into every run of the agent (``recursion_limit``, more
            ``configurable`` entries).
        keep_threads: ``False`` deletes the threads this run made from the agent's
            checkpointer once joined (for callers that never read them). Rollouts that keep
            their threads in a checkpointer of this graph's own (the loop's, or an agent's
            without one, when ``checkpointer`` is not a saver) always have them deleted.
        retry_policy: Retries of transient model and search errors (``None``: none); see
            :mod:`~langgraph_parallel.errors`. A rollout that still fails ends its own
            trajectory (``model_error: ...`` or ``agent_error: ...``) and the others are joined.
        checkpointer: Passed to ``compile``; use one thread per question. It also holds the
            rollouts' threads when the agent has no checkpointer of its own (a saver; with
            ``None`` or ``True`` they live in one of this graph's own).
        store: Passed to ``compile``.
        name: Graph name (default ``parallel_muse``).

    Returns:
        A compiled graph: input a ``question``, ``messages`` or a ``from_thread``
        (:class:`~.state.MuseInput`; over the loop, messages give their last user message as
        the question), output :class:`~.state.MuseOutput`. Per-run overrides: ``invoke(...,
        context=MuseContext(...))``. A compiled graph is a node: add it to your own
        ``StateGraph`` (shared keys ``question`` and ``answer``) with ``add_node``.

    Raises:
        UserError: ``rollouts`` is ``None`` or a graph whose state has no ``messages``, the
            loop's model (or ``model``) is not a chat model (``None``, a name), a judge is
            asked for ``report_style="continue"``, or ``branch_candidates`` is set over an
            agent that is not the loop.
        ValueError: ``join="select"`` with no analyst.
    """
    if rollouts is None:
        raise UserError(
            "create_parallel_muse_graph needs rollouts, got None: pass "
            "parallel_search_rollouts(model, search), or a compiled agent (create_agent(...))."
        )
    if isinstance(rollouts, LoopRollouts):
        check_model(rollouts.model, "create_parallel_muse_graph: the rollouts' LoopRollouts.model")
    if model is not None:
        check_model(model, "create_parallel_muse_graph(model=...)")
    name = name or "parallel_muse"
    settings = context or MuseContext()
    loop = isinstance(rollouts, LoopRollouts)
    analyst: BaseChatModel | None
    # The rollouts are forked through a checkpointer given here, when they are built: their
    # own, else this graph's, else (LangGraph Server wants the graphs it serves without one)
    # one of this graph's own, whose threads are deleted once joined. The running graph's
    # checkpointer is not read: LangGraph keeps it under an internal config key.
    given = checkpointer if isinstance(checkpointer, BaseCheckpointSaver) else None
    if isinstance(rollouts, LoopRollouts):
        analyst = model or rollouts.model
        # The loop observes as its rollouts were built to (a run's context may still override).
        settings = dataclasses.replace(settings, passage_sentences=rollouts.passage_sentences)
        own = InMemorySaver() if given is None else None
        # The loop reads SearchContext settings: each run passes its own (AgentRolloutNode).
        saver = given if given is not None else own
        agent = rollouts.graph(loop_settings(settings), retry_policy, checkpointer=saver)
    else:
        check_agent(rollouts)
        own = None if has_checkpointer(rollouts) or given is not None else InMemorySaver()
        agent, analyst = forkable(rollouts, given if given is not None else own), model
    keep_threads = keep_threads and own is None
    if not loop and settings.branch_candidates:
        raise UserError(
            "branch_candidates needs the agent loop's rollouts (parallel_search_rollouts(...)): "
            "ParallelMuse cannot rebuild another agent's prompts to draw its steps; leave it 0."
        )
    # A judge is any analyst that is not the loop's own model: the run's prompt_style and the
    # greedy sampling the nodes set are the rollouts', not the judge's.
    judge = analyst is not None and not (loop and analyst is rollouts.model)
    if judge and settings.report_style == "continue":
        raise UserError(JUDGE_CANNOT_CONTINUE)
    settings = dataclasses.replace(settings, join=resolve_join(settings.join, analyst))
    if settings.join == "select" and analyst is None:
        raise ValueError(
            "join='select' needs an analyst: pass model=..., or "
            "context=MuseContext(join='majority')."
        )
    builder = StateGraph(
        MuseState,
        context_schema=with_defaults(settings, "MuseContext"),
        input_schema=MuseInput,
        output_schema=MuseOutput,
    )
    retry = retry_policy
    # Distinct branches rebuild the loop's step prompts; an agent's are its own.
    sampler = BranchSampler(agent, rollouts.model) if isinstance(rollouts, LoopRollouts) else None
    router = as_node(RouterNode(settings, AgentInput(agent, ask=loop), sampler), "router")
    builder.add_node("router", router, destinations=get_args(MuseRoute))
    # Send payloads (RolloutInput, ReportTask) are not the graph state.
    node = AgentRolloutNode(agent, settings, agent_config, retry, loop=loop)
    rollout = cast(Any, as_node(node, "rollout"))
    builder.add_node("rollout", rollout, input_schema=RolloutInput, retry_policy=retry)
    writer = ReportNode(analyst, settings, retry=retry, judge=judge)
    report = cast(Any, as_node(writer, "report"))
    builder.add_node("report", report, input_schema=ReportTask, retry_policy=retry)
    joined = AgentAggregateNode(agent, analyst, settings, retry, keep_threads=keep_threads)
    joined.judge = judge
    builder.add_node("aggregate", as_node(joined, "aggregate"), retry_policy=retry)
    builder.add_edge(START, "router")
    builder.add_edge("rollout", "router")
    builder.add_edge("report", "aggregate")
    builder.add_edge("aggregate", END)
    graph = builder.compile(checkpointer=checkpointer, store=store, name=name)
    return graph.with_config(recursion_limit=muse_recursion_limit(settings.rounds))
