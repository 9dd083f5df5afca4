"""ParallelSearch graph behaviour with a scripted model and a counting searcher."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_parallel import SearchContext, create_parallel_search_graph
from langgraph_parallel.protocol import INVALID_ACTION_OBSERVATION
from tests.fakes import CountingSearcher, ScriptedChatModel


def run(script, searcher=None, **options):
    model = ScriptedChatModel(script=script)
    searcher = searcher or CountingSearcher()
    graph = create_parallel_search_graph(model, searcher, **options)
    return graph.invoke({"question": "Q?"}), model, searcher


def observations(state):
    return [m.content for m in state["transcript"] if isinstance(m, HumanMessage)][1:]


def test_duplicate_sub_queries_run_once_in_one_turn():
    state, model, searcher = run(["<search> a ## b ## a </search>", "<answer> yes </answer>"])
    assert sorted(searcher.queries) == ["a", "b"]
    assert state["counters"]["turns"] == 1
    assert state["counters"]["sub_queries"] == 2
    assert state["counters"]["llm_calls"] == 2
    assert state["answer"] == "yes" and state["stop_reason"] == "answered"
    obs = observations(state)[0]
    assert obs.index("[a]") < obs.index("[b]")  # the order the model wrote them


def test_empty_and_whitespace_sub_queries_are_dropped():
    state, _, searcher = run(["<search> ## a ##   ## b ## </search>", "<answer> x </answer>"])
    assert sorted(searcher.queries) == ["a", "b"]
    assert state["counters"]["sub_queries"] == 2


def test_ten_sub_queries_run_four_and_name_the_six_skipped():
    queries = [f"q{i}" for i in range(10)]
    state, _, searcher = run([f"<search> {' ## '.join(queries)} </search>", "<answer> z </answer>"])
    assert sorted(searcher.queries) == sorted(queries[:4])
    obs = observations(state)[0]
    for skipped in queries[4:]:
        assert skipped in obs
    assert "Not searched" in obs
    assert state["search_results"][3]["query"] == "q3"


def test_a_fan_out_is_searched_in_one_call_and_joined_in_the_models_order():
    calls: list[list[str]] = []

    class Recording(CountingSearcher):
        def batch_search(self, queries, k=3):
            calls.append(list(queries))
            return super().batch_search(queries, k)

    script = [
        "<search> slow ## fast ## third </search>",
        "<search> again </search>",
        "<answer> a </answer>",
    ]
    state, _, _ = run(script, Recording())
    # one call per fan-out, whatever order the branches arrived in
    assert sorted(map(sorted, calls)) == [["again"], ["fast", "slow", "third"]]
    assert [r["query"] for r in state["search_results"]] == ["slow", "fast", "third", "again"]
    assert [r["titles"] for r in state["search_results"][:3]] == [
        ["Title slow"],
        ["Title fast"],
        ["Title third"],
    ]
    obs = observations(state)[0]
    assert obs.index("[slow]") < obs.index("[fast]") < obs.index("[third]")


def test_branches_run_one_at_a_time_still_search_every_sub_query():
    """With ``max_concurrency=1`` a fan-out's group never fills: each branch searches alone."""
    model = ScriptedChatModel(script=["<search> a ## b </search>", "<answer> x </answer>"])
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(model, searcher)
    state = graph.invoke({"question": "Q?"}, {"max_concurrency": 1})
    assert searcher.queries == ["a", "b"] and state["answer"] == "x"
    assert [r["titles"] for r in state["search_results"]] == [["Title a"], ["Title b"]]


def test_no_action_gets_the_invalid_action_observation_and_the_loop_goes_on():
    state, model, _ = run(["I think the answer is 42.", "<answer> 42 </answer>"])
    assert observations(state) == [INVALID_ACTION_OBSERVATION]
    assert state["answer"] == "42"
    assert len(model.calls) == 2


def test_max_turns_reached_gives_final_state_without_answer_and_reason():
    script = [f"<search> q{i} </search>" for i in range(5)]
    state, model, searcher = run(script, max_turns=3)
    assert state["answer"] is None
    assert state["stop_reason"].startswith("max_turns")
    # every turn's search runs; the final answer-only step searched again, which is not run
    assert len(model.calls) == 4
    assert searcher.queries == ["q0", "q1", "q2"]
    # without the final step, the third step's search is not run: no step would read it
    state, model, searcher = run(script, max_turns=3, final_answer_step=False)
    assert state["answer"] is None and state["stop_reason"].startswith("max_turns")
    assert len(model.calls) == 3
    assert searcher.queries == ["q0", "q1"]


def test_sequential_baseline_runs_one_query_per_turn_with_same_code():
    state, model, searcher = run(
        ["<search> a </search>", "<search> b </search>", "<answer> c </answer>"], decompose=False
    )
    assert searcher.queries == ["a", "b"]
    assert state["counters"]["turns"] == 2
    first_prompt = model.calls[0][0].content
    assert "##" not in first_prompt  # no decomposition instruction in the baseline


def test_decomposition_instruction_only_in_parallel_mode():
    _, model, _ = run(["<answer> a </answer>"], decompose=True)
    assert "##" in model.calls[0][0].content


def test_tool_call_with_query_list_fans_out():
    call = AIMessage(
        content="", tool_calls=[{"name": "search", "args": {"query_list": ["x", "y"]}, "id": "1"}]
    )
    state, _, searcher = run([call, "<answer> ok </answer>"])
    assert sorted(searcher.queries) == ["x", "y"]


def test_failing_search_becomes_observation_and_run_continues():
    searcher = CountingSearcher(fail=lambda q: RuntimeError("index down") if q == "bad" else None)
    state, _, _ = run(["<search> bad ## good </search>", "<answer> a </answer>"], searcher)
    obs = observations(state)[0]
    assert "index down" in obs and "Title good" in obs
    assert state["answer"] == "a"


def test_model_error_ends_with_reason_not_exception():
    state, _, _ = run([RuntimeError("context too long")])
    assert state["answer"] is None
    assert "context too long" in state["stop_reason"]


def test_counters_sum_model_usage():
    state, _, _ = run(["<search> a </search>", "<answer> b </answer>"])
    counters = state["counters"]
    assert counters["prompt_tokens"] == 20
    assert counters["cached_prompt_tokens"] == 4
    assert counters["completion_tokens"] == 10


def test_context_overrides_build_time_settings():
    model = ScriptedChatModel(script=["<search> a ## b ## c </search>", "<answer> x </answer>"])
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(model, searcher)
    state = graph.invoke({"question": "Q?"}, context=SearchContext(max_parallel_queries=2))
    assert sorted(searcher.queries) == ["a", "b"]
    assert "c" in observations(state)[0]


def test_stop_sequences_and_token_limit_are_passed_to_the_model():
    _, model, _ = run(["<answer> a </answer>"], max_tokens=77)
    assert model.call_kwargs[0]["stop"] == ["</search>", "</answer>"]
    assert model.call_kwargs[0]["max_tokens"] == 77
    assert "regex" not in model.call_kwargs[0]  # not an engine with structured outputs


def test_think_bound_reaches_the_step_regex_and_runs_can_change_it():
    from langgraph_parallel.protocol import action_regex

    class Constrained(ScriptedChatModel):
        regex: str | None = None  # what an engine with structured outputs has
        style: str = "raw"

    model = Constrained(script=["<answer> a </answer>"] * 3)
    graph = create_parallel_search_graph(model, CountingSearcher(), think_max_chars=40)
    graph.invoke({"question": "Q?"})
    graph.invoke({"question": "Q?"}, context={"think_max_chars": 90})
    graph.invoke({"question": "Q?"})
    assert [kw["regex"] for kw in model.call_kwargs] == [
        action_regex(True, 40),
        action_regex(True, 90),
        action_regex(True, 40),
    ]


def test_only_steps_whose_logprobs_are_read_ask_an_engine_for_alternatives():
    from tests.fakes import rollouts_graph

    class Constrained(ScriptedChatModel):
        regex: str | None = None  # what this package's engines have
        style: str = "raw"

    script = ["<answer> a </answer>"] * 3
    searching = Constrained(script=script)
    create_parallel_search_graph(searching, CountingSearcher()).invoke({"question": "Q?"})
    assert searching.call_kwargs[0]["top_logprobs"] == 0  # nothing reads them
    forking = Constrained(script=script)
    rollouts = rollouts_graph(forking, CountingSearcher(), budget=1, max_turns=1)
    rollouts.invoke({"question": "Q?"})
    assert forking.call_kwargs and all("top_logprobs" not in kw for kw in forking.call_kwargs)
    other = ScriptedChatModel(script=script)  # another vendor's model: its own settings
    create_parallel_search_graph(other, CountingSearcher()).invoke({"question": "Q?"})
    assert "top_logprobs" not in other.call_kwargs[0]


def test_invalid_settings_fail_when_the_graph_is_built():
    import pytest

    with pytest.raises(ValueError, match="max_turns must be at least 1"):
        create_parallel_search_graph(
            ScriptedChatModel(script=["x"]), CountingSearcher(), max_turns=0
        )


def test_extra_counters_record_invalid_steps_and_parallel_turns():
    from langgraph_parallel.agent.run import run_question

    model = ScriptedChatModel(
        script=[
            "no action",
            "<search> a ## b </search>",
            "<search> c </search>",
            "<answer> d </answer>",
        ]
    )
    graph = create_parallel_search_graph(model, CountingSearcher(), max_turns=5)
    run = run_question(graph, "Q?")
    # The turn's counters, the tool's too (test_agent_tool): searches, one a turn.
    assert run.extra_counters == {
        "invalid_steps": 1,
        "searches": 2,
        "parallel_turns": 1,
        "first_turn_parallel": 1,
    }
    assert run.counters["turns"] == 2 and run.counters["sub_queries"] == 3
    later = ScriptedChatModel(
        script=["<search> c </search>", "<search> a ## b </search>", "<answer> d </answer>"]
    )
    run = run_question(create_parallel_search_graph(later, CountingSearcher()), "Q?")
    assert run.extra_counters == {"searches": 2, "parallel_turns": 1, "first_turn_parallel": 0}
    assert set(run.summary()) == {*run.counters, "wall_s", "answer"}


def test_partial_context_keeps_the_graphs_build_time_settings():
    # The LangGraph server builds the context from the fields a request sends: the rest must
    # come from the graph's own settings, not from SearchContext's class defaults.
    model = ScriptedChatModel(script=["<search> a ## b </search>", "<answer> x </answer>"])
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(model, searcher, decompose=False, top_k=2)
    graph.invoke({"question": "Q?"}, context={"max_turns": 3})
    assert searcher.queries == ["a ## b"]
    assert "##" not in model.calls[0][0].content


class SlowCountingSearcher(CountingSearcher):
    """Holds each call 50 ms and records the most sub-queries being searched at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0

    def batch_search(self, queries, k=3):
        with self._lock:
            self.in_flight += len(queries)
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(0.05)
            return super().batch_search(queries, k)
        finally:
            with self._lock:
                self.in_flight -= len(queries)


def _concurrent_runs(search, runs=6):
    script = ["<search> a ## b </search>", "<answer> x </answer>"]
    graphs = [
        create_parallel_search_graph(ScriptedChatModel(script=script), search) for _ in range(runs)
    ]
    with ThreadPoolExecutor(runs) as pool:
        return list(pool.map(lambda g: g.invoke({"question": "Q?"}), graphs))


def test_a_shared_limited_searcher_caps_searches_across_concurrent_runs():
    from langgraph_parallel.retrieval import LimitedSearcher

    unlimited = SlowCountingSearcher()
    _concurrent_runs(unlimited)
    assert unlimited.most > 2  # six runs' fan-outs overlap when nothing limits them

    searcher = SlowCountingSearcher()
    states = _concurrent_runs(LimitedSearcher(searcher, 1))
    assert searcher.most <= 2  # one call at a time: one fan-out's two sub-queries
    assert sorted(searcher.queries) == ["a"] * 6 + ["b"] * 6
    assert [s["answer"] for s in states] == ["x"] * 6


def test_run_max_concurrency_caps_the_branches_of_a_fan_out():
    script = ["<search> a ## b ## c ## d </search>", "<answer> x </answer>"]
    capped, free = SlowCountingSearcher(), SlowCountingSearcher()
    graph = create_parallel_search_graph(ScriptedChatModel(script=script), capped)
    # A top-level key of the run config (inside "configurable" LangGraph ignores it).
    state = graph.invoke({"question": "Q?"}, {"max_concurrency": 2})
    assert capped.most <= 2 and sorted(capped.queries) == ["a", "b", "c", "d"]
    assert state["answer"] == "x"
    create_parallel_search_graph(ScriptedChatModel(script=script), free).invoke({"question": "Q?"})
    assert free.most == 4  # without the cap the four branches are searched together


def test_ainvoke_never_blocks_the_event_loop():
    """A heartbeat task keeps ticking while each of a run's model calls and searches blocks.

    Each blocking call reads the heartbeat's count before and after it blocks: the loop ran
    meanwhile iff the count moved. (An order, not a time bound, so a loaded machine cannot fail
    it.)
    """
    import asyncio

    ticks = [0]
    moved: list[tuple[str, int]] = []

    def blocking(kind, seconds):
        before = ticks[0]
        time.sleep(seconds)
        moved.append((kind, ticks[0] - before))

    class SlowModel(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            blocking("model", 0.2)  # a blocking client, the worst case
            return super()._generate(messages, stop, run_manager, **kwargs)

    class SlowSearcher(CountingSearcher):
        def batch_search(self, queries, k=3):
            blocking("search", 0.2)
            return super().batch_search(queries, k)

    script = ["<search> a ## b </search>", "<answer> x </answer>"]
    graph = create_parallel_search_graph(SlowModel(script=script), SlowSearcher())

    async def main():
        stop = asyncio.Event()

        async def heartbeat():
            while not stop.is_set():
                await asyncio.sleep(0.005)
                ticks[0] += 1

        beat = asyncio.create_task(heartbeat())
        state = await graph.ainvoke({"question": "Q?"})
        stop.set()
        await beat
        return state

    state = asyncio.run(main())
    assert state["answer"] == "x"
    assert all(count > 0 for _, count in moved), moved
    kinds = [kind for kind, _ in moved]
    assert kinds.count("model") == 2 and "search" in kinds  # every blocking call was seen


def test_stream_shows_each_step_and_sub_query_live_and_ends_like_invoke():
    from langgraph_parallel.agent.run import run_question

    script = ["<search> a ## b </search>", "<answer> x </answer>"]
    events = []
    graph = create_parallel_search_graph(ScriptedChatModel(script=script), CountingSearcher())
    streamed = run_question(graph, "Q?", on_event=events.append)
    graph = create_parallel_search_graph(ScriptedChatModel(script=script), CountingSearcher())
    invoked = run_question(graph, "Q?")
    assert set(streamed.state) == set(invoked.state) and streamed.answer == "x"
    for key in ("answer", "stop_reason", "counters", "search_results"):
        assert streamed.state[key] == invoked.state[key]
    assert [m.content for m in streamed.state["transcript"]] == [
        m.content for m in invoked.state["transcript"]
    ]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "step" and kinds[-1] == "step"
    assert events[0]["action"] == "search" and events[0]["queries"] == ["a", "b"]
    assert events[-1]["action"] == "answer" and events[-1]["answer"] == "x"
    for ident, query in (("1.0", "a"), ("1.1", "b")):
        start = next(i for i, e in enumerate(events) if e.get("id") == ident)
        end = next(e for e in events[start + 1 :] if e.get("id") == ident)
        assert events[start] == {"event": "search_start", "id": ident, "query": query}
        assert end["event"] == "search_end" and end["titles"] == [f"Title {query}"]
    # Nothing is written when nobody streams the custom mode.
    assert graph.invoke({"question": "Q?"})["answer"] == "x"


def test_a_second_question_on_a_finished_thread_is_a_new_question():
    from langgraph.checkpoint.memory import InMemorySaver

    model = ScriptedChatModel(
        script=["<search> a ## b </search>", "<answer> x </answer>", "<answer> y </answer>"]
    )
    graph = create_parallel_search_graph(model, CountingSearcher(), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t1"}}
    assert graph.invoke({"question": "Q1?"}, thread)["answer"] == "x"
    # Before: the second question continued the first one's transcript and step count, and the
    # model never read it; then it was refused. Now it starts afresh on the same thread.
    state = graph.invoke({"question": "Q2?"}, thread)
    assert state["answer"] == "y" and "Q2?" in str(state["transcript"][0].content)
    assert "Q1?" not in str(state["transcript"][0].content) and len(model.calls[2]) == 1
    assert state["counters"]["llm_calls"] == 1  # counters per question
    assert [m.content for m in state["messages"] if m.type == "human"] == ["Q1?", "Q2?"]
