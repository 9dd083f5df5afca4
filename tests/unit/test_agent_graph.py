"""``create-agent``: a create_agent app measured through the question interface of our graphs."""

from __future__ import annotations

from langgraph_parallel.agent.run import run_question
from langgraph_parallel.apps.registry import GRAPH_NAMES, build_graph
from langgraph_parallel.eval.recall import run_searches
from tests.fakes import CountingSearcher, ToolCallingChatModel, search_call

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
MAGAZINES = ["Arthur's Magazine", "First for Women"]


def test_the_question_goes_in_and_the_answer_counters_and_searches_come_out() -> None:
    assert "create-agent" in GRAPH_NAMES
    model = ToolCallingChatModel(
        script=[search_call({"query_list": MAGAZINES}), "Arthur's Magazine"]
    )
    searcher = CountingSearcher()
    graph = build_graph("create-agent", model, searcher, max_turns=4, top_k=3)
    events: list[dict] = []
    run = run_question(graph, QUESTION, on_event=events.append)
    assert run.answer == "Arthur's Magazine" and run.stop_reason == "answered"
    assert searcher.batches == [MAGAZINES]  # both sub-queries in one batched retrieval
    assert run.counters["llm_calls"] == 2 and run.counters["sub_queries"] == 2
    assert run.counters["turns"] == 1 and run.extra_counters["parallel_turns"] == 1
    assert run_searches(run.state) == [
        {"turn": 1, "query": q, "titles": [f"Title {q}"]} for q in MAGAZINES
    ]


def test_an_empty_last_reply_is_no_answer() -> None:
    model = ToolCallingChatModel(script=[search_call({"query_list": ["a"]}), ""])
    graph = build_graph("create-agent", model, CountingSearcher(), max_turns=1)
    run = run_question(graph, QUESTION)
    assert run.answer is None and run.stop_reason == "no_answer"
