"""ParallelMuse graphs: uncertainty-guided partial rollouts, and the independent-rollouts baseline.

Shape (both graphs; the baseline just never branches)::

    START -> router --Send per rollout--> rollout -> router ... --Send per trajectory--> report
          -> aggregate -> END

Budget and rounds: :mod:`~langgraph_parallel.nodes.router`; scores and branch points:
:mod:`~langgraph_parallel.uncertainty`; joins: :mod:`~langgraph_parallel.nodes.reduce`.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import NotRequired, TypedDict

from langgraph_parallel.context import with_defaults
from langgraph_parallel.nodes.reduce import AggregateNode, Report, ReportNode, ReportTask
from langgraph_parallel.nodes.rollout import Branch, Join, MuseContext, RolloutNode, Trajectory
from langgraph_parallel.nodes.router import RouterNode
from langgraph_parallel.nodes.search import SearchNode
from langgraph_parallel.retrieval.search import as_searcher
from langgraph_parallel.state import add_counters
from langgraph_parallel.uncertainty import BranchPoint, Mode, Region

__all__ = ["AggregateNode", "Branch", "MuseContext", "MuseInput", "MuseOutput", "MuseState",
           "Report", "ReportNode", "RolloutNode", "RouterNode", "Trajectory",
           "create_parallel_muse_graph", "create_rollouts_graph", "merge_by_index"]  # fmt: skip

_Item = TypeVar("_Item", bound=Mapping[str, Any])


def merge_by_index(left: Sequence[_Item] | None, right: Sequence[_Item] | None) -> list[_Item]:
    """Join items written by parallel branches, ordered by their ``index``.

    A later write for the same index replaces the earlier one, so a retried branch cannot
    duplicate its trajectory or report.
    """
    merged: dict[int, _Item] = {}
    for item in [*(left or []), *(right or [])]:
        merged[int(item["index"])] = item
    return [merged[key] for key in sorted(merged)]


class MuseInput(TypedDict):
    """Input of the ParallelMuse graphs."""

    question: str


class MuseOutput(TypedDict):
    """What a caller reads.

    ``counters`` sums the agent counters (``llm_calls``, ``turns``, ``sub_queries``, token
    counts) over all trajectories, plus ``report_*`` / ``aggregate_*`` counters of the reduction
    calls. ``trajectories`` and ``reports`` are ordered by trajectory index, ``branch_points`` by
    pick order; ``aggregation`` says how the answer was picked (join, method, votes, excluded,
    fallback). ``answer`` is ``None`` with ``stop_reason`` ``no_answer: ...`` if none answered.
    """

    question: str
    answer: str | None
    stop_reason: str
    counters: dict[str, int]
    trajectories: list[Trajectory]
    reports: list[Report]
    branch_points: list[BranchPoint]
    aggregation: dict[str, Any]


class MuseState(TypedDict):
    """Full graph state; every key parallel branches write has a deterministic reducer."""

    question: str
    trajectories: NotRequired[Annotated[list[Trajectory], merge_by_index]]
    reports: NotRequired[Annotated[list[Report], merge_by_index]]
    counters: NotRequired[Annotated[dict[str, int], add_counters]]
    branch_points: NotRequired[Annotated[list[BranchPoint], operator.add]]
    dispatched: NotRequired[int]
    round: NotRequired[int]
    answer: NotRequired[str | None]
    stop_reason: NotRequired[str]
    aggregation: NotRequired[dict[str, Any]]


def _build(
    model: BaseChatModel,
    search: Any,
    settings: Mapping[str, Any],
    *,
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
    defaults = MuseContext(**settings)
    searcher = SearchNode(
        as_searcher(search), top_k=defaults.top_k, timeout=defaults.search_timeout
    )
    builder = StateGraph(
        MuseState,
        context_schema=with_defaults(defaults, "MuseContext"),
        input_schema=MuseInput,
        output_schema=MuseOutput,
    )
    # Send payloads (Branch, ReportTask) are not the graph state; the overloads cannot say so.
    router = cast(Any, RouterNode(defaults))
    builder.add_node("router", router, destinations=("rollout", "report"))
    rollout = cast(Any, RolloutNode(model, searcher, defaults))
    builder.add_node("rollout", rollout, input_schema=Branch)
    builder.add_node("report", cast(Any, ReportNode(model, defaults)), input_schema=ReportTask)
    builder.add_node("aggregate", cast(Any, AggregateNode(model, defaults)))
    builder.add_edge(START, "router")
    builder.add_edge("rollout", "router")
    builder.add_edge("report", "aggregate")
    builder.add_edge("aggregate", END)
    return builder.compile(checkpointer=checkpointer, store=store, name=name)


def create_parallel_muse_graph(
    model: BaseChatModel,
    search: Any,
    *,
    budget: int = 8,
    initial_rollouts: int = 1,
    top_k_steps: int = 2,
    samples_per_step: int = 3,
    rounds: int = 1,
    region: Region = "exploration",
    mode: Mode = "entropy",
    join: Join = "select",
    max_turns: int = 4,
    top_k: int = 3,
    temperature: float = 0.6,
    top_p: float = 0.95,
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
        mode: ``entropy`` or ``ppl``.
        join: ``select``, ``majority`` or ``weighted``.
        max_turns: Model steps per trajectory (inherited steps included).
        top_k: Documents per sub-query.
        temperature: Sampling temperature of agent steps.
        top_p: Nucleus sampling of agent steps.
        checkpointer: Passed to ``compile``; use one thread per question (trajectories and
            counters accumulate within a thread).
        store: Passed to ``compile``.
        name: Graph name (default ``parallel_muse``).
        **settings: Any other :class:`MuseContext` field (``max_tokens``, ``seed``,
            ``prompt_style``, ``report_max_tokens``, ...).

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
    settings.update(budget=budget, initial_rollouts=initial_rollouts, top_k_steps=top_k_steps,
                    samples_per_step=samples_per_step, rounds=rounds, region=region, mode=mode,
                    join=join, max_turns=max_turns, top_k=top_k, temperature=temperature,
                    top_p=top_p)  # fmt: skip
    name = name or "parallel_muse"
    return _build(model, search, settings, checkpointer=checkpointer, store=store, name=name)


def create_rollouts_graph(
    model: BaseChatModel,
    search: Any,
    *,
    budget: int = 8,
    join: Join = "majority",
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
        checkpointer: Passed to ``compile``.
        store: Passed to ``compile``.
        name: Graph name (default ``rollouts``).
        **settings: Any other :class:`MuseContext` field (``max_turns``, ``top_k``,
            ``temperature``, ``top_p``, ``max_tokens``, ...), same defaults as ParallelMuse.

    Returns:
        A compiled graph with the input and output of :func:`create_parallel_muse_graph`.
    """
    # Without rounds every rollout starts at once (initial_rollouts is not used).
    settings.update(budget=budget, initial_rollouts=1, rounds=0, join=join)
    name = name or "rollouts"
    return _build(model, search, settings, checkpointer=checkpointer, store=store, name=name)
