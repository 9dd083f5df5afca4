"""Whole-graph fuzzing: a fake model emitting arbitrary text never makes a graph raise.

Every generated case runs a full graph (ParallelSearch, the sequential baseline with a
checkpointer, the direct baseline, ParallelMuse) over a model replaying generated steps and a
searcher that fails, times out, returns nothing or returns garbage on a seeded 30% of calls.
Each run must end in a final state with an answer or a stated ``stop_reason``, and everything
in it must be writable as UTF-8 JSON (what the benchmark harness does with it). 1,000 cases in
total, deterministic (``derandomize``), no example database.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import RetryPolicy

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.baselines.direct import create_direct_graph
from langgraph_parallel.errors import UserError, is_transient
from tests.fakes import FlakySearcher, FuzzChatModel, muse_graph

MAX_TURNS = 3
FAST_RETRY = RetryPolicy(
    initial_interval=0.001, max_attempts=2, jitter=False, retry_on=is_transient
)
SEARCH_MODES = ("transient", "fatal", "empty", "garbage", "slow")

NASTY = ["\x00", "\ud800", "\udfff", "\x1b[31m", "\u202e", "\r", "\x0b", "\ufeff", "\U0001f600"]
FRAGMENTS = [
    *["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>"],
    *["<tool_call>", "</tool_call>", "<information>", "</information>", "##", " ## ", "<", "</"],
    *["q", "Paris", "{", "<search></search>", "<search> ## </search>", "<answer></answer>"],
    "<search><search> a </search> b </search>",
    "<answer><answer> x </answer></answer>",
    '<tool_call>{"name": "search", "arguments": {"query_list": ["a", "b"]}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": [</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"answer": "x"}}</tool_call>',
    *NASTY,
]
fragment = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))
tagged = st.lists(fragment, max_size=30).map("".join)


def _huge(kind: int, n: int) -> str:
    if kind == 0:
        return "<search> " + " ## ".join(f"q{i}" for i in range(n)) + " </search>"
    if kind == 1:
        return "<search> a " + "##" * n + " b </search>"
    if kind == 2:
        return "x" * (n * 200) + "<answer> y </answer>"
    return "<search>" * n + "z"


huge = st.builds(_huge, st.integers(0, 3), st.integers(50, 500))
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6), tagged),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
tool_message = st.builds(
    lambda text, name, args, broken: AIMessage(
        content=text,
        tool_calls=[{"name": name, "args": args, "id": "c1", "type": "tool_call"}],
        invalid_tool_calls=[
            {
                "name": name,
                "args": broken,
                "id": "c2",
                "error": "bad JSON",
                "type": "invalid_tool_call",
            }
        ],
    ),
    tagged,
    st.sampled_from(["search", "answer", "other", ""]),
    st.dictionaries(
        st.sampled_from(["query", "query_list", "answer", "x"]), json_value, max_size=3
    ),
    st.sampled_from(['{"query": [', "not json", "", "{}"]),
)
failure = st.sampled_from(
    [
        ValueError("prompt is longer than the maximum model length"),
        ConnectionError("connection reset"),
        RuntimeError("engine died"),
    ]
)
step = st.one_of(tagged, tagged, tagged, huge, tool_message, failure, st.text(max_size=50))
script = st.lists(step, min_size=1, max_size=MAX_TURNS + 1)
passage_text = st.one_of(st.just("plain text"), tagged, st.sampled_from(NASTY))

MODEL = FuzzChatModel()
SEARCHER = FlakySearcher(0.3, modes=SEARCH_MODES, delay=0.05)
COMMON: dict[str, Any] = {"max_turns": MAX_TURNS, "retry_policy": FAST_RETRY}
PARALLEL = create_parallel_search_graph(MODEL, SEARCHER, search_timeout=0.02, **COMMON)
SEQUENTIAL = create_parallel_search_graph(
    MODEL, SEARCHER, decompose=False, search_timeout=0.02, checkpointer=InMemorySaver(), **COMMON
)
DIRECT = create_direct_graph(MODEL, retry_policy=FAST_RETRY)
# ParallelMuse forks at uncertain steps: its model emits token logprobs, so the fuzz covers the
# fork paths, not only independent rollouts.
MUSE_MODEL = FuzzChatModel(logprobs=True)
MUSE = muse_graph(MUSE_MODEL, SEARCHER, budget=3, search_timeout=0.02, **COMMON)
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EXAMPLES = {"parallel": 450, "sequential": 350, "direct": 100, "muse": 100}


def run(graph: Any, steps: list[Any], question: str, text: str) -> dict[str, Any]:
    MODEL.reset(steps)
    MUSE_MODEL.reset(steps)
    # Each case starts the searcher's fault sequence afresh: the outcome of a case must not
    # depend on which tests (or cases) ran before it.
    SEARCHER.reseed(0)
    SEARCHER.text = lambda q: text
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    if not question.strip():  # no question: refused when the run starts, the fix named
        with pytest.raises(UserError, match="question"):
            graph.invoke({"question": question}, config)
        question = f"Q?{question}"
    state = graph.invoke({"question": question}, config)
    check_final(state)
    return state


def check_final(state: dict[str, Any]) -> None:
    """A final state: an answer or a stated reason, and all of it writable as UTF-8 JSON."""
    answer, reason = state.get("answer"), state.get("stop_reason")
    assert isinstance(reason, str) and reason
    assert answer is None or (isinstance(answer, str) and answer)
    assert (answer is not None) == (reason == "answered")
    # At most 3 trajectories (ParallelMuse's budget here) of max_turns steps and the final
    # answer-only step each.
    assert state["counters"].get("llm_calls", 0) <= (MAX_TURNS + 1) * 3
    # Everything but the caller's own question (echoed unchanged) has lone surrogates replaced.
    produced = {key: value for key, value in state.items() if key != "question"}
    dumped = json.dumps(
        produced, default=lambda o: getattr(o, "content", repr(o)), ensure_ascii=False
    )
    dumped.encode("utf-8")


@given(script, tagged, passage_text)
@settings(FUZZ, max_examples=EXAMPLES["parallel"])
def test_parallel_search_survives_any_model_output(steps: list[Any], q: str, text: str) -> None:
    state = run(PARALLEL, steps, q, text)
    # max_turns steps, plus the final answer-only step after a search at the last of them
    final = state["counters"].get("final_answer_steps", 0)
    assert state["counters"].get("llm_calls", 0) <= MAX_TURNS + final
    assert final == 0 or state["counters"]["llm_calls"] == MAX_TURNS + 1


@given(script, tagged, passage_text)
@settings(FUZZ, max_examples=EXAMPLES["sequential"])
def test_sequential_with_checkpointer_survives_any_model_output(
    steps: list[Any], q: str, text: str
) -> None:
    state = run(SEQUENTIAL, steps, q, text)
    # Search-R1: whatever the model wrote, every turn runs exactly one search.
    per_turn = Counter(r["turn"] for r in state.get("search_results") or [])
    assert all(n == 1 for n in per_turn.values())
    assert len(per_turn) == state["counters"].get("turns", 0)


@given(script, tagged)
@settings(FUZZ, max_examples=EXAMPLES["direct"])
def test_direct_survives_any_model_output(steps: list[Any], q: str) -> None:
    run(DIRECT, steps, q, "")


@given(script, tagged, passage_text)
@settings(FUZZ, max_examples=EXAMPLES["muse"])
def test_parallel_muse_survives_any_model_output(steps: list[Any], q: str, text: str) -> None:
    state = run(MUSE, steps, q, text)
    assert len(state["trajectories"]) == 3
    forked = {t["id"] for t in state["trajectories"]} & {
        p["trajectory"] for p in state.get("branch_points") or []
    }
    assert forked == {p["trajectory"] for p in state.get("branch_points") or []}
    assert all(t["stop_reason"] for t in state["trajectories"])
    assert len(state["reports"]) == 3


def test_fuzz_model_logprobs_make_parallel_muse_fork() -> None:
    # Two searches: the second is an exploration step past step 0, where forks start by default.
    steps = [
        "<think> which one </think>\n<search> a ## b </search>",
        "<think> and then </think>\n<search> c </search>",
        "<answer> x </answer>",
    ]
    state = run(MUSE, steps, "Q?", "plain text")
    assert state["branch_points"], "no fork: the fuzz would only cover independent rollouts"
    assert len(state["trajectories"]) == 3
