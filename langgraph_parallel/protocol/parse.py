"""Parse one model step into an :class:`~.action.Action`.

The rules are in the package docstring (:mod:`langgraph_parallel.protocol`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_parallel.protocol.action import (
    ACTION_TAGS,
    QUERY_SEPARATOR,
    STOP_SEQUENCES,
    Action,
    elements,
    invalid,
    unique_queries,
)
from langgraph_parallel.protocol.tool_calls import from_tool_calls, load_json

__all__ = ["cap_queries", "format_step", "parse_action", "restore_stop_sequence", "split_queries"]


def split_queries(body: str) -> list[str]:
    """Split a search body on ``##`` into clean, unique sub-queries.

    Whitespace runs inside a sub-query become one space and the ends are stripped; empty pieces are
    dropped; a repeat (compared case-insensitively) is dropped, keeping the first spelling.

    Args:
        body: The text between ``<search>`` and ``</search>``.

    Returns:
        The sub-queries in the order written.

    """
    return unique_queries(body.split(QUERY_SEPARATOR))


def cap_queries(queries: Sequence[str], max_n: int) -> tuple[list[str], list[str]]:
    """Split sub-queries into the first ``max_n`` to run and the rest to report as skipped.

    Args:
        queries: Sub-queries, e.g. from :func:`split_queries`.
        max_n: How many may run in one turn.

    Returns:
        ``(run, skipped)``.

    Raises:
        ValueError: If ``max_n`` is below 1.

    """
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1 (got {max_n}); it is the sub-queries per turn.")
    return list(queries[:max_n]), list(queries[max_n:])


def parse_action(text: str, tool_calls: Sequence[Mapping[str, Any]] | None = None) -> Action:
    """Parse one model step into an :class:`Action` (rules in the module docstring).

    Args:
        text: The step text, ending with its stop sequence if generation stopped at one.
        tool_calls: LangChain tool-call dicts ``{"name", "args", "id"}``. A ``search`` call takes
            ``query_list`` (list of str) or ``query`` (str, split on ``##``); an ``answer`` call
            takes ``answer``. The first call named ``search`` or ``answer`` decides the kind; for
            a search, every ``search`` call contributes its sub-queries (parallel tool calls are a
            parallel search). Arguments may also be a JSON object string.

    Returns:
        The action; ``kind == "invalid"`` with :attr:`Action.error` set if the step has none.

    """
    if tool_calls:
        return from_tool_calls(tool_calls, text, _last_think(text, len(text)))
    found = elements(text, ACTION_TAGS)
    if not found:
        return Action("invalid", raw=text, think=_last_think(text, len(text)), error=_why(text))
    tag, start, end = found[0]
    think = _last_think(text, start)
    body_end = end - len(tag) - 3
    body = text[text.rfind(f"<{tag}>", start, body_end) + len(tag) + 2 : body_end]
    if tag == "tool_call":
        payload = load_json(body)
        if not isinstance(payload, Mapping):
            return invalid(text, think, "<tool_call> must hold a JSON object with name/arguments")
        call = {"name": payload.get("name"), "args": payload.get("arguments", payload.get("args"))}
        return from_tool_calls([call], text, think)
    if tag == "answer":
        answer = body.strip()
        if not answer:
            return invalid(text, think, "empty <answer></answer>")
        return Action("answer", answer=answer, think=think, raw=text)
    queries = split_queries(body)
    if not queries:
        return invalid(text, think, "empty <search></search>: no non-empty sub-query")
    return Action("search", queries=tuple(queries), think=think, raw=text)


def format_step(action: Action) -> str:
    r"""Write an action as step text, the inverse of :func:`parse_action`.

    The layout of the trained policies' steps: ``"<think> t </think>\n<search> a ## b </search>"``
    or ``"... <answer> x </answer>"``, the think element left out when ``action.think`` is
    empty. Used to show a policy a step that reached it as a tool call (``create_agent``
    transcripts); ``parse_action`` of the result gives back the action's kind, sub-queries,
    answer and think.

    Args:
        action: A parsed action.

    Returns:
        The step text; for an ``invalid`` action, its ``raw`` text unchanged.
    """
    if action.kind == "invalid":
        return action.raw
    think = f"<think> {action.think} </think>\n" if action.think else ""
    if action.kind == "answer":
        return f"{think}<answer> {action.answer} </answer>"
    return f"{think}<search> {f' {QUERY_SEPARATOR} '.join(action.queries)} </search>"


def restore_stop_sequence(text: str, stop_reason: object) -> str:
    """Put back the stop sequence an OpenAI-compatible server stripped from the output.

    Args:
        text: The generated text.
        stop_reason: What stopped generation (vLLM's ``stop_reason``); only a member of
            :data:`STOP_SEQUENCES` is appended, anything else (EOS, length) leaves ``text`` as is.

    Returns:
        ``text`` ending with the stop sequence when generation stopped at one.

    """
    if isinstance(stop_reason, str) and stop_reason in STOP_SEQUENCES:
        return text if text.endswith(stop_reason) else text + stop_reason
    return text


def _last_think(text: str, limit: int) -> str | None:
    thinks = elements(text[:limit], ("think",))
    if not thinks:
        return None
    _, start, end = thinks[-1]
    body = text[text.rfind("<think>", start, end - 8) + 7 : end - 8].strip()
    return body or None


def _why(text: str) -> str:
    for tag in ACTION_TAGS:
        if f"<{tag}>" in text:
            return f"<{tag}> is never closed: the step must end with </{tag}>"
    return "no <search>...</search> or <answer>...</answer> in the step"
