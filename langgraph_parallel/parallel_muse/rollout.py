"""The ParallelMuse rollout: the shared agent loop as a subgraph, started from a message prefix.

``start -> think -> <act> -> think ... -> finish``: the nodes between ``start`` and ``finish``
are the agent loop itself (:func:`~langgraph_parallel.agent.loop.add_agent_loop`) with the act
the :class:`~langgraph_parallel.agent.loop.LoopRollouts` carry (ParallelSearch's fan-out for
``parallel_search_rollouts``), so a rollout's steps are prompted, searched, retried (the nodes'
``RetryPolicy``), streamed and checkpointed exactly as the loop's are, and Studio draws them
inside ``rollout``.

A branch starts from ``messages[:i]`` of its parent, copied verbatim: stored messages are plain
``{"role", "content"}`` dicts with no ids or timestamps, so the prompt the engine sees for the
branch begins with exactly the parent's tokens and is served from the prefix cache. ``finish``
(the loop's ``answer`` node here) turns the run into a JSON-serialisable :class:`Trajectory`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import run_context, with_defaults
from langgraph_parallel.agent.events import emit
from langgraph_parallel.agent.loop import LoopRollouts, add_agent_loop
from langgraph_parallel.agent.nodes import as_node
from langgraph_parallel.agent.think import answer_node
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.regions import make_step
from langgraph_parallel.parallel_muse.state import (
    RolloutInput,
    RolloutOutput,
    RolloutState,
    Trajectory,
    branch_identity,
    rollout_start_event,
)

__all__ = ["create_rollout_graph", "to_dicts", "to_messages"]


def to_messages(messages: list[dict[str, str]]) -> list[BaseMessage]:
    """Turn stored ``{"role", "content"}`` dicts into LangChain messages (no ids)."""
    return [
        AIMessage(content=m["content"]) if m["role"] == "assistant" else HumanMessage(m["content"])
        for m in messages
    ]


def to_dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """Store LangChain messages as ``{"role", "content"}`` dicts (ids and metadata dropped)."""
    return [
        {"role": "assistant" if m.type == "ai" else "user", "content": str(m.content)}
        for m in messages
    ]


class StartNode:
    """Load the branch: its message prefix, inherited step and turn counts, sampling options.

    Args:
        defaults: Settings used when the run passes no :class:`MuseContext`.
    """

    def __init__(self, defaults: MuseContext) -> None:
        self.defaults = defaults

    def __call__(self, state: RolloutState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return the agent loop's starting state for ``state["branch"]``."""
        ctx = run_context(runtime, self.defaults)
        branch = state["branch"]
        sampling = {"temperature": ctx.temperature, "top_p": ctx.top_p, "seed": branch["seed"]}
        # Each search round after the first prompt left one observation (a user message) in
        # the prefix: a fork's own searches continue the parent's turn numbers.
        observations = sum(m["role"] == "user" for m in branch["messages"][1:])
        emit(runtime, "rollout_start", **rollout_start_event(branch))
        return {
            "question": branch["question"],
            # An empty prefix: ``think`` writes the question's first prompt itself.
            "messages": to_messages(branch["messages"]),
            "steps": len(branch["steps"]),
            "turn": observations,
            "sampling": sampling,
        }


def finish_node(state: RolloutState, runtime: Runtime[Any]) -> dict[str, Any]:
    """End the loop (as :func:`answer_node` does) and write the branch's :class:`Trajectory`."""
    ended = answer_node(state)
    branch = state["branch"]
    steps = list(branch["steps"])
    for record in state.get("step_records") or []:
        steps.append(
            make_step(
                record["text"],
                record["logprobs"],
                usage=record["usage"],
                action=record["action"],
                message_index=record["message_index"],
                origin=branch["id"],
            )
        )
    trajectory = Trajectory(
        **branch_identity(branch),
        messages=to_dicts(list(state["messages"])),
        steps=steps,
        messages_prefix_len=len(branch["messages"]),
        answer=ended["answer"],
        stop_reason=ended["stop_reason"],
        counters=dict(state.get("counters") or {}),
        search_results=list(state.get("search_results") or []),
    )
    emit(
        runtime,
        "rollout_end",
        rollout=branch["id"],
        answer=ended["answer"],
        stop_reason=ended["stop_reason"],
    )
    return {**ended, "trajectories": [trajectory]}


def create_rollout_graph(
    rollouts: LoopRollouts,
    defaults: MuseContext,
    *,
    retry: RetryPolicy | None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the rollout subgraph: input :class:`RolloutInput`, output :class:`RolloutOutput`.

    A model call that still fails after ``retry`` ends this trajectory only (``stop_reason``
    ``model_error: ...``); the other branches go on. The subgraph has no checkpointer of its own:
    inside the ParallelMuse graph it uses the parent's.

    Args:
        rollouts: The loop to run: its model (token logprobs are read from
            ``response_metadata["logprobs"]["content"]`` when present) and its act.
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: Retry policy of the loop's ``think`` and ``search`` nodes.
    """
    builder = StateGraph(
        RolloutState,
        context_schema=with_defaults(defaults, "MuseContext"),
        input_schema=RolloutInput,
        output_schema=RolloutOutput,
    )
    builder.add_node("start", as_node(StartNode(defaults), "start"))
    act = rollouts.act(defaults, retry)
    add_agent_loop(
        builder, rollouts.model, defaults, act, retry=retry, record_steps=True, answer=finish_node
    )
    builder.add_edge(START, "start")
    builder.add_edge("start", "think")
    builder.add_edge("answer", END)
    return builder.compile(name="rollout")
