"""What a search tool searched in a conversation: its sub-queries and the titles found.

The ``create_agent`` path keeps no ``search_results`` of its own: each ``search`` tool result
carries them in its artifact (``{"queries", "titles"}``, as
:class:`~langgraph_parallel.parallel_search.agent_tool.ParallelSearchTool` writes it). Reading
them back here gives the question interface and ParallelMuse's forked agents the rows our graphs
write, so the harness scores gold-page recall the same way for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

__all__ = ["searches_since_question", "tool_searches"]


def searches_since_question(messages: Sequence[Any], tool_name: str) -> list[int]:
    """Return how many ``tool_name`` calls each AI message since the last human one made.

    Oldest first; the one backwards scan every rule over a question's searches reads: a turn
    limit sums the counts, and a search step's number in the question is how many counts up to
    its own are above zero (the first search step's is 1).
    """
    counts: list[int] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            counts.append(sum(call["name"] == tool_name for call in message.tool_calls))
    return counts[::-1]


def tool_searches(messages: Sequence[BaseMessage], first: int = 0) -> list[dict[str, Any]]:
    """Each sub-query the ``search`` tool ran in a conversation, with the titles it found.

    Read from the tool results' artifacts; ``turn`` counts the conversation's search steps
    (the results of one AI message's calls count once: our graphs' chats answer each
    sub-query's call apart), and only results at index ``first`` or later are listed (a forked
    conversation's own, numbered after the ones it inherited).
    """
    found: list[dict[str, Any]] = []
    turn = 0
    step: object = None
    asked: dict[str, int] = {}  # call id -> the index of the AI message that made the call
    for index, message in enumerate(messages):
        for call in getattr(message, "tool_calls", None) or []:
            asked[str(call.get("id"))] = index
        if not isinstance(message, ToolMessage):
            continue
        artifact = message.artifact
        if not isinstance(artifact, dict) or "queries" not in artifact:
            continue
        key = asked.get(str(message.tool_call_id), index)
        if key != step:
            turn, step = turn + 1, key
        titles = artifact.get("titles") or []
        for i, query in enumerate(artifact["queries"] if index >= first else []):
            shown = titles[i] if i < len(titles) else []
            found.append({"turn": turn, "query": query, "titles": list(shown)})
    return found
