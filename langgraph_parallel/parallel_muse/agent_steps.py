"""An agent's conversation as a ParallelMuse trajectory: one scored step per AI message.

Each AI message of the agent's state becomes a :class:`~.uncertainty.Step`, recorded by
:func:`~.regions.make_step` as our own rollouts record theirs, so the router ranks both alike:

- ``text`` is the message's logprob tokens joined: what the engine generated, the text the
  token offsets of the uncertainty scores refer to. For the embedded policies (``ChatVLLM``,
  ``ChatVLLMServer`` bound to tools) that is the step as decoded, ``<think> ... </think>`` then
  ``<search> ... </search>`` or ``<answer> ... </answer>``, so ``reasoning`` is the think text
  and ``exploration`` the search call, exactly as in our graph. A server that writes tool calls
  as ``<tool_call>`` text has them in ``exploration`` too; a provider that returns logprobs for
  the content only (OpenAI's tool-call arguments have none) gives those steps a reasoning score
  only. Without logprobs the text is the step as the policy would read it, for display.
- ``usage`` is the engine's count of the call (``usage_metadata``, cached prompt tokens
  included), ``action`` its kind (``search``, ``answer``, or ``tool`` for any other tool).

The conversation is also kept as ``{"role", "content"}`` dicts (:func:`conversation_dicts`),
one per message, which is what reports and the extracted report read.

An agent that ends its own runs with an ``answer`` and a ``stop_reason`` in its state (the agent
loop, :func:`~langgraph_parallel.agent.loop.create_loop_graph`) is read by them, and by its own
``search_results``; any other agent's answer is its last reply's text and its searches are read
off its ``search`` tool's results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langgraph_parallel.agent.searches import tool_searches
from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.dialect.transcript import message_action, observation_text, step_text
from langgraph_parallel.errors import clean_text, storable
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_muse.regions import make_step
from langgraph_parallel.parallel_muse.state import RolloutInput, Trajectory, branch_identity
from langgraph_parallel.parallel_muse.uncertainty import Step

__all__ = ["agent_step", "agent_trajectory", "conversation_dicts"]


def agent_step(message: AIMessage, *, index: int, origin: str, fork: dict[str, str] | None) -> Step:
    """Return the step of one AI message (module docstring).

    Args:
        message: The agent's reply.
        index: Its index in the conversation (a fork of it keeps the messages before it).
        origin: The trajectory whose run produced it.
        fork: Where a fork of it starts (:func:`~.agent_thread.fork_points`), or ``None``.
    """
    found = (message.response_metadata.get("logprobs") or {}).get("content") or []
    logprobs = storable(list(found))
    tokens = "".join(str(item.get("token") or "") for item in logprobs)
    kind = message_action(message).kind
    action = "tool" if kind == "invalid" and message.tool_calls else kind  # another tool
    step = make_step(
        tokens if logprobs else step_text(message),
        logprobs,
        usage=usage_counters(message),
        action=action,
        message_index=index,
        origin=origin,
    )
    step["fork"] = fork
    if message.tool_calls:
        calls = [{"name": call["name"], "args": call["args"]} for call in message.tool_calls]
        step["tool_calls"] = storable(calls)
    return step


def conversation_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """Return the conversation as ``{"role", "content"}`` dicts, one per message.

    Assistant messages are their step text
    (:func:`~langgraph_parallel.dialect.transcript.step_text`: the think and the action), tool
    results their observation, anything else its text as a user turn.
    """
    out = []
    for message in messages:
        if isinstance(message, AIMessage):
            out.append({"role": "assistant", "content": step_text(message)})
        elif isinstance(message, ToolMessage):
            out.append({"role": "user", "content": observation_text(message)})
        else:
            out.append({"role": "user", "content": clean_text(message.text)})
    return out


def _counters(own: Sequence[AIMessage], start: Any, end: Any) -> dict[str, int]:
    """Count the trajectory's own calls (from the messages) and its agent counters' growth.

    An agent that keeps ``counters`` (``ParallelSearchMiddleware``: searches, sub-queries; the
    agent loop: every counter of its runs) has them in its thread; a fork's thread starts with
    its parent's, so only the difference is this trajectory's. A counter the agent keeps at 0
    is kept at 0 (``parallel_turns`` 0 says something a missing key does not).
    """
    counters: dict[str, int] = {"llm_calls": len(own)}
    for message in own:
        counters = add_counters(counters, usage_counters(message))
    before = start if isinstance(start, Mapping) else {}
    for key, value in (end if isinstance(end, Mapping) else {}).items():
        if key not in counters and isinstance(value, int):
            counters[key] = value - int(before.get(key, 0))
    return counters


def agent_trajectory(
    task: RolloutInput,
    messages: Sequence[BaseMessage],
    forks: Mapping[str | None, dict[str, str] | None],
    values: tuple[Mapping[str, Any], Mapping[str, Any]],
    error: str | None,
) -> Trajectory:
    """Return the trajectory of one rollout from its thread's final messages.

    Args:
        task: The rollout's payload (its branch: the inherited steps and messages).
        messages: The thread's messages at its last checkpoint.
        forks: AI message id -> where a fork of it starts.
        values: The thread's state at its first and last checkpoint.
        error: Why the run failed (``stop_reason`` ``agent_error: ...``), or ``None``.
    """
    branch = task["branch"]
    start, end = values
    first = len(branch["messages"])
    steps = list(branch["steps"])
    own: list[AIMessage] = []
    for index in range(first, len(messages)):
        message = messages[index]
        if isinstance(message, AIMessage):
            own.append(message)
            point = forks.get(message.id)
            steps.append(agent_step(message, index=index, origin=branch["id"], fork=point))
    if "stop_reason" in end:  # the agent loop ends its runs itself (module docstring)
        answer, reason = end.get("answer"), str(end["stop_reason"])
        if error is not None:
            answer, reason = None, f"agent_error: {error}"
        inherited = len(start.get("search_results") or [])
        searches = list(end.get("search_results") or [])[inherited:]
    else:
        last = messages[-1] if messages else None
        text = last.text.strip() if isinstance(last, AIMessage) and not last.tool_calls else ""
        answer = clean_text(text) if text and error is None else None
        reason = f"agent_error: {error}" if error else "answered" if answer else "no_answer"
        # Rows without `text`: the tool's one observation holds every sub-query's passages.
        searches = tool_searches(messages, first)
    return Trajectory(
        **branch_identity(branch),
        messages=conversation_dicts(messages) if messages else list(branch["messages"]),
        steps=steps,
        messages_prefix_len=first,
        answer=answer,
        stop_reason=reason,
        counters=_counters(own, start.get("counters"), end.get("counters")),
        search_results=searches,
        thread_id=task["thread_id"],
    )
