"""The Search-R1 steps of a raw-prompt policy as tool calls: what ``bind_tools`` of our models runs.

The trained policies write one step of text, ``<think> ... </think>`` then ``<search> a ## b
</search>`` or ``<answer> x </answer>``; ``create_agent`` and other tool-calling code want an
``AIMessage`` with ``tool_calls`` and hand the results back as ``ToolMessage``. Bound to a
``search`` tool (``model.bind_tools([search_tool])``), one call of the model:

1. renders the conversation as the graphs' transcript
   (:func:`~langgraph_parallel.dialect.transcript.policy_transcript`: the graphs' opening prompt,
   step texts, ``<information>`` observations); the model then joins these messages exactly as
   it joins a graph's (raw: one document);
2. decodes one step as a graph step does: the stop sequences and, for raw prompts, the action
   grammar as the engine's regex (answer-only under ``tool_choice="none"``), with the same
   logprobs and token usage;
3. parses the step (:func:`~langgraph_parallel.protocol.parse_action`) into the reply
   (:func:`tool_call_reply`): a search is one ``search`` call with ``{"query_list": [...]}``;
   an answer is the message content (or an ``answer`` call when a tool of that name is bound).

Where the text goes: the ``<think>`` text is in ``additional_kwargs["reasoning_content"]`` (the
key LangChain shows as a ``reasoning`` content block), the step text as decoded in
``response_metadata["step_text"]`` (so the next call renders the step byte for byte and the
engine's prefix cache serves it); the content is the answer, or empty for a search. A step that
parses as no action (cut by ``max_tokens``) comes back as its text without a tool call, with
``response_metadata["action_error"]`` saying why; ``create_agent`` ends the run there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import tool_call
from langchain_core.outputs import ChatGeneration, ChatResult

from langgraph_parallel.dialect.transcript import policy_transcript
from langgraph_parallel.errors import clean_text
from langgraph_parallel.prompts import RawPrompt
from langgraph_parallel.protocol import (
    STOP_SEQUENCES,
    action_regex,
    answer_regex,
    parse_action,
    restore_stop_sequence,
)
from langgraph_parallel.protocol.tool_calls import TOOL_NAMES

__all__ = ["ToolStep", "card_kind", "prepare_tool_step", "tool_call_reply"]

SEARCH_TOOL, ANSWER_TOOL = TOOL_NAMES  # the names the action parser reads tool calls by


def _names(tools: Sequence[Any]) -> list[str]:
    names = []
    for tool in tools:
        spec = tool.get("function", tool) if isinstance(tool, dict) else {}
        names.append(str(spec.get("name", "")))
    return names


@dataclass(frozen=True)
class ToolStep:
    """One call of a policy with bound tools: what its reply's tool calls are named.

    Attributes:
        answer_tool: The bound answer tool's name, or ``None``: an answer is the content.
        answer_only: The step may only answer (``tool_choice="none"``, or no ``search`` tool
            bound).
        index: The step's number in the conversation (assistant turns before it, plus one);
            tool-call ids are made from it, so replaying a conversation gives the same ids.
    """

    answer_tool: str | None = None
    answer_only: bool = False
    index: int = 1

    def reply(self, result: ChatResult) -> ChatResult:
        """Return ``result`` with every sample read as a tool-call reply."""
        generations = [
            ChatGeneration(
                message=tool_call_reply(g.message, self), generation_info=g.generation_info
            )
            for g in result.generations
        ]
        return ChatResult(generations=generations, llm_output=result.llm_output)


def card_kind(kind: str) -> RawPrompt:
    """Return a model card's raw prompt (any string the chat model carries) as a prompt kind."""
    return "rules" if kind == "rules" else "few_shot"


def prepare_tool_step(
    messages: Sequence[BaseMessage],
    stop: list[str] | None,
    kwargs: dict[str, Any],
    *,
    style: Literal["chat", "raw"],
    kind: str,
    regex: str | None,
) -> tuple[list[BaseMessage], list[str] | None, ToolStep | None]:
    """Turn a call with bound tools into a policy step; a call without tools is left as is.

    Pops ``tools``, ``tool_choice`` and ``parallel_tool_calls`` from ``kwargs`` (the call's
    options) and, when tools were bound, sets the step's regex there (raw prompts, unless the
    call or the model (``regex``) has one).

    Returns:
        The messages to render (:func:`policy_transcript`), the stop sequences (the action's
        by default) and the :class:`ToolStep` that reads the reply; for a call without tools,
        the arguments unchanged and ``None``.
    """
    tools = kwargs.pop("tools", None)
    choice = kwargs.pop("tool_choice", None)
    kwargs.pop("parallel_tool_calls", None)  # a policy step makes one call
    if tools is None:
        return list(messages), stop, None
    names = _names(tools)
    step = ToolStep(
        answer_tool=ANSWER_TOOL if ANSWER_TOOL in names else None,
        # Without a search tool bound, an answer is the only action the policy can take.
        answer_only=choice == "none" or SEARCH_TOOL not in names,
        index=1 + sum(isinstance(m, AIMessage) for m in messages),
    )
    if style == "raw" and regex is None and "regex" not in kwargs:
        kwargs["regex"] = answer_regex() if step.answer_only else action_regex(decompose=True)
    stop = list(STOP_SEQUENCES) if stop is None else stop
    return policy_transcript(messages, style=style, kind=card_kind(kind)), stop, step


def tool_call_reply(message: BaseMessage, step: ToolStep) -> AIMessage:
    """Read one decoded step as a tool-calling reply (see the module docstring)."""
    metadata = dict(message.response_metadata)
    text = clean_text(restore_stop_sequence(message.text, metadata.get("stop_reason")))
    action = parse_action(text)
    metadata["step_text"] = text
    extra = dict(message.additional_kwargs)
    if action.think:
        extra["reasoning_content"] = action.think
    content, calls = "", []
    ident = f"call_{step.index}"
    if action.kind == "search" and not step.answer_only:
        calls = [tool_call(name=SEARCH_TOOL, args={"query_list": list(action.queries)}, id=ident)]
    elif action.kind == "answer" and step.answer_tool:
        calls = [tool_call(name=step.answer_tool, args={"answer": action.answer}, id=ident)]
    elif action.kind == "answer":
        content = action.answer or ""
    else:
        content = text
        searched = action.kind == "search"  # under tool_choice="none" (an unconstrained model)
        error = "searched where only an answer was allowed" if searched else action.error
        metadata["action_error"] = error
    usage = getattr(message, "usage_metadata", None)
    return AIMessage(
        content=content,
        tool_calls=calls,
        additional_kwargs=extra,
        response_metadata=metadata,
        usage_metadata=usage,
        id=message.id,
    )
