"""The fault-injection table counts a run refused at the start (bad input, a ``UserError``)
apart from a crash, and names what crashed."""

from __future__ import annotations

from typing import Any

from lab.experiments.reliability.reliability_table import crashes_text, markdown, scenario
from langgraph_parallel.errors import UserError


class _Graph:
    """A graph whose runs refuse, crash or answer, as told."""

    def __init__(self, outcomes: list[str]) -> None:
        self.outcomes = outcomes

    def invoke(self, state: dict[str, Any], **_: Any) -> dict[str, Any]:
        outcome = self.outcomes.pop(0)
        if outcome == "refuse":
            raise UserError("No question to answer: the question is empty.")
        if outcome == "crash":
            raise RuntimeError("engine died")
        return {"answer": "x", "stop_reason": "answered", "messages": []}


def test_refusals_are_counted_apart_from_crashes() -> None:
    graph = _Graph(["answer", "refuse", "crash", "answer"])
    row = scenario("s", "parallel-search", [(graph, {}) for _ in range(4)], lambda: 0)
    assert (row["cases"], row["completed"], row["refused"], row["crashes"]) == (4, 2, 1, 1)
    assert row["crash_types"] == {"RuntimeError": 1}
    text = crashes_text([row])
    assert text.startswith("**1 crash** (parallel-search, s (RuntimeError 1))")
    assert "1 refused at the start" in text
    assert "refused at the start (bad input) 1" in markdown([row], "cmd")
    assert crashes_text([{**row, "crashes": 0, "refused": 0}]) == "**0 crashes**"
