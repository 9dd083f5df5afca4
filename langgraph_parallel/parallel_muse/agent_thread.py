"""Forking an agent through its checkpointer: LangGraph's time travel, into threads of their own.

A compiled graph with a checkpointer saves a checkpoint after every super-step, so the state just
before any AI message is on record: :func:`fork_points` walks the thread's history
(``get_state_history``, followed by parent links from the thread's head) and, for each AI
message, finds the checkpoint whose ``next`` node produced it and whose ``messages`` are exactly
the ones before it (the agent loop's steps are its ``transcript``, :func:`steps_key`).

Forking (:func:`rollout_body`) follows LangGraph's fork recipe, ``update_state`` then
``invoke(None, config)``, with one change: the update goes to a *new* thread. LangGraph's own
fork (``update_state`` on the old thread's checkpoint config) branches inside the same thread,
whose head then moves to whichever branch wrote last; branches running at once would race for
it, and the caller's thread would no longer end where its run did. So the new thread gets the
checkpoint's values as an update by the node that wrote that checkpoint (``as_node``, read off
the history: the ``next`` of the checkpoint before it), which leaves its ``next`` where the
parent's was (checked), and ``invoke(None, ...)`` runs the agent on from there. The parent's
thread is only read. Reducers see the update as that node's write on an empty thread, so
every key holds the parent's value, messages with their ids: the model is prompted with the
parent's messages, byte for byte.

A rollout that ran before in its thread (a retried node) goes on from the thread's last
checkpoint instead of starting again: the checkpointer's fault tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from langgraph_parallel.agent.nodes import Body, Either
from langgraph_parallel.agent.state import TRANSCRIPT_KEY
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_muse.agent_steps import agent_trajectory
from langgraph_parallel.parallel_muse.state import (
    ForkSource,
    RolloutInput,
    Trajectory,
)

__all__ = [
    "alineage",
    "aread_rollout",
    "check_agent",
    "fork_points",
    "forkable",
    "has_checkpointer",
    "lineage",
    "read_rollout",
    "rollout_body",
    "steps_key",
    "thread_config",
]


def check_agent(agent: Any) -> None:
    """Check that ``agent`` can be forked: a compiled graph whose state has ``messages``.

    Its checkpointer is given when the wrapper is built (:func:`forkable`).

    Raises:
        UserError: Its state has no ``messages`` key.
    """
    if "messages" not in getattr(agent, "channels", {}):
        raise UserError(
            "ParallelMuse reads an agent's steps from its state's `messages` key, and this "
            "graph's state has none: use create_agent, MessagesState, or a state with "
            "`messages: Annotated[list[AnyMessage], add_messages]`."
        )


def has_checkpointer(agent: Any) -> bool:
    """Whether ``agent`` was compiled with a checkpointer of its own (a saver, not ``True``)."""
    return isinstance(getattr(agent, "checkpointer", None), BaseCheckpointSaver)


def forkable(agent: Any, checkpointer: Any = None) -> Any:
    """Return ``agent`` with a checkpointer to fork it through: its own, else ``checkpointer``.

    :func:`~langgraph_parallel.parallel_muse.graph.create_parallel_muse_graph` calls it when it
    builds the wrapper, with its ``checkpointer=`` or a saver of its own, so an agent compiled
    without one (as LangGraph Server wants the graphs it serves) is forked all the same. Only
    LangGraph's public API is used: the running graph's checkpointer, which LangGraph keeps
    under an internal config key, is not read. An agent that has one comes back as it is.

    Raises:
        UserError: Neither the agent nor ``checkpointer`` is a checkpointer.
    """
    if has_checkpointer(agent):
        return agent
    if isinstance(checkpointer, BaseCheckpointSaver):
        return agent.copy(update={"checkpointer": checkpointer})
    raise UserError(
        "ParallelMuse forks an agent from its checkpoints, and this agent has no checkpointer: "
        "compile it with checkpointer=InMemorySaver() (from langgraph.checkpoint.memory), e.g. "
        "create_agent(..., checkpointer=InMemorySaver()), or pass checkpointer= to "
        "create_parallel_muse_graph."
    )


def thread_config(thread_id: str, **configurable: Any) -> RunnableConfig:
    """Return the config of ``thread_id`` (more ``configurable`` entries, e.g. a checkpoint)."""
    return {"configurable": {"thread_id": thread_id, **configurable}}


def lineage(agent: Any, thread_id: str) -> list[StateSnapshot]:
    """Return the checkpoints that led to ``thread_id``'s head, oldest first.

    Followed by parent links, so checkpoints of a branch LangGraph forked inside the thread
    (time travel in place) are not mixed in.
    """
    return _chain(list(agent.get_state_history(thread_config(thread_id))))


async def alineage(agent: Any, thread_id: str) -> list[StateSnapshot]:
    """:func:`lineage` through the agent's async API (``aget_state_history``)."""
    return _chain([s async for s in agent.aget_state_history(thread_config(thread_id))])


def _chain(history: list[StateSnapshot]) -> list[StateSnapshot]:
    by_id = {snapshot.config["configurable"]["checkpoint_id"]: snapshot for snapshot in history}
    chain: list[StateSnapshot] = []
    snapshot = history[0] if history else None
    while snapshot is not None:
        chain.append(snapshot)
        parent = snapshot.parent_config or {}
        snapshot = by_id.get(parent.get("configurable", {}).get("checkpoint_id"))
    return chain[::-1]


def steps_key(agent: Any) -> str:
    """Return the state key an agent's steps are read from.

    The agent loop's are its ``transcript`` (its ``messages`` are the chat view,
    :mod:`~langgraph_parallel.agent.chat`); any other agent's are its ``messages``.
    """
    return TRANSCRIPT_KEY if TRANSCRIPT_KEY in getattr(agent, "channels", {}) else "messages"


def _messages(snapshot: StateSnapshot, key: str) -> list[BaseMessage]:
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    return list(values.get(key) or [])


def fork_points(
    chain: Sequence[StateSnapshot], first_writer: str | None = None, *, key: str = "messages"
) -> dict[str | None, dict[str, str] | None]:
    """Return, per AI message id of a thread, where a fork re-generating it starts.

    Args:
        chain: The thread's checkpoints, oldest first (:func:`lineage`).
        first_writer: The node that wrote the thread's first checkpoint when the thread was
            started by a fork (no checkpoint before it says so).
        key: The state key holding the agent's steps (:func:`steps_key`).

    Returns:
        ``{"checkpoint_id", "as_node"}`` per message, or ``None`` where the checkpoint before
        it does not hold the messages before it (but those its own node writes with it, as the
        agent loop writes its first prompt) with a node still to run.
    """
    points: dict[str | None, dict[str, str] | None] = {}
    for k, snapshot in enumerate(chain):
        messages = _messages(snapshot, key)
        for i, message in enumerate(messages):
            if not isinstance(message, AIMessage) or message.id in points:
                continue
            before = chain[k - 1] if k else None
            # The node(s) that wrote `before`; parallel ones at once make no single update.
            writers = set(chain[k - 2].next) if k >= 2 else {first_writer}
            writer = writers.pop() if len(writers) == 1 else None
            ids = [m.id for m in messages[:i]]
            held = [m.id for m in _messages(before, key)] if before is not None else []
            # The node that wrote the AI message may have written user messages before it in
            # the same update (the agent loop's first prompt): re-running it writes them again.
            written = messages[len(held) : i]
            exact = ids[: len(held)] == held and not any(isinstance(m, AIMessage) for m in written)
            if before is None or not exact or not before.next or writer is None:
                points[message.id] = None
            else:
                checkpoint = before.config["configurable"]["checkpoint_id"]
                points[message.id] = {"checkpoint_id": checkpoint, "as_node": writer}
    return points


def _start_fork(agent: Any, source: ForkSource, thread_id: str) -> None:
    """Copy the checkpoint ``source`` names into the new thread ``thread_id`` (module doc)."""
    checkpoint = source["checkpoint_id"]
    parent = agent.get_state(thread_config(source["thread_id"], checkpoint_id=checkpoint))
    agent.update_state(thread_config(thread_id), parent.values, as_node=source["as_node"])
    _check_fork(source, parent.next, agent.get_state(thread_config(thread_id)).next)


async def _astart_fork(agent: Any, source: ForkSource, thread_id: str) -> None:
    """:func:`_start_fork` through the agent's async API."""
    checkpoint = source["checkpoint_id"]
    config = thread_config(source["thread_id"], checkpoint_id=checkpoint)
    parent = await agent.aget_state(config)
    await agent.aupdate_state(thread_config(thread_id), parent.values, as_node=source["as_node"])
    _check_fork(source, parent.next, (await agent.aget_state(thread_config(thread_id))).next)


def _check_fork(source: ForkSource, expected: Any, found: Any) -> None:
    if found != expected:
        raise RuntimeError(
            f"the fork of checkpoint {source['checkpoint_id']} would run {found} next, not "
            f"{expected} as its thread did; update_state as {source['as_node']!r} does not "
            "reproduce it"
        )


def rollout_body(
    agent: Any,
    task: RolloutInput,
    config: RunnableConfig,
    context: Any = None,
    on_event: Callable[[Any], None] | None = None,
) -> Body[None]:
    """Run the rollout ``task`` names in its own thread (``config`` holds its ``thread_id``).

    A node body (:mod:`~langgraph_parallel.agent.nodes`): it runs on the agent's blocking
    path under ``invoke`` and on its async one (``astream``: async-only tools run) under
    ``ainvoke``. A thread that ran before (a retried node) goes on from its last checkpoint, as
    does a fork's new thread; a task with neither ``fork`` nor ``input`` (the caller's finished
    thread) runs nothing.

    Args:
        agent: The agent, with a checkpointer (:func:`forkable`).
        task: The rollout: a fresh run, a fork, or a thread that ran before (it goes on).
        config: The run's config.
        context: The run's ``context=`` for an agent that takes one (the agent loop's
            settings); ``None`` passes none.
        on_event: Gets each event of the agent's custom stream (its progress events), as it
            comes; the run is a root run of its own thread, so they reach the caller only so.
    """
    thread_id = task["thread_id"]
    state = yield Either(agent.get_state, agent.aget_state, (thread_config(thread_id),))
    ran = bool(state.values)
    if not ran and "fork" in task:
        yield Either(_start_fork, _astart_fork, (agent, task["fork"], thread_id))
    goes_on = ran or "fork" in task  # on from the thread's last checkpoint (input None)
    if not goes_on and "input" not in task:
        return
    start = None if goes_on else task["input"]
    options = {} if context is None else {"context": context}
    yield Either(_stream, _astream, (agent, start, config, options, on_event or _ignore))


def _ignore(event: Any) -> None:
    pass


def _stream(
    agent: Any, start: Any, config: RunnableConfig, options: dict[str, Any], on_event: Any
) -> None:
    for event in agent.stream(start, config, stream_mode="custom", **options):
        on_event(event)


async def _astream(
    agent: Any, start: Any, config: RunnableConfig, options: dict[str, Any], on_event: Any
) -> None:
    async for event in agent.astream(start, config, stream_mode="custom", **options):
        on_event(event)


def read_rollout(agent: Any, task: RolloutInput, error: str | None) -> Trajectory:
    """Return the trajectory of the rollout ``task`` names, read from its thread.

    The steps are read from :func:`steps_key`'s key.
    """
    return _trajectory(task, lineage(agent, task["thread_id"]), error, steps_key(agent))


async def aread_rollout(agent: Any, task: RolloutInput, error: str | None) -> Trajectory:
    """:func:`read_rollout` through the agent's async API."""
    chain = await alineage(agent, task["thread_id"])
    return _trajectory(task, chain, error, steps_key(agent))


def _trajectory(
    task: RolloutInput, chain: list[StateSnapshot], error: str | None, key: str
) -> Trajectory:
    writer = task["fork"]["as_node"] if "fork" in task else None
    start = chain[0].values if chain else {}
    end = chain[-1].values if chain else {}
    messages = list(end.get(key) or [])
    forks = fork_points(chain, writer, key=key)
    return agent_trajectory(task, messages, forks, (start, end), error)
