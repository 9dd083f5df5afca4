"""State of ParallelMuse over any checkpointed agent (:mod:`.graph`): input, payloads, output.

The wrapper reuses ParallelMuse's state (:class:`~.state.MuseState`) and adds what an agent run
needs: the agent's input, where each trajectory's thread is, and the conversation of the
trajectory the join chose.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AnyMessage
from typing_extensions import NotRequired, TypedDict

from langgraph_parallel.parallel_muse.state import Branch, MuseOutput, MuseState, Trajectory

__all__ = [
    "AgentRolloutInput",
    "AgentTrajectory",
    "ForkSource",
    "MuseAgentInput",
    "MuseAgentOutput",
    "MuseAgentState",
]


class AgentTrajectory(Trajectory):
    """One run of the wrapped agent: a :class:`~.state.Trajectory` and the thread it is in.

    ``messages`` holds the conversation as ``{"role", "content"}`` dicts, one per message of the
    agent's state (assistant steps as their step text, tool results as observations), which is
    what reports read; the messages themselves stay in the agent's checkpointer, ``thread_id``.
    """

    thread_id: str


class ForkSource(TypedDict):
    """Where a fork starts: the parent's thread, the checkpoint before the step, its writer.

    ``as_node`` is the node that wrote the checkpoint; the fork's new thread gets the
    checkpoint's values as that node's update, so it goes on exactly where the parent did.
    """

    thread_id: str
    checkpoint_id: str
    as_node: str


class AgentRolloutInput(TypedDict):
    """Payload of one ``Send("rollout", ...)`` of the wrapper: the branch and where it runs.

    With ``fork`` the branch re-generates the parent's step from ``fork``'s checkpoint, in a new
    thread ``thread_id``; with ``input`` it is a fresh run of the agent on that input; with
    neither, ``thread_id`` is the caller's finished thread, read as it is (no run).
    """

    branch: Branch
    thread_id: str
    fork: NotRequired[ForkSource]
    input: NotRequired[dict[str, Any]]


class MuseAgentInput(TypedDict, total=False):
    """Input of the wrapper: the agent's ``messages``, or a ``question``, or a finished thread.

    Attributes:
        messages: The agent's input conversation (its first run starts from it).
        question: A question alone: the user message of the first run.
        from_thread: The ``thread_id`` of a run of the agent that has already finished: it is
            the first trajectory, and the others fork it (no first run). Named apart from the
            wrapper's own ``config["configurable"]["thread_id"]``, which is the thread of this
            ParallelMuse run.
    """

    messages: list[AnyMessage]
    question: str
    from_thread: str


class MuseAgentOutput(MuseOutput):
    """What a caller reads: ParallelMuse's output, and the chosen conversation.

    ``trajectories`` are :class:`AgentTrajectory` (each with its ``thread_id``); ``messages`` is
    the chosen trajectory's conversation (empty when none answered).
    """

    messages: list[AnyMessage]


class MuseAgentState(MuseState):
    """The wrapper's state: :class:`~.state.MuseState` and the agent-specific keys.

    ``agent_input`` is what a fresh run of the agent starts from; ``thread_prefix`` names this
    run's threads (``{thread_prefix}-t{index}``).
    """

    messages: NotRequired[list[AnyMessage]]
    from_thread: NotRequired[str]
    agent_input: NotRequired[dict[str, Any]]
    thread_prefix: NotRequired[str]
