"""ParallelMuse state: the payloads and records of its branches, the graph state, its reducer.

Every key that parallel branches write has a deterministic reducer; ``remaining_steps`` is
managed by LangGraph and lets the router stop before the recursion limit would raise.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypeVar

from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.parallel_muse.uncertainty import BranchPoint, Step

__all__ = [
    "Branch",
    "BranchIdentity",
    "ForkSource",
    "GivenStep",
    "MuseInput",
    "MuseOutput",
    "MuseState",
    "Report",
    "ReportCopy",
    "ReportTask",
    "RolloutInput",
    "Trajectory",
    "branch_identity",
    "merge_by_index",
    "rollout_start_event",
]

_Item = TypeVar("_Item", bound=Mapping[str, Any])


class BranchIdentity(TypedDict):
    """What a rollout is: its question, place in the tree and seed; its trajectory keeps them."""

    question: str
    id: str
    index: int
    parent: str | None
    branch_step: int | None
    round: int
    seed: int


class Branch(BranchIdentity):
    """Payload of one ``Send("rollout", ...)``: a fresh rollout or a fork of ``parent``.

    ``messages`` and ``steps`` are the parent's prefix (empty for a fresh rollout, which starts
    from the question's first prompt); ``branch_step`` is the step re-generated first.
    """

    messages: list[dict[str, str]]
    steps: list[Step]


class Trajectory(Branch):
    """A finished rollout (JSON-serialisable).

    Attributes:
        messages_prefix_len: Messages inherited from the parent (0 for a fresh rollout).
        answer: The final answer, or ``None``.
        stop_reason: ``answered``, ``max_turns: ...``, ``recursion_limit: ...``,
            ``context_full: ...``, ``model_error: ...`` or ``agent_error: ...``.
        counters: This trajectory's own model calls and searches (inherited steps excluded;
            ``final_answer_steps`` 1 when it made the final answer-only step).
        search_results: This trajectory's own sub-query results (inherited searches excluded).
        thread_id: The agent's thread the run is in (its messages stay in the agent's
            checkpointer; ``messages`` holds them as ``{"role", "content"}`` dicts, one per
            message, assistant steps as their step text and tool results as observations,
            which is what reports read).
    """

    messages_prefix_len: int
    answer: str | None
    stop_reason: str
    counters: dict[str, int]
    search_results: NotRequired[list[dict[str, Any]]]
    thread_id: str


def branch_identity(branch: Branch) -> BranchIdentity:
    """Return the fields of ``branch`` that its trajectory copies unchanged."""
    return BranchIdentity(
        question=branch["question"],
        id=branch["id"],
        index=branch["index"],
        parent=branch["parent"],
        branch_step=branch["branch_step"],
        round=branch["round"],
        seed=branch["seed"],
    )


def rollout_start_event(branch: Branch) -> dict[str, Any]:
    """Return the fields of the ``rollout_start`` event both rollout kinds emit for ``branch``."""
    return {
        "rollout": branch["id"],
        "parent": branch["parent"],
        "round": branch["round"],
        "branch_step": branch["branch_step"],
    }


class ForkSource(TypedDict):
    """Where a fork starts: the parent's thread, the checkpoint before the step, its writer.

    ``as_node`` is the node that wrote the checkpoint; the fork's new thread gets the
    checkpoint's values as that node's update, so it goes on exactly where the parent did.
    """

    thread_id: str
    checkpoint_id: str
    as_node: str


class GivenStep(TypedDict):
    """A rollout's first step, drawn before it runs (:mod:`.candidates`).

    ``reply`` is the model's reply for the prompt whose digest is ``prompt``
    (:func:`~langgraph_parallel.agent.given.prompt_digest`); the loop takes it as that step.
    """

    prompt: str
    reply: BaseMessage


class RolloutInput(TypedDict):
    """Payload of one ``Send("rollout", ...)``: the branch and where it runs.

    With ``fork`` the branch re-generates the parent's step from ``fork``'s checkpoint, in a new
    thread ``thread_id``; with ``input`` it is a fresh run of the agent on that input; with
    neither, ``thread_id`` is the caller's finished thread, read as it is (no run). ``given``:
    its first step was drawn already (distinct branches), and is not sampled again.
    """

    branch: Branch
    thread_id: str
    fork: NotRequired[ForkSource]
    input: NotRequired[dict[str, Any]]
    given: NotRequired[GivenStep]


class ReportCopy(TypedDict):
    """A trajectory whose report prompt equals another's: it gets a copy of that report."""

    trajectory: str
    index: int
    answer: str | None


class ReportTask(TypedDict):
    """Payload of one ``Send("report", ...)``: one report call for ``trajectory``.

    ``copies`` lists the other trajectories with the same steps and answer; the call is greedy,
    so their reports would be the same text, and each gets a copy instead of a call.
    """

    question: str
    trajectory: Trajectory
    copies: NotRequired[list[ReportCopy]]


class Report(TypedDict):
    """A compressed trajectory: its ``id``, ``index``, ``answer`` and Markdown ``text``.

    ``error`` says why the report call failed (``text`` is then a stub with the answer);
    ``reused_from`` names the trajectory whose report this is a copy of (``None``: its own call).
    """

    trajectory: str
    index: int
    answer: str | None
    text: str
    error: str | None
    reused_from: str | None


def merge_by_index(left: Sequence[_Item] | None, right: Sequence[_Item] | None) -> list[_Item]:
    """Join items written by parallel branches, ordered by their ``index``.

    A later write for the same index replaces the earlier one, so a retried branch cannot
    duplicate its trajectory or report.
    """
    merged: dict[int, _Item] = {}
    for item in [*(left or []), *(right or [])]:
        merged[int(item["index"])] = item
    return [merged[key] for key in sorted(merged)]


class MuseOutput(TypedDict):
    """What a caller reads.

    ``counters`` sums the agent counters (``llm_calls``, ``turns``, ``sub_queries``, token
    counts) over all trajectories, plus ``report_*`` / ``aggregate_*`` counters of the reduction
    calls (``reports_reused``: reports copied instead of asked for, see
    :class:`~.context.MuseContext` ``reports``). ``trajectories`` and ``reports`` are ordered by
    trajectory index, ``branch_points`` by pick order; ``reports`` has one per trajectory, except
    with ``reports="contested"``, where it lists only the reports written (none when the answers
    agree or the join is not ``select``); ``aggregation`` says how the answer was picked (join,
    method, votes, excluded, fallback, and ``limit`` when the recursion limit cut the run short).
    ``answer`` is ``None`` with ``stop_reason`` ``no_answer: ...`` (or ``recursion_limit: ...``)
    if none answered.
    A trajectory whose model call failed keeps ``stop_reason`` ``model_error: ...``; the others
    are still reported and joined. ``messages`` is the chat: the question, then the chosen
    trajectory's conversation after its question (over the agent loop its chat view: each
    search step as a ``search`` tool call and its result, then the answer; see
    :mod:`~langgraph_parallel.agent.chat`), or ``No answer (...)`` when none answered; on a
    thread, every earlier question and reply before them.
    """

    question: str
    answer: str | None
    stop_reason: str
    counters: dict[str, int]
    trajectories: list[Trajectory]
    reports: list[Report]
    branch_points: list[BranchPoint]
    aggregation: dict[str, Any]
    messages: list[AnyMessage]


class MuseInput(TypedDict, total=False):
    """Input: the agent's ``messages``, or a ``question``, or a finished thread of the agent.

    Attributes:
        messages: The agent's input conversation (its first run starts from it); its last
            human message is the question. On a thread whose last run finished, a new human
            message asks a new question (the chat so far stays in ``messages``).
        question: A question alone: the user message of the first run (the agent loop's
            question).
        from_thread: The ``thread_id`` of a run of the agent that has already finished: it is
            the first trajectory, and the others fork it (no first run). Named apart from the
            graph's own ``config["configurable"]["thread_id"]``, which is the thread of this
            ParallelMuse run.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    from_thread: str


class MuseState(TypedDict):
    """Full graph state; every key parallel branches write has a deterministic reducer.

    ``agent_input`` is what a fresh run of the agent starts from; ``thread_prefix`` names this
    run's threads (``{thread_prefix}-t{index}``).
    """

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
    limit: NotRequired[str | None]
    remaining_steps: NotRequired[RemainingSteps]
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    from_thread: NotRequired[str | None]
    agent_input: NotRequired[dict[str, Any]]
    thread_prefix: NotRequired[str]
