"""ParallelMuse's parts that run the agent: read the input, run a rollout, return the chosen one.

The graph (:mod:`.graph`) is ``router -> rollout`` per branch ``-> router ... -> report ->
aggregate``; the router reads the input on its first call (:class:`AgentInput`). Planning,
reports and joins know no agent. A rollout is one run of the agent (the agent loop's graph, or
the caller's checkpointed agent) in a thread of its own (:mod:`.agent_thread`), a fresh run on
the agent's input or a fork from a checkpoint of the parent's thread, and its trajectory is read
back from that thread (:mod:`.agent_steps`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import partial
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.chat import answer_message, asked_question, question_message
from langgraph_parallel.agent.context import loop_settings, run_context
from langgraph_parallel.agent.events import emit
from langgraph_parallel.agent.given import given_steps_config
from langgraph_parallel.agent.limits import recursion_limit_for
from langgraph_parallel.agent.nodes import Body, DualNode, Either
from langgraph_parallel.errors import UserError, clean_text, reported_error
from langgraph_parallel.models.sampling import sampling_config
from langgraph_parallel.parallel_muse.agent_thread import (
    aread_rollout,
    forkable,
    read_rollout,
    rollout_body,
    steps_key,
    thread_config,
)
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.reduce import AggregateNode
from langgraph_parallel.parallel_muse.state import GivenStep, RolloutInput, rollout_start_event

__all__ = [
    "TRAJECTORY_MESSAGE",
    "AgentAggregateNode",
    "AgentInput",
    "AgentRolloutNode",
    "trajectory_message",
]

TRAJECTORY_MESSAGE = "parallel_muse_trajectory"
"""The ``name`` of the chat message showing one finished trajectory (:func:`trajectory_message`)."""


def trajectory_message(trajectory: Mapping[str, Any]) -> AIMessage:
    """Return one finished trajectory as the chat shows it while the others still run.

    The text says which trajectory it is, where it came from (fresh, or forked from its parent
    at a step) and how it ended; ``response_metadata["trajectory"]`` holds the same as fields
    (``id``, ``parent``, ``branch_step``, ``round``, ``answer``, ``stop_reason``) for a client
    that draws the tree. It is the chat's, never the agent's: a next question on the thread
    does not pass it to the agent (:class:`AgentInput`).
    """
    fields = {
        key: trajectory.get(key)
        for key in ("id", "parent", "branch_step", "round", "answer", "stop_reason")
    }
    origin = "a fresh rollout"
    if fields["parent"] is not None:
        origin = f"forked from {fields['parent']} at step {fields['branch_step']}"
    answer = fields["answer"]
    ended = f"answers {answer!r}" if answer is not None else f"no answer ({fields['stop_reason']})"
    return AIMessage(
        content=f"Trajectory {fields['id']} ({origin}, round {fields['round']}): {ended}.",
        name=TRAJECTORY_MESSAGE,
        response_metadata={"trajectory": fields},
    )


def _agent_messages(messages: list[Any]) -> list[Any]:
    """Return the chat less the trajectory messages this graph showed (not the agent's)."""
    return [m for m in messages if getattr(m, "name", None) != TRAJECTORY_MESSAGE]


class AgentInput(DualNode):
    """Read the input: the agent's messages, a question, or a finished thread of the agent.

    Writes ``question`` (the last user message's text), ``agent_input`` (what a fresh run starts
    from: the input messages, or a given thread's messages before its first AI message) and
    ``thread_prefix`` (this run's threads are ``{thread_prefix}-t{index}``).

    Args:
        agent: The wrapped agent.
        ask: The agent takes ``{"question": ...}`` (the agent loop): a fresh run starts from
            the question, not from messages.
    """

    def __init__(self, agent: Any, *, ask: bool = False) -> None:
        self.agent = agent
        self.ask = ask

    def body(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return ``question``, ``agent_input`` and ``thread_prefix``."""
        run = uuid.uuid4().hex[:12]
        thread = state.get("from_thread")
        agent_input: dict[str, Any]
        asked_in_thread = None  # the agent loop's thread keeps its question
        question: str
        if thread:
            agent = forkable(self.agent)
            snapshot = yield Either(agent.get_state, agent.aget_state, (thread_config(thread),))
            said = snapshot.values.get(steps_key(agent)) or []
            messages = convert_to_messages(said)
            asked_in_thread = snapshot.values.get("question")
            if not any(isinstance(m, AIMessage) for m in messages):
                raise UserError(
                    f"The agent's thread {thread!r} has no AI message to fork: run the agent on "
                    "it first, or pass the agent's input as messages."
                )
            first_ai = next(i for i, m in enumerate(messages) if isinstance(m, AIMessage))
            agent_input = {"messages": messages[:first_ai]}
            prefix = f"{thread}-muse-{run}"
            asked = [m.text for m in messages if isinstance(m, HumanMessage)]
            question = state.get("question") or asked_in_thread or (asked[-1] if asked else "")
        else:
            given = _agent_messages(convert_to_messages(state.get("messages") or []))
            if not given and state.get("question") is None:
                raise UserError(
                    "ParallelMuse needs the agent's input: messages, a question, or "
                    "from_thread, the thread_id of a finished run of the agent."
                )
            # The last human message, else the question: a missing or empty one fails here.
            question = asked_question({**state, "messages": given})
            agent_input = {"messages": given or [HumanMessage(question)]}
            prefix = f"muse-{run}"
        question = clean_text(question)
        if self.ask:
            agent_input = {"question": question}
        update = {"question": question, "agent_input": agent_input, "thread_prefix": prefix}
        # The chat shows the question: the input's last message, else it is added.
        return {**update, "messages": question_message(state, question)}


class AgentRolloutNode(DualNode):
    """Run one rollout of the agent in its own thread and write its trajectory.

    The run's progress events (its custom stream) go on to this run's, each with the branch's
    ``rollout`` id. Every run samples: its config carries ``temperature`` (a fork's
    ``branch_temperature`` when one is set), ``top_p`` and the branch's ``seed``
    (:mod:`~langgraph_parallel.models.sampling`), and, for a branch whose first step was drawn
    already (distinct branches, :mod:`.candidates`), that step. A run that fails ends its own
    trajectory (``stop_reason`` ``agent_error: ...``, after the attempts ``retry`` gives
    transient errors, each going on from the thread's last checkpoint); the other branches go on.

    Args:
        agent: The wrapped agent.
        defaults: Settings used when the run passes no :class:`MuseContext`.
        agent_config: Config merged into every run of the agent (``recursion_limit``, more
            ``configurable`` entries).
        retry: The retry policy the node is added with.
        loop: The agent is the agent loop: each run gets the loop's fields of the run's
            :class:`MuseContext` as its context, and a ``recursion_limit`` that fits its
            ``max_turns`` (unless ``agent_config`` sets one).

    Without token logprobs in the agent's replies no step can be ranked, so, as in
    :func:`~langgraph_parallel.parallel_muse.graph.create_parallel_muse_graph`, nothing is
    forked and the budget goes to fresh runs (independent rollouts).
    """

    def __init__(
        self,
        agent: Any,
        defaults: MuseContext,
        agent_config: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        *,
        loop: bool = False,
    ) -> None:
        self.agent = agent
        self.defaults = defaults
        self.agent_config = dict(agent_config or {})
        self.retry = retry
        self.loop = loop

    def run_config(
        self,
        thread_id: str,
        seed: int,
        ctx: MuseContext,
        *,
        fork: bool = False,
        given: GivenStep | None = None,
    ) -> RunnableConfig:
        """Return the config of one run: its thread and its sampling, over ``agent_config``.

        A fork (``fork``) samples at ``ctx.branch_temperature`` when one is set. A ``given``
        first step (distinct branches) goes to the loop in the config
        (:func:`~langgraph_parallel.agent.given.given_steps_config`).
        """
        temperature = ctx.temperature
        if fork and ctx.branch_temperature is not None:
            temperature = ctx.branch_temperature
        sampling = sampling_config(temperature=temperature, top_p=ctx.top_p, seed=seed)
        if given is not None:
            sampling.update(given_steps_config({given["prompt"]: given["reply"]}))
        configurable = {**(self.agent_config.get("configurable") or {}), **sampling}
        config = {**self.agent_config, "configurable": {**configurable, "thread_id": thread_id}}
        if self.loop and "recursion_limit" not in config:
            config["recursion_limit"] = recursion_limit_for(ctx.max_turns)
        return cast(RunnableConfig, config)

    def body(self, task: RolloutInput, runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return the trajectory, its counters and its chat message (:func:`trajectory_message`)."""
        ctx = run_context(runtime, self.defaults)
        branch = task["branch"]
        emit(runtime, "rollout_start", **rollout_start_event(branch))
        error = None
        agent = forkable(self.agent)
        if "fork" in task or "input" in task:
            config = self.run_config(
                task["thread_id"], branch["seed"], ctx, fork="fork" in task, given=task.get("given")
            )
            context = loop_settings(ctx) if self.loop else None
            forward = partial(_forward, runtime, branch["id"])
            try:
                yield from rollout_body(agent, task, config, context, forward)
            except Exception as exc:  # this trajectory ends here; the other branches go on
                error = reported_error(exc, runtime, self.retry)
        trajectory = yield Either(read_rollout, aread_rollout, (agent, task, error))
        answer, reason = trajectory["answer"], trajectory["stop_reason"]
        emit(runtime, "rollout_end", rollout=branch["id"], answer=answer, stop_reason=reason)
        return {
            "trajectories": [trajectory],
            "counters": trajectory["counters"],
            # The chat sees each trajectory as it finishes (the messages stream emits it now).
            "messages": [trajectory_message(trajectory)],
        }


def _forward(runtime: Runtime[Any], rollout: str, event: Any) -> None:
    """Pass one event of a rollout's run on to this run's custom stream, with its rollout id."""
    writer = getattr(runtime, "stream_writer", None)
    if callable(writer):
        writer({**event, "rollout": rollout} if isinstance(event, dict) else event)


class AgentAggregateNode(AggregateNode):
    """ParallelMuse's join, then the chosen trajectory's reply added to the chat (``messages``).

    The reply is the chosen thread's ``messages`` after the agent's input (over the agent loop,
    after its question: the loop's chat view), so the chat reads question, steps, answer; with
    no trajectory chosen, ``No answer (...)``.

    Args:
        agent: The wrapped agent.
        model: The analyst of the ``select`` join (``None``: ``select`` falls back to majority).
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: The retry policy the node is added with.
        keep_threads: ``False`` deletes this run's threads from the agent's checkpointer once
            joined (the caller's own thread is kept).
    """

    def __init__(
        self,
        agent: Any,
        model: BaseChatModel | None,
        defaults: MuseContext,
        retry: RetryPolicy | None = None,
        *,
        keep_threads: bool = True,
    ) -> None:
        super().__init__(model, defaults, retry)
        self.agent = agent
        self.keep_threads = keep_threads

    def body(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return the join's update and ``messages``."""
        update = yield from super().body(state, runtime)
        threads = {t["id"]: t["thread_id"] for t in state.get("trajectories") or []}
        chosen = threads.get(update["aggregation"].get("chosen"))
        reason = str(update.get("stop_reason") or "no_answer")
        messages: list[Any] = [answer_message(update.get("answer"), reason)]
        if chosen:
            config = thread_config(chosen)
            agent = forkable(self.agent)
            snapshot = yield Either(agent.get_state, agent.aget_state, (config,))
            said = list(snapshot.values.get("messages") or [])
            given = (state.get("agent_input") or {}).get("messages")
            # The agent loop's chat opens with its question; an agent's with its input.
            asked = 1 if given is None else len(given)
            messages = said[asked:] or messages
        mine = [t for t in threads.values() if t.startswith(str(state.get("thread_prefix")))]
        if not self.keep_threads and mine:
            yield Either(_delete_threads, _adelete_threads, (forkable(self.agent), mine))
        # from_thread is consumed: a next question on this thread does not fork it again.
        return {**update, "messages": messages, "from_thread": None}


def _delete_threads(agent: Any, threads: list[str]) -> None:
    for thread in threads:
        agent.checkpointer.delete_thread(thread)


async def _adelete_threads(agent: Any, threads: list[str]) -> None:
    for thread in threads:
        await agent.checkpointer.adelete_thread(thread)
