"""ParallelMuse for any checkpointed LangGraph agent: fork its most uncertain steps, then join.

``parallel_muse_agent(agent)`` wraps a compiled graph whose state holds the conversation as
``messages`` and that has a checkpointer (a ``create_agent`` app, a ``MessagesState`` graph of
your own) in ParallelMuse's graph::

    START -> start -> router --Send per rollout--> rollout -> router ... --Send per report-->
          report -> aggregate -> END

1. ``rollout`` t0 runs the agent once on the input, in a thread of its own (or, given a
   ``from_thread``, reads that finished run);
2. ``router`` ranks its AI messages by the uncertainty of their tokens per region, from the
   logprobs the agent's chat model put in each reply (:mod:`.agent_steps`, the scores of
   :mod:`.uncertainty`), and plans forks under the budget (:mod:`.plan`);
3. each fork re-runs the agent from the checkpoint just before the chosen step, in a new thread,
   so the step and everything after it are generated again (:mod:`.agent_thread`), concurrently,
   every run sampled;
4. ``report`` compresses each trajectory and ``aggregate`` joins them (:mod:`.report`,
   :mod:`.reduce`); the output's ``messages`` are the chosen trajectory's conversation.

Sampling: each run's config carries ``temperature``, ``top_p`` and a seed per trajectory
(:mod:`~langgraph_parallel.models.sampling`), which ``ChatVLLM`` and ``ChatVLLMServer`` apply;
any other model applies them when built with ``init_chat_model(..., configurable_fields=(
"temperature", "top_p", "seed"), config_prefix="sampling")``, else samples as it was built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast, get_args

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import SearchContext, with_defaults
from langgraph_parallel.agent.limits import muse_recursion_limit
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY
from langgraph_parallel.parallel_muse.agent_nodes import (
    AgentAggregateNode,
    AgentRolloutNode,
    AgentRouterNode,
    AgentStartNode,
)
from langgraph_parallel.parallel_muse.agent_state import (
    AgentRolloutInput,
    MuseAgentInput,
    MuseAgentOutput,
    MuseAgentState,
)
from langgraph_parallel.parallel_muse.agent_thread import check_agent
from langgraph_parallel.parallel_muse.context import Join, MuseContext, ReportMode
from langgraph_parallel.parallel_muse.report import ReportNode
from langgraph_parallel.parallel_muse.router import MuseRoute
from langgraph_parallel.parallel_muse.state import ReportTask
from langgraph_parallel.parallel_muse.uncertainty import Mode, Region

__all__ = ["AGENT_SETTINGS", "parallel_muse_agent"]

AGENT_SETTINGS: frozenset[str] = frozenset(
    {f.name for f in dataclasses.fields(MuseContext)}
    - {f.name for f in dataclasses.fields(SearchContext)}
    | {"prompt_style"}
)
"""The :class:`MuseContext` fields the wrapper reads (the agent-loop ones belong to our loop:
the wrapped agent bounds its own steps). ``prompt_style`` picks the report style of ``model``."""


def parallel_muse_agent(
    agent: Any,
    *,
    model: BaseChatModel | None = None,
    budget: int = 8,
    initial_rollouts: int = 1,
    top_k_steps: int = 2,
    samples_per_step: int = 3,
    rounds: int = 1,
    region: Region = "exploration",
    mode: Mode = "ppl",
    join: Join | None = None,
    reports: ReportMode = "distinct",
    temperature: float = 0.6,
    top_p: float = 0.95,
    agent_config: Mapping[str, Any] | None = None,
    keep_threads: bool = True,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str | None = None,
    **settings: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Wrap a checkpointed agent in ParallelMuse (module docstring has the steps).

    Example:
        >>> agent = create_agent(ChatVLLM(model="smollm2-parallel"),  # doctest: +SKIP
        ...     tools=[parallel_search_tool(index)], checkpointer=InMemorySaver())
        >>> muse = parallel_muse_agent(agent, budget=4)  # doctest: +SKIP
        >>> muse.invoke({"messages": [{"role": "user", "content": "..."}]})["answer"]  # +SKIP

    Args:
        agent: A compiled graph with a checkpointer of its own whose state has ``messages``;
            its chat model must return token logprobs (``ChatVLLM``, ``ChatVLLMServer``, or
            ``ChatOpenAI(logprobs=True, top_logprobs=16)``).
        model: Writes reports and is the analyst of ``join="select"``; ``None``: reports are
            extracted from the trajectories and the join votes.
        budget: Most trajectories, the first run included.
        initial_rollouts: Full runs before branching (a given ``from_thread`` is the first).
        top_k_steps: Branch points per round.
        samples_per_step: Forks per branch point.
        rounds: Branching rounds.
        region: ``exploration`` (the tool call), ``reasoning``, ``all`` or ``mixed``.
        mode: ``ppl`` or ``entropy`` (see :class:`MuseContext`).
        join: ``select``, ``majority`` or ``weighted``; ``None``: ``select`` with a ``model``,
            else ``majority``.
        reports: Which trajectories get a report (see :class:`MuseContext`).
        temperature: Sampling temperature of every run of the agent.
        top_p: Nucleus sampling of every run.
        agent_config: Config merged into every run of the agent (``recursion_limit``, more
            ``configurable`` entries).
        keep_threads: ``False`` deletes the threads this run made from the agent's
            checkpointer once joined (for callers that never read them).
        retry_policy: Retries of transient errors; a run that still fails ends its own
            trajectory (``agent_error: ...``) and the others are joined as usual.
        checkpointer: Passed to ``compile`` (one thread per question).
        store: Passed to ``compile``.
        name: Graph name (default ``parallel_muse_agent``).
        **settings: Other :data:`AGENT_SETTINGS` (``min_branch_step``, ``seed``,
            ``report_style``, ``report_max_tokens``, ...).

    Returns:
        A compiled graph: input ``messages``, a ``question`` or ``from_thread`` (a finished
        thread of the agent; :class:`~.agent_state.MuseAgentInput`); output
        :class:`~.agent_state.MuseAgentOutput`. Per-run overrides:
        ``invoke(..., context=MuseContext(...))``.

    Raises:
        UserError: ``agent`` has no checkpointer or no ``messages`` (at once). A model that
            returns no logprobs is not an error: as in the graph, nothing can be ranked, so
            nothing is forked and the budget goes to fresh runs.
        ValueError: An invalid or unknown setting.
    """
    check_agent(agent)
    unknown = sorted(set(settings) - AGENT_SETTINGS)
    if unknown:
        raise ValueError(
            f"Unknown setting(s) {', '.join(unknown)} for an agent's ParallelMuse; valid "
            f"ones are {', '.join(sorted(AGENT_SETTINGS))} (the agent bounds its own steps)."
        )
    join = join or ("select" if model is not None else "majority")
    if join == "select" and model is None:
        raise ValueError("join='select' needs an analyst: pass model=..., or join='majority'.")
    settings.update(
        budget=budget,
        initial_rollouts=initial_rollouts,
        top_k_steps=top_k_steps,
        samples_per_step=samples_per_step,
        rounds=rounds,
        region=region,
        mode=mode,
        join=join,
        reports=reports,
        temperature=temperature,
        top_p=top_p,
    )
    defaults = MuseContext(**settings)
    builder = StateGraph(
        MuseAgentState,
        context_schema=with_defaults(defaults, "MuseContext"),
        input_schema=MuseAgentInput,
        output_schema=MuseAgentOutput,
    )
    retry = retry_policy
    builder.add_node("start", as_node(AgentStartNode(agent), "start"))
    router = as_node(AgentRouterNode(defaults), "router")
    builder.add_node("router", router, destinations=get_args(MuseRoute))
    # Send payloads (AgentRolloutInput, ReportTask) are not the graph state.
    rollout = cast(Any, as_node(AgentRolloutNode(agent, defaults, agent_config, retry), "rollout"))
    builder.add_node("rollout", rollout, input_schema=AgentRolloutInput, retry_policy=retry)
    report = cast(Any, as_node(ReportNode(model, defaults, retry=retry), "report"))
    builder.add_node("report", report, input_schema=ReportTask, retry_policy=retry)
    joined = AgentAggregateNode(agent, model, defaults, retry, keep_threads=keep_threads)
    builder.add_node("aggregate", as_node(joined, "aggregate"), retry_policy=retry)
    builder.add_edge(START, "start")
    builder.add_edge("start", "router")
    builder.add_edge("rollout", "router")
    builder.add_edge("report", "aggregate")
    builder.add_edge("aggregate", END)
    graph = builder.compile(
        checkpointer=checkpointer, store=store, name=name or "parallel_muse_agent"
    )
    return graph.with_config(recursion_limit=muse_recursion_limit(defaults.rounds))
