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
  ``round``; at the end ``answer`` and ``stop_reason``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["emit"]


def emit(runtime: Any, event: str, **fields: Any) -> None:
    """Write ``{"event": event, **fields}`` to the run's custom stream; a no-op when unread."""
    writer = getattr(runtime, "stream_writer", None)
    if callable(writer):
        writer({"event": event, **fields})
