"""Every node's two paths: ``invoke`` blocks on I/O, ``ainvoke`` awaits it (agent/nodes.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

import pytest
from langchain_core.messages import HumanMessage

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.nodes import Invoke, Wait, arun_body, run_body
from langgraph_parallel.baselines.direct import create_direct_graph
from tests.fakes import CountingSearcher, ScriptedChatModel, muse_graph
from tests.unit.test_muse import SPREADS, FakeChat, three_step_agent


def body_that_retries_once(model):
    try:
        reply = yield Invoke(model, [HumanMessage("hi")])
    except ConnectionError as exc:
        first = f"caught {exc}"
        reply = yield Invoke(model, [HumanMessage("again")])
    else:
        first = "no error"
    return first, reply.text


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_body_gets_each_outcome_or_its_error_at_the_yield(path):
    model = ScriptedChatModel(script=[ConnectionError("down"), "fine"])
    body = body_that_retries_once(model)
    result = run_body(body) if path == "sync" else asyncio.run(arun_body(body))
    assert result == ("caught down", "fine")
    assert [m[0].content for m in model.calls] == ["hi", "again"]


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_wait_past_its_timeout_raises_timeout_error_and_cancels_the_future(path):
    future: concurrent.futures.Future[str] = concurrent.futures.Future()

    def body():
        try:
            yield Wait(future, 0.05)
        except TimeoutError as exc:
            return str(exc)
        return "no timeout"

    result = run_body(body()) if path == "sync" else asyncio.run(arun_body(body()))
    assert result == "no result after 0.05 s"
    assert future.cancelled()


class AsyncOnlyModel(ScriptedChatModel):
    """Fails on the blocking path; the async path sleeps and counts calls in flight."""

    in_flight: int = 0
    most: int = 0

    def _generate(self, *args, **kwargs):
        raise AssertionError("the blocking model path ran under ainvoke")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.2)
        self.in_flight -= 1
        return ScriptedChatModel._generate(self, messages, stop, None, **kwargs)


def test_concurrent_ainvoke_runs_await_the_model_with_no_thread_per_call():
    """Eight runs at once keep eight model calls in flight with a one-thread default executor.

    A node run through the executor (LangGraph's treatment of a plain callable under
    ``ainvoke``) would hold a thread per model call and use the blocking path.
    """
    model = AsyncOnlyModel(script=["<search> a ## b </search>", "<answer> x </answer>"])
    graph = create_parallel_search_graph(model, CountingSearcher())

    async def main():
        asyncio.get_running_loop().set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=1)
        )
        return await asyncio.gather(*(graph.ainvoke({"question": "Q?"}) for _ in range(8)))

    states = asyncio.run(main())
    assert model.most == 8
    assert [s["answer"] for s in states] == ["x"] * 8
    assert all(s["counters"]["llm_calls"] >= 1 for s in states)


def test_direct_and_parallel_search_end_alike_on_both_paths():
    script = ["<search> a ## b </search>", "<answer> x </answer>"]
    for build in (
        lambda m: create_parallel_search_graph(m, CountingSearcher()),
        lambda m: create_direct_graph(m),
    ):
        sync = build(ScriptedChatModel(script=list(script))).invoke({"question": "Q?"})
        both = build(ScriptedChatModel(script=list(script))).ainvoke({"question": "Q?"})
        awaited = asyncio.run(both)
        for key in ("answer", "stop_reason", "counters", "search_results"):
            assert awaited[key] == sync[key], key


def test_parallel_muse_ends_alike_on_both_paths():
    options = {"budget": 4, "samples_per_step": 3, "join": "select"}
    graph = muse_graph(FakeChat(agent=three_step_agent(SPREADS)), CountingSearcher(), **options)
    sync = graph.invoke({"question": "Q?"})
    graph = muse_graph(FakeChat(agent=three_step_agent(SPREADS)), CountingSearcher(), **options)
    awaited = asyncio.run(graph.ainvoke({"question": "Q?"}))
    assert awaited["answer"] == sync["answer"] and awaited["stop_reason"] == sync["stop_reason"]
    assert awaited["counters"] == sync["counters"]
    key = lambda t: t["id"]  # noqa: E731
    assert [(t["id"], t["answer"]) for t in sorted(awaited["trajectories"], key=key)] == [
        (t["id"], t["answer"]) for t in sorted(sync["trajectories"], key=key)
    ]
    assert len(awaited["reports"]) == len(sync["reports"]) > 0


def test_a_hung_search_times_out_under_ainvoke_and_the_run_goes_on():
    class Hung(CountingSearcher):
        def batch_search(self, queries, k=3):
            time.sleep(1.0)
            return super().batch_search(queries, k)

    model = ScriptedChatModel(script=["<search> a </search>", "<answer> x </answer>"])
    graph = create_parallel_search_graph(model, Hung(), search_timeout=0.1)
    state = asyncio.run(graph.ainvoke({"question": "Q?"}))
    assert state["search_results"][0]["error"] == "search timed out after 0.1 s"
    assert state["answer"] == "x"


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_what_a_model_declares_is_read_off_the_event_loop_under_ainvoke():
    """Our models read what they declare from their model card: a thread does, not the loop.

    (``langgraph dev`` refuses blocking calls on its loop, file reads included; our models keep
    what they read, so later reads on the loop touch no file.)
    """
    on_loop: list[bool] = []

    class LazyModel(ScriptedChatModel):
        def declared_policy(self):
            on_loop.append(_on_a_loop())
            return {"style": "chat"}

    graph = create_parallel_search_graph(
        LazyModel(script=["<search> a </search>", "<answer> x </answer>"]), CountingSearcher()
    )
    assert asyncio.run(graph.ainvoke({"question": "Q?"}))["answer"] == "x"
    assert on_loop and not on_loop[0], on_loop  # the first read; ours cache it after
    on_loop.clear()
    direct = create_direct_graph(LazyModel(script=["<answer> y </answer>"]))
    assert asyncio.run(direct.ainvoke({"question": "Q?"}))["answer"] == "y"
    assert on_loop and not on_loop[0], on_loop
