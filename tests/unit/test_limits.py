"""Every limit ends a run with a final state and a stated reason, never GraphRecursionError."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.limits import recursion_limit_for
from langgraph_parallel.agent.run import run_question
from langgraph_parallel.baselines.direct import create_direct_graph
from langgraph_parallel.parallel_muse.context import muse_recursion_limit
from tests.fakes import CountingSearcher, FuzzChatModel, ScriptedChatModel, muse_graph

# New sub-queries every turn: a repeat is not searched again (a shorter turn), and these tests
# need the longest turn the loop can take.
SEARCH_FOREVER = [f"<search> again {i} ## more {i} </search>" for i in range(100)]
LIMITS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


def search_graph(max_turns: int, script: list[Any] = SEARCH_FOREVER, **options: Any) -> Any:
    return create_parallel_search_graph(
        ScriptedChatModel(script=script), CountingSearcher(), max_turns=max_turns, **options
    )


@pytest.mark.parametrize("final_answer_step", [True, False])
@pytest.mark.parametrize("max_turns", [6, 7, 10, 25])
def test_many_turns_finish_with_the_default_recursion_limit(
    max_turns: int, final_answer_step: bool
) -> None:
    # LangChain's classic default of 25 super-steps stopped the loop after 6 turns.
    graph = search_graph(max_turns, final_answer_step=final_answer_step)
    state = graph.invoke({"question": "Q?"})
    assert state["stop_reason"].startswith(f"max_turns: {max_turns} ")
    # With the final step every turn's search runs and one answer-only step follows (this
    # model searches even then); without it the last turn's search is not run.
    extra = int(final_answer_step)
    assert state["counters"]["llm_calls"] == max_turns + extra
    assert state["counters"]["turns"] == max_turns - 1 + extra


def test_every_turn_used_then_answer_at_the_last_step() -> None:
    script = SEARCH_FOREVER[:9] + ["<answer> done </answer>"]
    state = search_graph(10, script).invoke({"question": "Q?"})
    assert state["answer"] == "done" and state["stop_reason"] == "answered"


def test_default_recursion_limit_fits_max_turns() -> None:
    assert search_graph(4).config["recursion_limit"] == recursion_limit_for(4) == 100
    assert search_graph(40).config["recursion_limit"] == recursion_limit_for(40) >= 4 * 40 + 2
    model, search = FuzzChatModel(), CountingSearcher()
    graph = muse_graph(model, search, rounds=60)
    assert graph.config["recursion_limit"] == muse_recursion_limit(60) >= 2 * 60 + 5


def test_an_explicit_recursion_limit_still_wins_and_stops_with_a_reason() -> None:
    state = search_graph(10).invoke({"question": "Q?"}, {"recursion_limit": 12})
    assert state["answer"] is None
    assert state["stop_reason"].startswith("recursion_limit: ")
    assert "recursion_limit" in state["stop_reason"].split(": ", 1)[1]  # says how to fix it
    assert state["counters"]["llm_calls"] == 3


def test_batch_and_chains_stop_with_a_reason_under_langchains_default_of_25() -> None:
    graph = search_graph(10)
    for state in [
        graph.batch([{"question": "Q?"}])[0],
        (RunnableLambda(lambda x: x) | graph).invoke({"question": "Q?"}),
    ]:
        # 25 super-steps fit 6 model steps (langchain-core's default; a final state either way)
        assert state["stop_reason"].split(":")[0] in ("recursion_limit", "max_turns")
        assert state["counters"]["llm_calls"] >= 6


def test_a_per_run_max_turns_beyond_the_default_limit_stops_with_a_reason() -> None:
    graph = search_graph(4)
    state = graph.invoke({"question": "Q?"}, context={"max_turns": 30})
    assert state["stop_reason"].startswith("recursion_limit: ")
    state = graph.invoke({"question": "Q?"}, {"recursion_limit": 200}, context={"max_turns": 30})
    assert state["stop_reason"].startswith("max_turns: 30 ")


@LIMITS
@given(st.integers(2, 60), st.integers(1, 12), st.booleans())
def test_any_recursion_limit_gives_a_final_state(
    limit: int, max_turns: int, decompose: bool
) -> None:
    graph = search_graph(max_turns, decompose=decompose)
    state = graph.invoke({"question": "Q?"}, {"recursion_limit": limit})
    assert state["answer"] is None
    assert state["stop_reason"].split(":")[0] in ("max_turns", "recursion_limit")
    # max_turns steps, plus the final answer-only step after a search at the last of them
    final = state["counters"].get("final_answer_steps", 0)
    assert state["counters"].get("llm_calls", 0) <= max_turns + final
    assert final == 0 or state["counters"]["turns"] == max_turns


@LIMITS
@given(st.integers(2, 30), st.integers(0, 4), st.integers(1, 8))
def test_any_recursion_limit_gives_a_final_muse_state(limit: int, rounds: int, budget: int) -> None:
    model = FuzzChatModel(outputs=["<search> a </search>", "<answer> x </answer>"])
    graph = muse_graph(
        model, CountingSearcher(), budget=budget, rounds=max(rounds, 1), samples_per_step=1
    )
    state = graph.invoke({"question": "Q?"}, {"recursion_limit": limit})
    assert state["stop_reason"] == "answered" or state["stop_reason"].startswith("recursion_limit")
    assert (state["answer"] == "x") == (state["stop_reason"] == "answered")
    assert len(state.get("trajectories") or []) <= budget
    if state["stop_reason"] != "answered" or len(state["trajectories"]) < budget:
        assert state["aggregation"]["limit"].startswith("recursion_limit: ")


def test_a_limit_too_small_for_any_node_is_still_a_stop_reason_in_run_question() -> None:
    for graph in [search_graph(3), create_direct_graph(ScriptedChatModel(script=["x"]))]:
        run = run_question(graph, "Q?", config={"recursion_limit": 1})
        assert run.answer is None and run.stop_reason.startswith("recursion_limit: ")
        assert run.counters["llm_calls"] == 0


def test_a_step_cut_by_max_tokens_is_counted_and_the_run_goes_on() -> None:
    cut = AIMessage(content="<search> half a que", response_metadata={"finish_reason": "length"})
    state = search_graph(3, [cut, "<answer> a </answer>"]).invoke({"question": "Q?"})
    assert state["answer"] == "a"
    assert state["counters"]["truncated_steps"] == 1
    assert state["counters"]["invalid_steps"] == 1


def test_sub_queries_over_the_per_turn_limit_are_named_not_dropped() -> None:
    queries = " ## ".join(f"q{i}" for i in range(300))
    script = [f"<search> {queries} </search>", "<answer> a </answer>"]
    state = search_graph(3, script, max_parallel_queries=2).invoke({"question": "Q?"})
    assert state["counters"]["sub_queries"] == 2
    assert "q299" in state["transcript"][2].content
