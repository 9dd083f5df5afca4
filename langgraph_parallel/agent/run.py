"""Run one question through a graph and collect the counters every report uses."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.errors import GraphRecursionError

from langgraph_parallel.agent.state import COUNTER_KEYS


@dataclass
class QuestionRun:
    """Outcome of one question: the answer, the counters and a readable trace.

    Attributes:
        answer: Final answer, or ``None``.
        stop_reason: Why the run ended.
        counters: ``llm_calls``, ``turns``, ``sub_queries``, ``prompt_tokens``,
            ``cached_prompt_tokens``, ``completion_tokens`` (all present, zero if unused).
        extra_counters: Graph-specific counters beyond those six (e.g. ``invalid_steps``,
            ``parallel_turns``).
        wall_s: Wall-clock seconds of the graph run.
        trace: Lines showing each model step and the documents each sub-query retrieved.
        state: The final graph state.
    """

    answer: str | None
    stop_reason: str
    counters: dict[str, int]
    wall_s: float
    extra_counters: dict[str, int] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Return counters, ``wall_s`` and ``answer`` as one flat dict (``ask --json``)."""
        return {**self.counters, "wall_s": round(self.wall_s, 3), "answer": self.answer}


def run_question(
    graph: Any,
    question: str,
    *,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    **invoke_kwargs: Any,
) -> QuestionRun:
    """Invoke ``graph`` on ``{"question": question}`` and collect counters and trace.

    With ``on_event``, the graph is streamed instead and each live progress event
    (:mod:`~langgraph_parallel.agent.events`, from every subgraph) is passed to it as it
    happens; the result is the same.

    The graphs of this package stop with a ``recursion_limit: ...`` reason before LangGraph's
    recursion limit would raise; for a limit too small for even that (``recursion_limit=1``) or
    a user's own graph, a ``GraphRecursionError`` becomes that stop reason here too, with no
    answer and zero counters (the state of an interrupted run is not returned by ``invoke``).
    """
    start = time.perf_counter()
    try:
        if on_event is None:
            state = graph.invoke({"question": question}, **invoke_kwargs)
        else:
            state = _stream(graph, question, on_event, **invoke_kwargs)
    except GraphRecursionError as exc:
        state = {"answer": None, "stop_reason": f"recursion_limit: {exc}".splitlines()[0]}
    wall = time.perf_counter() - start
    raw = state.get("counters") or {}
    counters = {key: int(raw.get(key, 0)) for key in COUNTER_KEYS}
    return QuestionRun(
        answer=state.get("answer"),
        stop_reason=state.get("stop_reason") or "",
        counters=counters,
        wall_s=wall,
        extra_counters={k: int(v) for k, v in raw.items() if k not in COUNTER_KEYS},
        trace=trace_lines(state),
        state=state,
    )


def _stream(
    graph: Any, question: str, on_event: Callable[[dict[str, Any]], None], **kwargs: Any
) -> dict[str, Any]:
    """Stream the run: custom events go to ``on_event``; return what ``invoke`` would have.

    The ``values`` mode streams the whole state; ``invoke`` returns the output schema's keys.
    """
    state: dict[str, Any] = {}
    chunks = graph.stream(
        {"question": question}, stream_mode=["custom", "values"], subgraphs=True, **kwargs
    )
    for namespace, mode, data in chunks:
        if mode == "custom":
            on_event(data)
        elif not namespace:  # the root graph's values; a subgraph's are its own state
            state = data
    output = graph.get_output_jsonschema().get("properties")
    return {k: v for k, v in state.items() if k in output} if output else state


def trace_lines(state: dict[str, Any]) -> list[str]:
    """Readable trace: model steps (first prompt omitted) and retrieved titles per sub-query.

    The steps are the ``transcript``'s (the loop's graphs), else the ``messages``' (an agent's).

    The final answer-only step (the run's last model step, when ``counters`` has
    ``final_answer_steps``) is shown as ``final step (answer only): ...``.
    """
    # The loop's graphs keep the model's steps in `transcript`; an agent's chat is its transcript.
    said = state.get("transcript", state.get("messages")) or []
    steps = [m for m in said[1:] if m.type == "ai"]
    final = bool((state.get("counters") or {}).get("final_answer_steps"))
    lines = []
    for i, message in enumerate(steps):
        label = "final step (answer only)" if final and i == len(steps) - 1 else "step"
        lines.append(f"{label}: {' '.join(str(message.content).split())}")
    for result in state.get("search_results") or []:
        titles = "; ".join(result.get("titles") or []) or result.get("error") or "no documents"
        lines.append(f"turn {result['turn']} [{result['query']}] -> {titles}")
    return lines
