"""``ask``'s live view: one readable line per progress event."""

from __future__ import annotations

from langgraph_parallel.agent.events import render_event


def test_every_event_kind_renders_as_one_line() -> None:
    lines = [
        render_event({"event": "step", "step": 1, "action": "search", "queries": ["a", "b"]}),
        render_event(
            {"event": "step", "step": 2, "action": "answer", "queries": [], "answer": "yes"}
        ),
        render_event({"event": "search_start", "id": "1.0", "query": "a"}),
        render_event({"event": "search_end", "id": "1.0", "query": "a", "titles": ["A", "B"]}),
        render_event(
            {
                "event": "search_end",
                "id": "1.1",
                "query": "b",
                "titles": [],
                "error": "search timed out after 60 s",
            }
        ),
        render_event(
            {
                "event": "rollout_start",
                "rollout": "t3",
                "parent": "t0",
                "round": 1,
                "branch_step": 2,
            }
        ),
        render_event(
            {"event": "rollout_end", "rollout": "t3", "answer": "yes", "stop_reason": "answered"}
        ),
        render_event({"event": "something new", "x": 1}),
        render_event(
            {"event": "step", "step": 1, "action": "search", "queries": ["a"], "rollout": "t3"}
        ),
        render_event({"event": "search_start", "id": "1.0", "query": "a", "rollout": "t3"}),
    ]
    assert lines == [
        "step 1: search a ## b",
        "step 2: answer yes",
        "  search 1.0 started: a",
        "  search 1.0 done: a -> A, B",
        "  search 1.1 done: b -> search timed out after 60 s",
        "rollout t3 started (round 1 from t0 at step 2)",
        "rollout t3 done: 'yes' (answered)",
        '{"event": "something new", "x": 1}',
        "[t3] step 1: search a",  # a ParallelMuse rollout's own steps name it
        "  [t3] search 1.0 started: a",
    ]
    assert all("\n" not in line for line in lines)
