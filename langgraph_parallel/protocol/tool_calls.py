"""Tool-call steps: a ``search`` call (``query_list`` or ``query``) or an ``answer`` call.

Models served with tools, and ``<tool_call>`` JSON in raw text, reach :func:`from_tool_calls`;
whatever the arguments hold, the result is an :class:`~.action.Action`, never an exception.
:func:`search_queries` reads the arguments of one ``search`` call; the ParallelSearch tool for
``create_agent`` reads its calls with it too, so a graph step and a tool call accept the same
shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_parallel.protocol.action import QUERY_SEPARATOR, Action, invalid, unique_queries

__all__ = ["TOOL_NAMES", "from_tool_calls", "load_json", "search_queries"]

TOOL_NAMES = ("search", "answer")


def from_tool_calls(calls: Sequence[object], text: str, think: str | None) -> Action:
    """Return the action of LangChain tool-call dicts ``{"name", "args"}``.

    Rules in :func:`~langgraph_parallel.protocol.parse.parse_action`.
    """
    known = [c for c in calls if isinstance(c, Mapping) and c.get("name") in TOOL_NAMES]
    if not known:
        names = [c.get("name") if isinstance(c, Mapping) else c for c in calls]
        return invalid(text, think, f"unknown tool call(s) {names!r}; use `search` or `answer`")
    if known[0]["name"] == "answer":
        answer, error = _answer_arg(known[0].get("args"))
        if error:
            return invalid(text, think, error)
        return Action("answer", answer=answer, think=think, raw=text)
    pieces: list[str] = []
    for call in known:
        if call["name"] == "search":
            found, error = search_queries(call.get("args"))
            if error:
                return invalid(text, think, error)
            pieces.extend(found)
    return Action("search", queries=tuple(unique_queries(pieces)), think=think, raw=text)


def _arguments(args: object) -> Mapping[str, Any] | None:
    # OpenAI-style raw arguments arrive as a JSON string rather than a dict.
    value = load_json(args) if isinstance(args, str) else args
    return value if isinstance(value, Mapping) else None


def search_queries(args: object) -> tuple[list[str], str | None]:
    """Read the sub-queries of one ``search`` call's arguments, in the shapes models send.

    ``query_list`` may be a list of strings, a JSON-encoded list of strings (some providers
    encode nested arguments), or one string; ``query`` may be one string. Every string is split
    on ``##`` and the pieces are cleaned and de-duplicated (:func:`~.action.unique_queries`).

    Args:
        args: The call's arguments: a mapping, or a JSON object string.

    Returns:
        ``(queries, None)``, or ``([], error)`` saying what is wrong with the arguments.
    """
    mapping = _arguments(args)
    if mapping is None:
        return [], "search tool call needs an object of arguments with `query_list`"
    if "query_list" in mapping:
        value = mapping["query_list"]
        if isinstance(value, str):
            # A JSON list inside the string is a list; any other string is the query itself.
            decoded = load_json(value) if value.lstrip().startswith("[") else None
            value = decoded if isinstance(decoded, list) else [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(q, str) for q in value):
            return [], "search tool call: `query_list` must be a list of strings"
        pieces = [piece for query in value for piece in query.split(QUERY_SEPARATOR)]
    elif "query" in mapping:
        if not isinstance(mapping["query"], str):
            return [], "search tool call: `query` must be a string"
        pieces = mapping["query"].split(QUERY_SEPARATOR)
    else:
        return [], "search tool call needs `query_list` (list of str) or `query` (str)"
    queries = unique_queries(pieces)
    return queries, None if queries else "search tool call has no non-empty query"


def _answer_arg(args: object) -> tuple[str, str | None]:
    mapping = _arguments(args)
    value = None if mapping is None else mapping.get("answer")
    # Models emitting JSON may answer a year or a count as a bare number; huge ints are nonsense
    # and str() of them can raise, so they are refused.
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and value.bit_length() < 64
    ):
        value = str(value)
    if not isinstance(value, str):
        return "", "answer tool call needs a string `answer` argument"
    answer = value.strip()
    return answer, None if answer else "answer tool call has an empty `answer`"


def load_json(raw: str) -> object:
    """Return ``json.loads(raw)``, or ``None`` for text that is not JSON (or nests too deep)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
