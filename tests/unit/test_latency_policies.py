"""``bench run latency-policies``: its clocks, its web-search wait, its cells and its tables."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from lab.catalog import EXPERIMENTS
from lab.experiments.latency import policies
from lab.experiments.latency.policies import Policy, cell_name, cells, run_cell
from lab.experiments.latency.policies_analysis import (
    cell_table,
    render_policies,
    summarise,
    write_tables,
)
from lab.experiments.latency.timing import (
    EngineSteps,
    QuestionClock,
    TimedSearcher,
    WebLatencySearcher,
    request_times,
    timing,
    watch_engine,
)
from langgraph_parallel.apps.registry import build_graph
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.results import results_in
from tests.fakes import CountingSearcher, ScriptedChatModel


class TwoTurnModel(ScriptedChatModel):
    """Searches ``first`` (one step, maybe several sub-queries) then answers ``yes``."""

    first: str = "<search> a ## b </search>"
    script: list[Any] = []

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        seen = any(isinstance(m, AIMessage) for m in messages)  # it searched already
        return AIMessage(
            content="<answer> yes </answer>" if seen else self.first,
            usage_metadata={
                "input_tokens": 100,
                "output_tokens": 10,
                "total_tokens": 110,
                "input_token_details": {"cache_read": 40},
            },
        )


def _questions(n: int) -> list[Question]:
    return [
        Question(
            id=f"q{i}",
            question=f"Is {i} odd?",
            answer="yes",
            answers=("yes",),
            type="comparison",
            dataset="hotpotqa",
        )
        for i in range(n)
    ]


def test_a_web_search_waits_a_seeded_time_per_query_and_a_call_its_slowest() -> None:
    waits: list[float] = []
    web = WebLatencySearcher(CountingSearcher(), low=0.5, high=1.5, seed=0, sleep=waits.append)
    a, b = web.wait_of("a"), web.wait_of("b")
    assert 0.5 <= a <= 1.5 and 0.5 <= b <= 1.5 and a != b
    assert WebLatencySearcher(CountingSearcher(), seed=0).wait_of("a") == a  # the query's own
    assert WebLatencySearcher(CountingSearcher(), seed=1).wait_of("a") != a
    found = web.batch_search(["a", "b"], 3)
    assert [p[0].title for p in found] == ["Title a", "Title b"] and waits == [max(a, b)]
    web.batch_search(["  "], 3)
    assert waits == [max(a, b)]  # nothing searched, nothing waited
    with pytest.raises(ValueError, match="low <= high"):
        WebLatencySearcher(CountingSearcher(), low=2.0, high=1.0)


def test_a_turns_sub_queries_reach_the_web_searcher_in_one_call_so_it_waits_once() -> None:
    """The fan-out joins a turn's branches into one batch_search: one turn pays the max."""
    waits: list[float] = []
    inner = CountingSearcher()
    web = WebLatencySearcher(inner, sleep=waits.append)
    clock = QuestionClock()
    model = TwoTurnModel(first="<search> a ## b ## c </search>")
    graph = build_graph("parallel-search", model, TimedSearcher(web, clock), max_turns=4)
    assert graph.invoke({"question": "Q?"})["answer"] == "yes"
    assert inner.batches == [["a", "b", "c"]]
    assert waits == [max(web.wait_of(q) for q in "abc")]
    assert [s["queries"] for s in clock.searches] == [3]


def test_a_clock_splits_a_question_into_engine_search_and_graph_time() -> None:
    clock = QuestionClock()
    clock.add_request(
        {"total_s": 1.0, "queue_s": 0.1, "prefill_s": 0.3, "decode_s": 0.5, "prompt_tokens": 9}
    )
    clock.add_search(2, 0.25)
    split = clock.split(2.0)
    assert split == {
        "engine_s": 1.0,
        "queue_s": 0.1,
        "prefill_s": 0.3,
        "decode_s": 0.5,
        "engine_other_s": 0.1,
        "search_s": 0.25,
        "search_calls": 1,
        "graph_s": 0.75,
    }


def _output(**metrics: float) -> Any:
    return SimpleNamespace(
        prompt_token_ids=[1, 2, 3, 4],
        num_cached_tokens=2,
        outputs=[SimpleNamespace(token_ids=[5, 6, 7])],
        metrics=SimpleNamespace(**metrics) if metrics else None,
    )


def test_a_requests_times_are_read_from_vllms_timestamps() -> None:
    times = request_times(
        _output(queued_ts=10.0, scheduled_ts=10.5, first_token_ts=11.0, last_token_ts=13.0), 3.5
    )
    assert times == {
        "total_s": 3.5,
        "queue_s": 0.5,
        "prefill_s": 0.5,
        "decode_s": 2.0,
        "prompt_tokens": 4,
        "cached_tokens": 2,
        "generated_tokens": 3,
    }
    # An engine that logs no stats gives no phases: only the request's own time counts.
    bare = request_times(_output(), 1.0)
    assert (bare["queue_s"], bare["prefill_s"], bare["decode_s"]) == (0.0, 0.0, 0.0)


class FakeWorker:
    """An engine worker whose requests finish when the test says."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []

    def submit(self, prompt_token_ids: list[int], params: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.futures.append(future)
        return future


class _State(TypedDict, total=False):
    out: int


def test_requests_submitted_in_a_graphs_nodes_are_timed_into_the_questions_clock() -> None:
    worker = FakeWorker()
    watch_engine(worker)
    watch_engine(worker)  # twice: still one record a request

    def node(state: _State) -> _State:
        future = worker.submit([1], None)
        threading.Timer(0.01, worker.futures[-1].set_result, [_output()]).start()
        return {"out": len(future.result(timeout=5).outputs[0].token_ids)}

    builder = StateGraph(_State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile()
    clock = QuestionClock()
    with timing(clock):
        assert graph.invoke({})["out"] == 3
    assert len(clock.requests) == 1 and clock.requests[0]["generated_tokens"] == 3
    graph.invoke({})  # outside any question: not recorded
    assert len(clock.requests) == 1


def test_cancelling_a_timed_request_cancels_the_engines() -> None:
    worker = FakeWorker()
    watch_engine(worker)
    with timing(QuestionClock()):
        outer = worker.submit([1], None)
    assert outer.cancel() and worker.futures[0].cancelled()


def test_engine_steps_count_steps_drafts_and_acceptances() -> None:
    steps = EngineSteps()
    spec = SimpleNamespace(num_drafts=2, num_draft_tokens=12, num_accepted_tokens=5)
    steps.record(
        SimpleNamespace(spec_decoding_stats=spec), SimpleNamespace(num_generation_tokens=7)
    )
    steps.record(
        SimpleNamespace(spec_decoding_stats=None), SimpleNamespace(num_generation_tokens=0)
    )
    before = {"steps": 0, "generated": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0}
    assert EngineSteps.delta(before, steps.snapshot()) == {
        "steps": 1,
        "generated": 7,
        "drafts": 2,
        "draft_tokens": 12,
        "accepted": 5,
    }
    engine = SimpleNamespace(logger_manager=SimpleNamespace(stat_loggers=[]))
    attached = EngineSteps.attach(engine)
    assert engine.logger_manager.stat_loggers == [attached]
    with pytest.raises(RuntimeError, match="disable_log_stats"):
        EngineSteps.attach(SimpleNamespace(logger_manager=None))


def test_the_experiment_is_declared_and_its_cells_read_from_its_settings() -> None:
    experiment = EXPERIMENTS["latency-policies"]
    assert experiment.out == "benchmarks/latency/policies" and experiment.limit == 20
    plan = cells(dict(experiment.settings))
    assert plan == [
        ("closed", 1, 0),
        ("web", 1, 0),
        ("closed", 16, 0),
        ("closed", 16, 1),
        ("web", 16, 0),
        ("web", 16, 1),
    ]
    assert [cell_name(*c) for c in plan[1:3]] == ["web-c1", "closed-c16-r0"]
    with pytest.raises(UserError, match="not one of"):
        cells({**experiment.settings, "searchers": "closed,tavily"})
    with pytest.raises(UserError, match="at least 1"):
        cells({**experiment.settings, "concurrency": "0"})
    assert policies._engine_kwargs('{"block_size": 64}') == {
        "block_size": 64,
        "disable_log_stats": False,
    }
    with pytest.raises(UserError, match="not JSON"):
        policies._engine_kwargs("{")


def _pair() -> list[Policy]:
    parallel = Policy("parallel-search", TwoTurnModel(), None, build_graph)
    sequential = Policy("sequential", TwoTurnModel(first="<search> a </search>"), None, build_graph)
    return [parallel, sequential]


def test_one_at_a_time_each_question_runs_on_both_the_first_alternating_and_resumes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "closed-c1"
    rows = run_cell(folder, _pair(), _questions(2), CountingSearcher(), concurrency=1)
    ran = [(r["graph"], r["id"], r["ran"]) for r in rows]
    assert ran == [
        ("parallel-search", "q0", 0),
        ("sequential", "q0", 1),
        ("sequential", "q1", 0),
        ("parallel-search", "q1", 1),
    ]
    first = rows[0]
    assert first["em"] == 1.0 and first["sub_queries"] == 2 and first["search_calls"] == 1
    assert first["graph_s"] >= 0 and first["requests"] == [] and "load1" in first
    # Resumed with a question more: only the new pairs run.
    again = run_cell(folder, _pair(), _questions(3), CountingSearcher(), concurrency=1)
    assert [(r["graph"], r["id"]) for r in again[4:]] == [
        ("parallel-search", "q2"),
        ("sequential", "q2"),
    ]
    assert len(results_in(folder)) == 6


def test_at_once_each_policy_runs_a_pass_the_first_alternating_with_the_round(
    tmp_path: Path,
) -> None:
    for round_ in (0, 1):
        folder = tmp_path / cell_name("web", 4, round_)
        rows = run_cell(
            folder, _pair(), _questions(3), CountingSearcher(), concurrency=4, round_=round_
        )
        first = "parallel-search" if round_ == 0 else "sequential"
        assert [r["ran"] for r in rows if r["graph"] == first] == [0, 0, 0]
        passes = [json.loads(line) for line in (folder / "passes.jsonl").read_text().splitlines()]
        assert [(p["graph"], p["questions"]) for p in passes][0] == (first, 3)
        assert all("engine_steps" not in p for p in passes)  # fake models: no engine


def _row(graph: str, qid: str, wall: float, calls: int, em: float, **extra: Any) -> dict[str, Any]:
    request = {
        "decode_s": 0.5,
        "prefill_s": 0.25,
        "prompt_tokens": 60,
        "cached_tokens": 10,
        "generated_tokens": 11,
    }
    return {
        "graph": graph,
        "id": qid,
        "wall_s": wall,
        "llm_calls": calls,
        "completion_tokens": 10 * calls,
        "prompt_tokens": 300,
        "cached_prompt_tokens": 100,
        "prefill_s": 0.25 * calls,
        "decode_s": 0.5 * calls,
        "queue_s": 0.0,
        "engine_other_s": 0.0,
        "search_s": 0.1,
        "graph_s": 0.01,
        "turns": calls - 1,
        "sub_queries": 2,
        "em": em,
        "f1": em,
        "load1": 2.0,
        "requests": [request] * calls,
        "error": None,
        **extra,
    }


def test_a_cells_table_pairs_the_policies_by_question() -> None:
    steps = {"steps": 30, "generated": 40, "drafts": 5, "draft_tokens": 40, "accepted": 10}
    rows = [
        _row("parallel-search", "q0", 2.0, 2, 1.0, engine_steps=steps),
        _row("sequential", "q0", 3.0, 3, 1.0, engine_steps=steps),
        _row("parallel-search", "q1", 2.0, 2, 0.0, engine_steps=steps),
        _row("sequential", "q1", 5.0, 3, 1.0, engine_steps=steps),
        _row("sequential", "q2", 9.0, 3, 1.0, engine_steps=steps),  # no pair: left out
        {**_row("parallel-search", "q3", 1.0, 1, 0.0), "error": "boom"},
        _row("sequential", "q3", 1.0, 3, 1.0),
    ]
    table = cell_table(rows)
    assert table["n"] == 2 and table["errors"] == 1
    assert table["ratios"]["wall_s"]["ratio"] == pytest.approx(0.5)
    assert table["ratios"]["llm_calls"]["ratio"] == pytest.approx(2 / 3)
    assert table["em"]["diff"] == pytest.approx(-0.5)
    engine = table["policies"]["parallel-search"]["engine"]
    assert engine["per"] == "question" and engine["steps"] == 60
    assert engine["tokens_per_step"] == 1.33  # 80 tokens in 60 steps
    assert engine["acceptance"] == 0.25
    assert engine["decode_tok_per_s"] == pytest.approx(10 / 0.5)
    assert engine["prefill_tok_per_s"] == pytest.approx(50 / 0.25)
    with pytest.raises(ValueError, match="both policies"):
        cell_table(rows[4:5])


def test_the_tables_average_a_cells_rounds_and_render_its_ratios(tmp_path: Path) -> None:
    for round_, (par, seq) in enumerate(((2.0, 4.0), (4.0, 4.0))):
        folder = tmp_path / f"closed-c16-r{round_}"
        folder.mkdir()
        rows = [_row("parallel-search", "q0", par, 2, 1.0), _row("sequential", "q0", seq, 3, 0.0)]
        (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        counts = {"steps": 10, "generated": 20, "drafts": 1, "draft_tokens": 8, "accepted": 4}
        record = {"graph": "parallel-search", "id": f"pass-{round_}", "engine_steps": counts}
        (folder / "passes.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "commits": ["abcdef1234"],
                "machines": [
                    {"cpu": "Test CPU", "cores": 2, "avx512_bf16": False, "dtype": "float32"}
                ],
            }
        )
    )
    result = summarise(tmp_path)
    cell = result["cells"]["closed-c16"]
    assert cell["rounds"] == 2 and cell["ratios"]["wall_s"]["ratio"] == pytest.approx(3 / 4)
    assert cell["policies"]["parallel-search"]["engine"]["per"] == "pass"
    assert cell["policies"]["parallel-search"]["engine"]["steps"] == 20
    path = write_tables(tmp_path, command="langgraph-parallel bench run latency-policies")
    text = render_policies(path)
    assert "at commit `abcdef1`, Test CPU, 2 cores, engine float32" in text
    assert "| closed-c16 | 1 | **0.75x [0.75, 0.75]** | 0.67x [0.67, 0.67]" in text
    assert (tmp_path / "policies.md").read_text().startswith("# Parallel vs sequential")
    assert "Not run yet" in render_policies(tmp_path / "none.json")


def _vllm_lookup() -> Any:
    ngram = pytest.importorskip("vllm.v1.spec_decode.ngram_proposer")
    found = ngram._find_longest_matched_ngram_and_propose_tokens
    return getattr(found, "py_func", found)


def test_a_replay_drafts_what_the_context_repeats_and_accepts_what_the_model_wrote() -> None:
    from lab.experiments.latency.drafts import Drafter, ngram_drafter, replay

    propose = ngram_drafter(Drafter(), _vllm_lookup())
    # "1 2" is in the prompt: once written, the drafter proposes what followed it there, and
    # the model's own "3 4" is accepted up to its "5".
    counts = replay([7, 1, 2, 3, 4, 8], [1, 2, 3, 4, 5], propose)
    assert counts == {"steps": 3, "drafts": 1, "draft_tokens": 5, "accepted": 2, "verified": 7}
    assert replay([1], [], propose)["steps"] == 0


def test_a_drafter_with_history_finds_a_policys_repeated_phrases() -> None:
    from lab.experiments.latency.drafts import Drafter, replay_policy

    question = [{"prompt_ids": [50, 51], "output_ids": [10, 11, 12, 13, 14]}]
    variants = {"shipped": Drafter(), "history": Drafter(history=True)}
    got = replay_policy([question, question], variants, _vllm_lookup())
    assert got["shipped"]["steps"] == 10  # nothing to copy: a token a step
    assert got["history"]["steps"] == 5 + 3  # the second reply copies the first's
    assert got["history"]["tokens"] == 10 and got["history"]["tokens_per_step"] == 1.25
