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

from langchain_core.messages import BaseMessage, ToolMessage

__all__ = ["tool_searches"]


def tool_searches(messages: Sequence[BaseMessage], first: int = 0) -> list[dict[str, Any]]:
    """Each sub-query the ``search`` tool ran in a conversation, with the titles it found.

    Read from the tool results' artifacts; ``turn`` counts the conversation's searches (the
    results of one search step of our graphs' chats, one per sub-query, share the artifact's
    ``turn``, and count once), and only results at index ``first`` or later are listed (a
    forked conversation's own, numbered after the ones it inherited).
    """
    found: list[dict[str, Any]] = []
    turn = 0
    step: object = None
    for index, message in enumerate(messages):
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        if not isinstance(artifact, dict) or "queries" not in artifact:
            continue
        key = ("turn", artifact["turn"]) if "turn" in artifact else ("message", index)
        if key != step:
            turn, step = turn + 1, key
        titles = artifact.get("titles") or []
        for i, query in enumerate(artifact["queries"] if index >= first else []):
            shown = titles[i] if i < len(titles) else []
            found.append({"turn": turn, "query": query, "titles": list(shown)})
    return found
