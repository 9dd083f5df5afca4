"""A ParallelSearch run killed mid-way resumes from a real PostgreSQL checkpoint.

The test starts a throwaway PostgreSQL cluster itself (Debian's ``postgresql`` server binaries,
``tests.servers.postgres_server``; skipped, saying why, where they are missing). A child process
runs the graph with ``langgraph-checkpoint-postgres``'s ``PostgresSaver`` and dies (``os._exit``)
either inside the fan-out's search or inside the next model call; a new process resumes the
thread from the checkpoint. The counting fakes show what ran again: no finished step, no
finished search, and the answer arrives.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from tests.fakes import CountingSearcher, ScriptedChatModel
from tests.servers import postgres_server
from tests.unit.test_checkpoint_resume import SCRIPT

pytestmark = pytest.mark.integration
pytest.importorskip("langgraph.checkpoint.postgres", reason="pip install '.[postgres]'")

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, sys
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from tests.fakes import CountingSearcher, ScriptedChatModel
    from tests.unit.test_checkpoint_resume import QUESTION, SCRIPT

    uri, die_in, thread = sys.argv[1:4]

    class Model(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if die_in == "model" and len(self.calls) == 1:
                os._exit(17)  # killed inside the second step
            return super()._generate(messages, stop, run_manager, **kwargs)

    class Searcher(CountingSearcher):
        def batch_search(self, queries, k=3):
            if die_in == "search":
                os._exit(17)  # killed inside the fan-out's search
            print("searched", *queries, flush=True)
            return super().batch_search(queries, k)

    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
        graph = create_parallel_search_graph(Model(script=SCRIPT), Searcher(), checkpointer=saver)
        graph.invoke(QUESTION, {"configurable": {"thread_id": thread}}, durability="sync")
    """
)


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as uri:
        yield uri


@pytest.mark.parametrize(
    ("die_in", "searched_before", "calls_after", "searches_after"),
    [
        # The fan-out's searches finished and were checkpointed: only the step that was
        # running when the process died runs again, and no sub-query is searched again.
        ("model", 1, 1, 0),
        # Killed inside the fan-out: its searches never finished, so they run, once each.
        ("search", 0, 1, 2),
    ],
)
def test_killed_run_resumes_from_postgres(
    postgres: str, die_in: str, searched_before: int, calls_after: int, searches_after: int
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    thread = f"killed-in-{die_in}"
    child = subprocess.run(
        [sys.executable, "-c", CHILD, postgres, die_in, thread],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 17, child.stderr[-2000:]
    assert len(child.stdout.splitlines()) == searched_before
    config = {"configurable": {"thread_id": thread}}
    with PostgresSaver.from_conn_string(postgres) as saver:
        # Only the second step's script: replaying the first step would be a bug.
        model, searcher = ScriptedChatModel(script=SCRIPT[1:]), CountingSearcher()
        graph = create_parallel_search_graph(model, searcher, checkpointer=saver)
        pending = graph.get_state(config).next
        assert pending == (("think",) if die_in == "model" else ("search", "search"))
        final = graph.invoke(None, config)
    assert (len(model.calls), len(searcher.queries)) == (calls_after, searches_after)
    assert sorted(searcher.queries) == (
        [] if die_in == "model" else ["Ed Wood nationality", "Scott Derrickson nationality"]
    )
    assert final["answer"] == "yes" and final["stop_reason"] == "answered"
    assert [r["query"] for r in final["search_results"]] == [
        "Ed Wood nationality",
        "Scott Derrickson nationality",
    ]
    assert final["counters"]["llm_calls"] == 2 and final["counters"]["sub_queries"] == 2
