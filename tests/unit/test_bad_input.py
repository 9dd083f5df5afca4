"""Bad input is refused loudly, never run silently wrong (issue 76, item 4).

A searcher returning anything but passages fails the run at its first search, naming the
``Passage`` contract, on every path (the graph, the fan-out step, the tool, ParallelMuse); a
search that raises or times out is counted (``search_errors``), logged and shown by ``ask``; a
search timeout of 0 or below and a ``None`` model are refused when the graph is built or the run
starts. Fakes throughout, and a real index and a real LangChain retriever for the right case.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document

import langgraph_parallel
from langgraph_parallel import (
    MuseContext,
    Passage,
    SearchContext,
    UserError,
    create_direct_graph,
    create_fan_out_search_graph,
    create_parallel_muse_graph,
    create_parallel_search_graph,
    parallel_search_rollouts,
    parallel_search_tool,
)
from tests.fakes import CountingSearcher, ScriptedChatModel

SEARCH_THEN_ANSWER = ["<search> Ed Wood ## Scott Derrickson </search>", "<answer> yes </answer>"]


def scripted() -> ScriptedChatModel:
    return ScriptedChatModel(script=list(SEARCH_THEN_ANSWER))


class WrongSearcher:
    """Returns what ``make(query)`` builds for each query; counts its calls."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.calls = 0

    def batch_search(self, queries: Sequence[str], k: int = 3) -> Any:
        self.calls += 1
        return [self.make(q) for q in queries]


WRONG = {
    "dicts": (lambda q: [{"title": q, "text": "t"}], r"returned a dict where a Passage"),
    "strings": (lambda q: [f"text about {q}"], r"returned a str where a Passage"),
    "documents": (lambda q: [Document(q)], r"returned a Document \(a LangChain Document"),
    "flat": (lambda q: Passage(q, q, "t"), r"returned a Passage for query 0 where a list"),
}


def test_passage_is_exported_where_searchers_are() -> None:
    from langgraph_parallel import retrieval

    assert langgraph_parallel.Passage is retrieval.Passage is Passage
    assert "Passage" in langgraph_parallel.__all__ and "Passage" in retrieval.__all__


@pytest.mark.parametrize("kind", sorted(WRONG))
def test_a_searcher_returning_the_wrong_type_fails_the_run_at_its_first_search(kind: str) -> None:
    make, said = WRONG[kind]
    searcher = WrongSearcher(make)
    model = scripted()
    graph = create_parallel_search_graph(model, searcher, prompt_style="raw")
    with pytest.raises(UserError, match=said) as raised:
        graph.invoke({"question": "Were they of the same nationality?"})
    message = str(raised.value)
    # What came, what is expected, how to build one.
    assert "WrongSearcher.batch_search" in message
    assert "one list of Passage per query" in message and "Passage(id=..., title=..." in message
    # The first search: one batch_search for the fan-out, one model call, no second turn.
    assert searcher.calls == 1 and len(model.calls) == 1


def test_junk_from_a_searcher_that_returned_passages_before_is_a_failing_search() -> None:
    # The reliability experiment's ``garbage`` fault: a service that worked, then answers
    # junk. Reported, counted and logged like a raise; refused only when it is the first answer.
    from tests.fakes import FlakySearcher

    always = FlakySearcher(1.0, modes=["garbage"])
    graph = create_parallel_search_graph(scripted(), always, prompt_style="raw")
    with pytest.raises(UserError, match="FlakySearcher.batch_search returned a NoneType"):
        graph.invoke({"question": "Q?"})

    answers = iter([[[Passage("p", "P", "t")]], [None]])

    class Flaky:
        def batch_search(self, queries: Sequence[str], k: int = 3) -> Any:
            return next(answers)

    script = ["<search> a </search>", "<search> b </search>", "<answer> c </answer>"]
    graph = create_parallel_search_graph(
        ScriptedChatModel(script=script), Flaky(), prompt_style="raw", retry_policy=None
    )
    state = graph.invoke({"question": "Q?"})
    assert state["answer"] == "c" and state["counters"]["search_errors"] == 1
    errors = [r.get("error") for r in state["search_results"]]
    assert errors[0] is None
    assert errors[1] == (
        "search failed: TypeError: Flaky.batch_search returned a NoneType for query 0 where a "
        "list of passages was expected"
    )


def test_the_wrong_number_of_result_lists_is_refused_too() -> None:
    class Short:
        def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
            return [[Passage("a", "A", "t")]]

    graph = create_parallel_search_graph(scripted(), Short(), prompt_style="raw")
    with pytest.raises(UserError, match="returned 1 result lists for 2 queries.*Passage"):
        graph.invoke({"question": "Q?"})


def test_the_wrong_type_fails_an_async_run_the_same_way() -> None:
    searcher = WrongSearcher(WRONG["dicts"][0])
    graph = create_parallel_search_graph(scripted(), searcher, prompt_style="raw")
    with pytest.raises(UserError, match="returned a dict where a Passage"):
        asyncio.run(graph.ainvoke({"question": "Q?"}))
    assert searcher.calls == 1


def test_the_wrong_type_fails_the_fan_out_step_and_the_tool() -> None:
    fan_out = create_fan_out_search_graph(WrongSearcher(WRONG["dicts"][0]))
    with pytest.raises(UserError, match="returned a dict where a Passage"):
        fan_out.invoke({"queries": ["a", "b"]})
    searcher = WrongSearcher(WRONG["strings"][0])
    tool = parallel_search_tool(searcher)
    with pytest.raises(UserError, match="returned a str where a Passage"):
        tool.invoke({"query_list": ["a", "b"]})
    assert searcher.calls == 1


def test_the_wrong_type_fails_a_create_agent_run() -> None:
    from langchain.agents import create_agent

    from tests.fakes import ToolCallingChatModel, search_call

    model = ToolCallingChatModel(script=[search_call({"query_list": ["a", "b"]}), "done"])
    agent = create_agent(model, tools=[parallel_search_tool(WrongSearcher(WRONG["dicts"][0]))])
    with pytest.raises(UserError, match="returned a dict where a Passage"):
        agent.invoke({"messages": [("user", "Q?")]})


def test_the_wrong_type_fails_a_parallel_muse_run() -> None:
    searcher = WrongSearcher(WRONG["dicts"][0])
    model = ScriptedChatModel(script=SEARCH_THEN_ANSWER * 4)
    rollouts = parallel_search_rollouts(model, searcher)
    muse = create_parallel_muse_graph(rollouts, context=MuseContext(budget=2, prompt_style="raw"))
    with pytest.raises(UserError, match="returned a dict where a Passage"):
        muse.invoke({"question": "Q?"})


class FailingAndHangingSearcher:
    """``down`` raises, ``slow`` hangs until released, anything else finds one passage."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        if "down" in queries:
            raise RuntimeError("service unavailable")
        if "slow" in queries:
            self.release.wait(10)
        return [[Passage(q, f"Title {q}", f"About {q}.")] for q in queries]


def test_failed_and_timed_out_searches_are_counted_logged_and_streamed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    searcher = FailingAndHangingSearcher()
    script = ["<search> fine ## down ## slow </search>", "<answer> x </answer>"]
    graph = create_parallel_search_graph(
        ScriptedChatModel(script=script), searcher, prompt_style="raw", search_timeout=0.5
    )
    updates = []
    with caplog.at_level(logging.WARNING, logger="langgraph_parallel.parallel_search.turn"):
        try:
            for chunk in graph.stream({"question": "Q?"}, stream_mode="updates"):
                updates.append(chunk)
        finally:
            searcher.release.set()
    observed = [u["observe"]["counters"] for u in updates if "observe" in u]
    assert observed and observed[0]["search_errors"] == 2 and observed[0]["sub_queries"] == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'down'" in w and "service unavailable" in w for w in warnings), warnings
    assert any("'slow'" in w and "timed out after 0.5 s" in w for w in warnings), warnings
    # The run still answers, and its final counters keep the count.
    final = {k: v for u in updates for node in u.values() if node for k, v in node.items()}
    assert final["stop_reason"] == "answered"


def test_a_run_without_failures_has_no_search_errors_and_the_tool_counts_them_too() -> None:
    graph = create_parallel_search_graph(scripted(), CountingSearcher(), prompt_style="raw")
    state = graph.invoke({"question": "Q?"})
    assert state["stop_reason"] == "answered"
    assert state["counters"].get("search_errors", 0) == 0 and state["counters"]["sub_queries"] == 2
    failing = CountingSearcher(fail=lambda q: RuntimeError("no") if q == "b" else None)
    call = {"name": "search", "args": {"query_list": ["a", "b"]}, "id": "1", "type": "tool_call"}
    artifact = parallel_search_tool(failing).invoke(call).artifact
    assert artifact["counters"]["search_errors"] == 1
    assert artifact["errors"][0] is None and "RuntimeError: no" in artifact["errors"][1]


def test_ask_prints_the_search_errors_beside_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph_parallel.agent.run import run_question
    from langgraph_parallel.apps.ask import Timings, _print_answer
    from langgraph_parallel.apps.ask_server import result_of

    failing = CountingSearcher(fail=lambda q: RuntimeError("down") if q == "Ed Wood" else None)
    graph = create_parallel_search_graph(scripted(), failing, prompt_style="raw")
    run = run_question(graph, "Q?")
    assert run.answer == "yes" and run.extra_counters["search_errors"] == 1
    assert result_of(run, 0.0)["search_errors"] == 1  # what the background server sends back
    args = argparse.Namespace(json=False, timings=False)
    _print_answer(args, "Q?", run.answer, run.stop_reason, run.trace, run.summary(), Timings(), 1)
    out = capsys.readouterr().out
    assert "search_errors: 1 (failed or timed out" in out
    assert "turn 1 [Ed Wood] -> search failed: RuntimeError: down" in out
    _print_answer(args, "Q?", "yes", "answered", [], {}, Timings())
    assert "search_errors: 0\n" in capsys.readouterr().out


@pytest.mark.parametrize("timeout", [0, -1, 0.0, float("nan"), "60"])
def test_a_search_timeout_that_times_every_search_out_is_refused_when_built(timeout: Any) -> None:
    said = r"search_timeout must be a number of seconds above 0, e.g. search_timeout=60"
    with pytest.raises(UserError, match=said):
        create_parallel_search_graph(scripted(), CountingSearcher(), search_timeout=timeout)
    with pytest.raises(UserError, match=said):
        create_fan_out_search_graph(CountingSearcher(), search_timeout=timeout)
    with pytest.raises(UserError, match=said):
        SearchContext(search_timeout=timeout)
    with pytest.raises(UserError, match=said):
        MuseContext(search_timeout=timeout)
    with pytest.raises(UserError, match=said):
        parallel_search_tool(CountingSearcher(), search_timeout=timeout)


def test_a_search_timeout_of_zero_is_refused_when_the_run_starts() -> None:
    searcher = CountingSearcher()
    model = scripted()
    graph = create_parallel_search_graph(model, searcher, prompt_style="raw")
    with pytest.raises(UserError, match="search_timeout must be a number of seconds above 0"):
        graph.invoke({"question": "Q?"}, context={"search_timeout": 0})
    assert searcher.queries == [] and model.calls == []
    assert graph.invoke({"question": "Q?"}, context={"search_timeout": 5})["answer"] == "yes"


@pytest.mark.parametrize(
    "build",
    [
        lambda m: create_parallel_search_graph(m, CountingSearcher()),
        lambda m: create_parallel_search_graph(m, CountingSearcher(), decompose=False),
        lambda m: create_direct_graph(m),
        lambda m: parallel_search_rollouts(m, CountingSearcher()),
    ],
    ids=["parallel_search", "sequential", "direct", "rollouts"],
)
@pytest.mark.parametrize("model", [None, "gpt-4o-mini"], ids=["none", "a_name"])
def test_a_missing_model_is_refused_when_the_graph_is_built(build: Any, model: Any) -> None:
    with pytest.raises(UserError, match=r"needs a chat model, got (NoneType|str)") as raised:
        build(model)
    if isinstance(model, str):
        assert "init_chat_model('gpt-4o-mini')" in str(raised.value)


def test_parallel_muse_refuses_no_rollouts_and_a_loop_without_a_model() -> None:
    from langgraph_parallel.agent.loop import LoopRollouts

    with pytest.raises(UserError, match="needs rollouts, got None: pass parallel_search_rollouts"):
        create_parallel_muse_graph(None)
    loop = LoopRollouts(model=None, act=lambda context, retry: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="LoopRollouts.model needs a chat model, got NoneType"):
        create_parallel_muse_graph(loop)
    # model=None is the default (the loop's model writes the reports); a name is not a model.
    rollouts = parallel_search_rollouts(scripted(), CountingSearcher())
    with pytest.raises(UserError, match=r"model=\.\.\.\) needs a chat model, got str"):
        create_parallel_muse_graph(rollouts, model="gpt-4o-mini")  # type: ignore[arg-type]
    assert create_parallel_muse_graph(rollouts, model=None) is not None


def test_a_real_index_and_a_real_langchain_retriever_still_work_unchanged() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langgraph_parallel.retrieval.indexes import corpus_index

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [Document("Ed Wood was American.", metadata={"title": "Ed Wood"}), Document("Other\nx")]
    )
    for search in (corpus_index(None, kind="bm25"), store.as_retriever(), store):
        graph = create_parallel_search_graph(scripted(), search, prompt_style="raw", top_k=2)
        state = graph.invoke({"question": "Were Scott Derrickson and Ed Wood American?"})
        assert state["stop_reason"] == "answered" and state["answer"] == "yes"
        assert "search_errors" not in state["counters"] and state["counters"]["sub_queries"] == 2
        results = state["search_results"]
        assert all(r["titles"] and not r.get("error") for r in results)
        assert all(r["text"].startswith("Doc 1(Title: ") for r in results)
