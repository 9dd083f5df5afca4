"""Live progress events on LangGraph's custom stream, for UIs that show the branches as they run.

Nodes call :func:`emit`; a caller sees the events with
``graph.stream(inputs, stream_mode=["updates", "custom"], subgraphs=True)`` (Studio shows them
too). Every event is a dict with ``event`` and the ids that place it:

- ``step``: a model step ended (``step``, ``action``: ``search``/``answer``/``invalid``,
  ``queries`` or ``answer``, and ``final_answer_step``: whether it was the final answer-only
  step after a search at the last turn);
- ``search_start`` / ``search_end``: one sub-query of a fan-out (``id`` ``"turn.index"``,
  ``query``; at the end ``titles`` and ``error``);
- ``rollout_start`` / ``rollout_end``: one ParallelMuse trajectory (``rollout``, ``parent``,
  ``round``; at the end ``answer`` and ``stop_reason``). A rollout's own ``step`` and
  ``search_*`` events carry its ``rollout`` id too.

:func:`render_event` writes one as the line ``ask``'s live view shows.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["emit", "render_event"]


def emit(runtime: Any, event: str, **fields: Any) -> None:
    """Write ``{"event": event, **fields}`` to the run's custom stream; a no-op when unread."""
    writer = getattr(runtime, "stream_writer", None)
    if callable(writer):
        writer({"event": event, **fields})


def render_event(event: dict[str, Any]) -> str:
    """Return one line of ``ask``'s live view for a progress event (see ``agent.events``)."""
    kind = event.get("event")
    # A ParallelMuse rollout's own steps interleave with the others': say whose they are.
    whose = f"[{event['rollout']}] " if "rollout" in event else ""
    if kind == "step":
        what = " ## ".join(event.get("queries") or []) or event.get("answer") or ""
        final = " (final, answer only)" if event.get("final_answer_step") else ""
        return f"{whose}step {event.get('step')}{final}: {event.get('action')} {what}".rstrip()
    if kind == "search_start":
        return f"  {whose}search {event.get('id')} started: {event.get('query')}"
    if kind == "search_end":
        found = event.get("error") or ", ".join(event.get("titles") or []) or "nothing"
        return f"  {whose}search {event.get('id')} done: {event.get('query')} -> {found}"
    if kind == "rollout_start":
        parent = event.get("parent")
        origin = f" from {parent} at step {event.get('branch_step')}" if parent else ""
        return f"rollout {event.get('rollout')} started (round {event.get('round')}{origin})"
    if kind == "rollout_end":
        answer = event.get("answer")
        return f"rollout {event.get('rollout')} done: {answer!r} ({event.get('stop_reason')})"
    return json.dumps(event, default=str)
