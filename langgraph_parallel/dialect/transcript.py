"""A tool-calling conversation as a search policy reads it: the transcript the graphs build.

A policy bound to tools (:mod:`~langgraph_parallel.dialect.tool_calls`) is shown a
``create_agent`` conversation as the graphs show it a run: the first question becomes the graphs'
opening prompt (:func:`~langgraph_parallel.prompts.opening_prompt`, the rules prompt of the
trained policies), each assistant turn its step text
(:func:`~langgraph_parallel.protocol.format_step`, or the step as decoded), each tool result its
``<information>`` observation (:func:`~langgraph_parallel.protocol.format_observation`). System
messages are left out of a raw prompt: a trained policy reads the rules it was trained on and
nothing else (a system prompt it never saw would only move it off its training distribution).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_parallel.errors import clean_text
from langgraph_parallel.prompts import RawPrompt, next_question_prompt, opening_prompt
from langgraph_parallel.protocol import Action, format_observation, format_step, parse_action

__all__ = ["message_action", "observation_text", "policy_transcript", "step_text"]

_TAGS = ("<think>", "<search>", "<answer>", "<tool_call>")


def policy_transcript(
    messages: Sequence[BaseMessage], *, style: Literal["chat", "raw"], kind: RawPrompt = "rules"
) -> list[BaseMessage]:
    """Return a tool-calling conversation as the messages a graph would hold for it.

    The first user message becomes the opening prompt (ParallelSearch, ``decompose=True``),
    later ones the next question; assistant messages become their step text (:func:`step_text`)
    and tool results their observation. System messages stay only in ``chat`` style.
    """
    out: list[BaseMessage] = []
    asked = False
    for message in messages:
        if isinstance(message, SystemMessage):
            if style == "chat":
                out.append(message)
        elif isinstance(message, AIMessage):
            out.append(AIMessage(step_text(message)))
        elif isinstance(message, ToolMessage):
            out.append(HumanMessage(observation_text(message)))
        else:
            question = clean_text(message.text).strip()
            if asked and style == "raw":
                out.append(HumanMessage(next_question_prompt(question)))
            else:
                out.append(HumanMessage(opening_prompt(question, style, True, kind)))
            asked = True
    return out


def observation_text(message: ToolMessage) -> str:
    """Return a tool result as the ``<information>`` observation a graph step reads."""
    text = clean_text(message.text)
    if "<information>" in text:  # already an observation (the ParallelSearch tool's)
        return text
    return format_observation([(message.name or "tool", text)])


def message_action(message: AIMessage) -> Action:
    """Return the action an assistant message took: its tool calls, its tags, or its answer.

    The think is ``additional_kwargs["reasoning_content"]``, or the text of a message that
    calls a tool (what a tool-calling model says before the call). A message without tool
    calls or action tags is an answer in its content.
    """
    reasoning = message.additional_kwargs.get("reasoning_content")
    think = reasoning.strip() if isinstance(reasoning, str) and reasoning.strip() else None
    text = message.text
    if message.tool_calls:
        action = parse_action("", message.tool_calls)
        return replace(action, think=think or text.strip() or None, raw=text)
    if not text.strip() or any(tag in text for tag in _TAGS):
        return parse_action(text)
    return Action("answer", answer=text.strip(), think=think, raw=text)


def step_text(message: AIMessage) -> str:
    """Return the step text of an assistant message, as the policy reads its own steps.

    The recorded ``response_metadata["step_text"]`` while it still says what the message says
    (the same action: a caller may have edited the calls), else the action written out
    (:func:`~langgraph_parallel.protocol.format_step`).
    """
    action = message_action(message)
    recorded = message.response_metadata.get("step_text")
    if isinstance(recorded, str) and _same(parse_action(recorded), action):
        return recorded
    return format_step(action)


def _same(a: Action, b: Action) -> bool:
    return (a.kind, a.queries, a.answer, a.think) == (b.kind, b.queries, b.answer, b.think)
