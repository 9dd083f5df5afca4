"""A ParallelSearch run stopped mid-way resumes on its thread_id without redoing finished steps.

Two ways to stop it: ``interrupt_after=["observe"]`` in-process, and a child process that dies
(``os._exit``) inside the second model call. Both resume with ``graph.invoke(None, config)`` on
a ``SqliteSaver`` file; the counting fakes show which steps ran again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from tests.fakes import CountingSearcher, ScriptedChatModel

REPO = Path(__file__).resolve().parents[2]
SCRIPT = [
    "<think>Compare both.</think>\n<search> Ed Wood nationality ## Scott Derrickson nationality "
    "</search>",
    "<think>Both are American.</think>\n<answer> yes </answer>",
]
QUESTION = {"question": "Were Scott Derrickson and Ed Wood of the same nationality?"}


def run(checkpointer: Any = None, **invoke: Any) -> tuple[dict[str, Any], int, int]:
    model, searcher = ScriptedChatModel(script=SCRIPT), CountingSearcher()
    graph = create_parallel_search_graph(model, searcher, checkpointer=checkpointer)
    state = graph.invoke(QUESTION, **invoke)
    return state, len(model.calls), len(searcher.queries)


@pytest.fixture(scope="module")
def uninterrupted() -> tuple[dict[str, Any], int, int]:
    state, calls, searches = run()
    assert state["answer"] == "yes" and (calls, searches) == (2, 2)
    return state, calls, searches


def test_interrupt_after_observe_then_resume(tmp_path: Path, uninterrupted: Any) -> None:
    config = {"configurable": {"thread_id": "t-1"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "ckpt.sqlite")) as saver:
        model, searcher = ScriptedChatModel(script=SCRIPT), CountingSearcher()
        graph = create_parallel_search_graph(model, searcher, checkpointer=saver)
        graph.invoke(QUESTION, config, interrupt_after=["observe"])
        assert graph.get_state(config).next == ("think",)
        assert (len(model.calls), len(searcher.queries)) == (1, 2)
        final = graph.invoke(None, config)
    expected, calls, searches = uninterrupted
    assert (len(model.calls), len(searcher.queries)) == (calls, searches)
    assert final["answer"] == expected["answer"] == "yes"
    assert final["counters"] == expected["counters"]
    assert [r["query"] for r in final["search_results"]] == [
        "Ed Wood nationality",
        "Scott Derrickson nationality",
    ]


CHILD = textwrap.dedent(
    """
    import os, sys
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from tests.fakes import CountingSearcher, ScriptedChatModel
    from tests.unit.test_checkpoint_resume import QUESTION, SCRIPT

    class DiesOnSecondCall(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if len(self.calls) == 1:
                os._exit(17)  # killed mid-step: no cleanup, no final checkpoint
            return super()._generate(messages, stop, run_manager, **kwargs)

    class LoggingSearcher(CountingSearcher):
        def batch_search(self, queries, k=3):
            print("searched", *queries, flush=True)
            return super().batch_search(queries, k)

    with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
        graph = create_parallel_search_graph(
            DiesOnSecondCall(script=SCRIPT), LoggingSearcher(), checkpointer=saver
        )
        # "sync": each step's checkpoint is on disk before the next step starts.
        graph.invoke(QUESTION, {"configurable": {"thread_id": "t-2"}}, durability="sync")
    """
)


def test_process_killed_mid_run_resumes_without_redoing_steps(
    tmp_path: Path, uninterrupted: Any
) -> None:
    db = str(tmp_path / "ckpt.sqlite")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, db], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 17, child.stderr
    # The fan-out's two sub-queries were searched, together in one call, before the death.
    (searched,) = child.stdout.splitlines()
    assert "Ed Wood nationality" in searched and "Scott Derrickson nationality" in searched
    config = {"configurable": {"thread_id": "t-2"}}
    with SqliteSaver.from_conn_string(db) as saver:
        model, searcher = ScriptedChatModel(script=SCRIPT[1:]), CountingSearcher()
        graph = create_parallel_search_graph(model, searcher, checkpointer=saver)
        assert graph.get_state(config).next == ("think",)
        final = graph.invoke(None, config)
    # Only the step that was running when the process died runs again; no search is repeated.
    assert (len(model.calls), len(searcher.queries)) == (1, 0)
    expected = uninterrupted[0]
    assert final["answer"] == expected["answer"] == "yes"
    assert final["counters"] == expected["counters"]
    assert len(final["search_results"]) == 2


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_any_tool_call_a_model_writes_is_checkpointed(tmp_path: Path, store: str) -> None:
    """Integers beyond 64 bits (msgpack's limit) and lone surrogates once killed the run."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    call = {
        "name": "search",
        "args": {"query": -(2**63) - 1, "query_list": [2**64, "ok", {"\ud800": (1, 2**70)}]},
        "id": "c1",
        "type": "tool_call",
    }
    script = [AIMessage(content="", tool_calls=[call]), "<answer> done </answer>"]
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as sqlite:
        saver = InMemorySaver() if store == "memory" else sqlite
        graph = create_parallel_search_graph(
            ScriptedChatModel(script=script), CountingSearcher(), checkpointer=saver
        )
        state = graph.invoke(QUESTION, config)
        stored = graph.get_state(config).values["transcript"][1].tool_calls[0]["args"]
    assert state["answer"] == "done"
    assert stored == {
        "query": str(-(2**63) - 1),
        "query_list": [str(2**64), "ok", {"\ufffd": [1, str(2**70)]}],
    }
