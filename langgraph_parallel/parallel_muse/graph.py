"""ParallelMuse graphs: uncertainty-guided partial rollouts, and the independent-rollouts baseline.

Shape (both graphs; the baseline just never branches)::

    START -> router --Send per rollout--> rollout -> router ... --Send per report--> report
          -> aggregate -> END        (router -> aggregate directly when no report is needed)

``rollout`` is a subgraph: the agent loop of ParallelSearch, started from the branch's message
prefix (:mod:`~langgraph_parallel.parallel_muse.rollout`); Studio's xray drawing shows its steps.

Budget and rounds: :mod:`~langgraph_parallel.parallel_muse.plan`; scores and branch points:
:mod:`~.uncertainty`; joins: :mod:`~.reduce`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast, get_args

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import with_defaults
from langgraph_parallel.agent.limits import muse_recursion_limit, recursion_limit_for
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.state import require_state_keys
from langgraph_parallel.agent.step import passage_budget
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY
from langgraph_parallel.parallel_muse.context import Join, MuseContext, ReportMode
from langgraph_parallel.parallel_muse.reduce import AggregateNode
from langgraph_parallel.parallel_muse.report import ReportNode
from langgraph_parallel.parallel_muse.rollout import create_rollout_graph
from langgraph_parallel.parallel_muse.router import MuseRoute, RouterNode
from langgraph_parallel.parallel_muse.state import MuseInput, MuseOutput, MuseState, ReportTask
from langgraph_parallel.parallel_muse.uncertainty import Mode, Region
from langgraph_parallel.retrieval.search import SearchSource

__all__ = ["add_parallel_muse", "create_parallel_muse_graph", "create_rollouts_graph"]


def _build(
    model: BaseChatModel,
    search: SearchSource,
    settings: Mapping[str, Any],
    *,
    retry: RetryPolicy | None,
    checkpointer: Any,
    store: Any,
    name: str,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    fields = {f.name for f in dataclasses.fields(MuseContext)}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise ValueError(
            f"Unknown ParallelMuse setting(s) {', '.join(unknown)}; valid ones are the "
            f"MuseContext fields: {', '.join(sorted(fields))}."
        )
    # Rollouts are the ParallelSearch loop: the same budget rule (``auto``: the model's).
    budget = passage_budget(model, settings.get("passage_sentences", "auto"))
    defaults = MuseContext(**{**settings, "passage_sentences": budget})
    builder = StateGraph(
        MuseState,
        context_schema=with_defaults(defaults, "MuseContext"),
        input_schema=MuseInput,
        output_schema=MuseOutput,
    )
    # Send payloads (ReportTask) are not the graph state; the overloads cannot say so.
    router = as_node(RouterNode(defaults), "router")
    builder.add_node("router", router, destinations=get_args(MuseRoute))
    builder.add_node("rollout", create_rollout_graph(model, search, defaults, retry=retry))
    report = cast(Any, as_node(ReportNode(model, defaults, retry=retry), "report"))
    builder.add_node("report", report, input_schema=ReportTask, retry_policy=retry)
    aggregate = as_node(AggregateNode(model, defaults, retry=retry), "aggregate")
    builder.add_node("aggregate", aggregate, retry_policy=retry)
    builder.add_edge(START, "router")
    builder.add_edge("rollout", "router")
    builder.add_edge("report", "aggregate")
    builder.add_edge("aggregate", END)
    graph = builder.compile(checkpointer=checkpointer, store=store, name=name)
    # A subgraph runs under its parent's recursion_limit, so it must fit a rollout's turns too.
    limit = max(muse_recursion_limit(defaults.rounds), recursion_limit_for(defaults.max_turns))
    return graph.with_config(recursion_limit=limit)


def create_parallel_muse_graph(
    model: BaseChatModel,
    search: SearchSource,
    *,
    budget: int = 8,
    initial_rollouts: int = 1,
    top_k_steps: int = 2,
    samples_per_step: int = 3,
    rounds: int = 1,
    region: Region = "exploration",
    mode: Mode = "ppl",
    join: Join = "select",
    reports: ReportMode = "distinct",
    max_turns: int = 4,
    top_k: int = 3,
    temperature: float = 0.6,
    top_p: float = 0.95,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str | None = None,
    **settings: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build ParallelMuse: fork the agent at its most uncertain steps, then report and join.

    Args:
        model: Any LangChain chat model. Uncertainty needs token logprobs in
            ``response_metadata["logprobs"]["content"]`` (``ChatVLLM``, or ``ChatOpenAI`` with
            ``logprobs=True, top_logprobs=16``); without them no step is forked and the budget
            goes to fresh rollouts.
        search: A :class:`~langgraph_parallel.retrieval.search.Searcher` or LangChain retriever.
        budget: Most trajectories per question.
        initial_rollouts: Full rollouts before branching.
        top_k_steps: Branch points per round.
        samples_per_step: Branches per branch point.
        rounds: Branching rounds (at least 1).
        region: ``exploration``, ``reasoning``, ``all`` or ``mixed``.
        mode: ``ppl`` or ``entropy`` (see :class:`MuseContext`).
        join: ``select``, ``majority`` or ``weighted``.
        reports: Report calls: ``all``; ``distinct`` (one per distinct steps and answer, copied
            to the others with ``reused_from`` set); ``contested`` (distinct, for the answered
            ones only if ``join="select"`` meets differing answers; else no reports).
        max_turns: Model steps per trajectory (inherited ones included; see ``final_answer_step``).
        top_k: Documents per sub-query.
        temperature: Sampling temperature of agent steps.
        top_p: Nucleus sampling of agent steps.
        retry_policy: Retries of transient model and search errors (``None``: none); see
            :mod:`~langgraph_parallel.errors`. A call that still fails ends its own
            trajectory (``model_error: ...``) and the others are joined as usual.
        checkpointer: Passed to ``compile``; use one thread per question (trajectories and
            counters accumulate within a thread).
        store: Passed to ``compile``.
        name: Graph name (default ``parallel_muse``).
        **settings: Any other :class:`MuseContext` field (``max_tokens``, ``seed``,
            ``prompt_style``, ...; ``passage_sentences`` is ``auto`` as in ParallelSearch).

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MuseOutput`. Per-run
        overrides: ``invoke(..., context=MuseContext(...))``.

    Raises:
        ValueError: An invalid or unknown setting.
    """
    if rounds < 1:
        raise ValueError(
            f"rounds must be at least 1 (got {rounds}); for independent rollouts use "
            "create_rollouts_graph."
        )
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
        max_turns=max_turns,
        top_k=top_k,
        temperature=temperature,
        top_p=top_p,
    )
    name = name or "parallel_muse"
    return _build(
        model,
        search,
        settings,
        retry=retry_policy,
        checkpointer=checkpointer,
        store=store,
        name=name,
    )


def create_rollouts_graph(
    model: BaseChatModel,
    search: SearchSource,
    *,
    budget: int = 8,
    join: Join = "majority",
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str | None = None,
    **settings: Any,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the baseline: ``budget`` independent full rollouts, then the same report and join.

    The same nodes as :func:`create_parallel_muse_graph` with ``rounds=0``: all rollouts are
    sent at once, sampled with distinct seeds.

    Args:
        model: Any LangChain chat model.
        search: A searcher or LangChain retriever.
        budget: Number of rollouts.
        join: ``majority`` (default), ``weighted`` or ``select``.
        retry_policy: Retries of transient errors, as in :func:`create_parallel_muse_graph`.
        checkpointer: Passed to ``compile``.
        store: Passed to ``compile``.
        name: Graph name (default ``rollouts``).
        **settings: Any other :class:`MuseContext` field (``max_turns``, ``top_k``,
            ``temperature``, ``top_p``, ``max_tokens``, ``reports``, ...), same defaults as
            ParallelMuse.

    Returns:
        A compiled graph with the input and output of :func:`create_parallel_muse_graph`.
    """
    # Without rounds every rollout starts at once (initial_rollouts is not used).
    settings.update(budget=budget, initial_rollouts=1, rounds=0, join=join)
    name = name or "rollouts"
    return _build(
        model,
        search,
        settings,
        retry=retry_policy,
        checkpointer=checkpointer,
        store=store,
        name=name,
    )


def add_parallel_muse(
    builder: StateGraph[Any, Any, Any, Any],
    model: BaseChatModel,
    search: SearchSource,
    *,
    name: str = "parallel_muse",
    **settings: Any,
) -> str:
    """Add ParallelMuse to an existing graph builder as one node.

    The counterpart of :func:`~langgraph_parallel.parallel_search.graph.add_parallel_search`.
    The node reads the parent's ``question`` and writes ``answer`` back, with every other
    output key the parent state also has (``stop_reason``, ``counters``, ``trajectories``,
    ``reports``, ``aggregation``, ...). Wire it with ordinary edges.

    Args:
        builder: The user's ``StateGraph``.
        model: Any LangChain chat model (see :func:`create_parallel_muse_graph`).
        search: A searcher or LangChain retriever.
        name: Node name (also the subgraph's name).
        **settings: Keyword options of :func:`create_parallel_muse_graph` (``budget``, ...).

    Returns:
        The node name.

    Raises:
        ValueError: The builder's state has no ``question`` or ``answer`` key, or a setting
            is invalid.
    """
    require_state_keys(builder, {"question": "str", "answer": "str | None"}, "add_parallel_muse")
    builder.add_node(name, create_parallel_muse_graph(model, search, name=name, **settings))
    return name
