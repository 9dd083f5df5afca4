"""ParallelMuse with a fake chat model that returns scripted token logprobs.

The fake answers as a function of the prompt and the call's seed (not of call order), so the
concurrent branches of one run are deterministic. Uncertainty is scripted as a flat top-k
distribution over ``m`` candidates per region, whose entropy score and ppl are both exactly ``m``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from langgraph_parallel.baselines.rollouts import independent_rollouts
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.plan import plan_branches, shares
from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.parallel_muse.uncertainty import loop_start, select_branch_points
from tests.fakes import CountingSearcher, muse_graph, rollouts_graph

ANALYST_MARK = "numbered reports"
REPORT_MARK = "Compress the"


def logprobs_for(text: str, spread: dict[str, int]) -> list[dict[str, Any]]:
    """Three-character tokens; a token starting inside region r gets a flat top-m (m=spread[r])."""
    spans = region_spans(text)
    out = []
    for start in range(0, len(text), 3):
        m = next(
            (n for r, n in spread.items() if any(s <= start < e for s, e in spans.get(r, []))), 1
        )
        lp = -math.log(m)
        top = [{"token": f"c{i}", "logprob": lp} for i in range(m)]
        out.append({"token": text[start : start + 3], "logprob": lp, "top_logprobs": top})
    return out


class FakeChat(OneReplyChatModel):
    """``agent(seed, step_index) -> (text, spread)``; report/analyst replies by prompt marker."""

    agent: Any
    analyst: str = "<choice>1</choice>"
    _calls: list[tuple[list[BaseMessage], dict[str, Any]]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> list[tuple[list[BaseMessage], dict[str, Any]]]:
        return self._calls

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        with self._lock:
            self._calls.append((list(messages), kwargs))
        first = str(messages[0].content)
        if REPORT_MARK in first:
            text, spread = f"## Solution Planning\nreport {len(first)}", {}
        elif ANALYST_MARK in first:
            text, spread = self.analyst, {}
        else:
            step = sum(isinstance(m, AIMessage) for m in messages)
            text, spread = self.agent(kwargs["seed"], step)
        return AIMessage(
            content=text,
            response_metadata={"logprobs": {"content": logprobs_for(text, spread)}},
            usage_metadata={
                "input_tokens": 100,
                "output_tokens": 10,
                "total_tokens": 110,
                "input_token_details": {"cache_read": 64},
            },
        )


SEARCH = "<think> look it up </think>\n<search> q{step} </search>"
ANSWER = "<think> done </think>\n<answer> {answer} </answer>"


def three_step_agent(spreads: list[dict[str, int]], answer: Callable[[int], str] = lambda s: "x"):
    """Search, search, answer; step ``i`` of the seed-0 rollout has uncertainty ``spreads[i]``."""

    def agent(seed: int, step: int) -> tuple[str, dict[str, int]]:
        spread = spreads[step] if seed == 0 else {"reasoning": 1, "exploration": 1}
        if step < 2:
            return SEARCH.format(step=step), spread
        return ANSWER.format(answer=answer(seed)), spread

    return agent


SPREADS = [
    {"reasoning": 7, "exploration": 2},
    {"reasoning": 1, "exploration": 5},
    {"reasoning": 3, "answer": 9},
]


def run_muse(agent, **options):
    model = FakeChat(agent=agent)
    graph = muse_graph(model, CountingSearcher(), **options)
    return graph.invoke({"question": "Q?"}), model


def branch_origins(state):
    return sorted((t["parent"], t["branch_step"]) for t in state["trajectories"] if t["parent"])


@pytest.mark.parametrize(
    ("region", "expected"),
    [
        ("exploration", [("t0", 0), ("t0", 1)]),
        ("reasoning", [("t0", 0), ("t0", 2)]),
        ("mixed", [("t0", 0), ("t0", 1)]),
    ],
)
def test_router_forks_exactly_the_most_uncertain_steps(region, expected):
    state, _ = run_muse(
        three_step_agent(SPREADS), region=region, budget=3, samples_per_step=1, min_branch_step=0
    )
    assert sorted((p["trajectory"], p["step"]) for p in state["branch_points"]) == expected
    assert branch_origins(state) == expected
    if region == "mixed":
        assert [p["region"] for p in state["branch_points"]] == ["reasoning", "exploration"]


def test_ppl_mode_follows_the_sampled_token_logprobs():
    state, _ = run_muse(
        three_step_agent(SPREADS), region="all", mode="ppl", budget=2, top_k_steps=1
    )
    assert [(p["trajectory"], p["step"]) for p in state["branch_points"]] == [("t0", 2)]


def test_branch_prompts_equal_the_parent_prefix_byte_for_byte():
    state, model = run_muse(three_step_agent(SPREADS), budget=7, min_branch_step=0)
    by_id = {t["id"]: t for t in state["trajectories"]}
    prompts = {
        (call_kwargs["seed"], sum(isinstance(m, AIMessage) for m in messages)): messages
        for messages, call_kwargs in model.calls
        if REPORT_MARK not in str(messages[0].content) and ANALYST_MARK not in messages[0].content
    }
    branches = [t for t in state["trajectories"] if t["parent"]]
    assert len(branches) == 6
    for branch in branches:
        parent = by_id[branch["parent"]]
        cut = branch["messages_prefix_len"]
        assert branch["messages"][:cut] == parent["messages"][:cut]
        assert cut == parent["steps"][branch["branch_step"]]["message_index"]
        sent = prompts[(branch["seed"], branch["branch_step"])]
        parent_sent = prompts[(parent["seed"], branch["branch_step"])]
        assert [(type(m), m.content) for m in sent] == [(type(m), m.content) for m in parent_sent]
        assert branch["steps"][: branch["branch_step"]] == parent["steps"][: branch["branch_step"]]
    assert len({t["seed"] for t in state["trajectories"]}) == 7


def test_each_trajectory_keeps_only_its_own_searches():
    state, _ = run_muse(three_step_agent(SPREADS), budget=7)
    for trajectory in state["trajectories"]:
        own = len(trajectory["steps"]) - (trajectory["branch_step"] or 0) - 1  # minus the answer
        searched = trajectory["search_results"]
        assert len(searched) == own == trajectory["counters"]["sub_queries"]
        # a fork re-runs the steps from its branch step on: its turns continue the parent's
        first = (trajectory["branch_step"] or 0) + 1
        assert [r["turn"] for r in searched] == list(range(first, first + own))
        assert [r["query"] for r in searched] == [f"q{t - 1}" for t in range(first, first + own)]
        # One sub-query a turn: counted as no parallel turn, a 0 that stays in the counters.
        assert trajectory["counters"]["parallel_turns"] == 0


def test_a_fork_does_not_search_again_what_its_inherited_steps_searched():
    def agent(seed: int, step: int) -> tuple[str, dict[str, int]]:
        spread = SPREADS[step] if seed == 0 else {"reasoning": 1, "exploration": 1}
        return (SEARCH.format(step=0) if step < 2 else ANSWER.format(answer="x")), spread

    state, _ = run_muse(agent, budget=2, top_k_steps=1, samples_per_step=1)
    fork = state["trajectories"][1]
    assert (fork["parent"], fork["branch_step"]) == ("t0", 1)
    # The fork's step 1 searches q0 again, which its inherited step 0 searched (turn 1).
    (again,) = fork["search_results"]
    assert again["query"] == "q0" and again.get("repeat") is True
    assert fork["counters"]["repeat_skips"] == 1


def test_counters_sum_own_steps_and_keep_reduction_apart():
    state, _ = run_muse(three_step_agent(SPREADS), budget=4, samples_per_step=3, join="select")
    agent_calls = sum(len(t["steps"]) - (t["branch_step"] or 0) for t in state["trajectories"])
    assert state["counters"]["llm_calls"] == agent_calls
    assert state["counters"]["prompt_tokens"] == 100 * agent_calls
    # The four trajectories have the same steps and answer: one report call, three copies.
    assert state["counters"]["report_calls"] == 1 and state["counters"]["reports_reused"] == 3
    assert len(state["reports"]) == 4
    assert "aggregate_calls" not in state["counters"]  # every answer is "x": no analyst needed
    assert state["aggregation"]["method"] == "unanimous"


def test_min_branch_step_moves_a_step_0_fork_to_the_next_most_uncertain_step():
    # Step 0 is the most uncertain reasoning step of SPREADS' rollout: its fork would keep only
    # the prompt. From step 1 on (the default), the samples go to the next most uncertain one.
    options = {"region": "reasoning", "budget": 3, "top_k_steps": 1, "samples_per_step": 2}
    state, _ = run_muse(three_step_agent(SPREADS), **options, min_branch_step=0)
    assert branch_origins(state) == [("t0", 0), ("t0", 0)]
    state, _ = run_muse(three_step_agent(SPREADS), **options)
    assert branch_origins(state) == [("t0", 2), ("t0", 2)]
    assert all(len(t["steps"]) == 3 for t in state["trajectories"])


def test_a_one_step_rollout_with_min_branch_step_gets_fresh_rollouts_instead():
    def answers_at_once(seed, step):
        return ANSWER.format(answer="x"), {"reasoning": 2, "answer": 2}

    state, _ = run_muse(answers_at_once, budget=4, region="all", min_branch_step=1)
    assert branch_origins(state) == [] and state["branch_points"] == []
    assert len(state["trajectories"]) == 4


def simulate(ctx: MuseContext, steps_of: Callable[[int], int]) -> list[dict[str, Any]]:
    """Run the router's plan loop with synthetic trajectories (no graph, no model)."""
    trajectories: list[dict[str, Any]] = []
    used: list[Any] = []
    dispatched = rounds = 0
    while True:
        branches, points, rounds = plan_branches(
            "Q", trajectories, ctx, dispatched=dispatched, rounds_done=rounds, used=used
        )
        if not branches:
            return trajectories
        assert dispatched + len(branches) <= ctx.budget
        dispatched += len(branches)
        used += points
        for b in branches:
            own = [
                {"origin": b["id"], "message_index": 2 * i + 1, **agent_step_spread(b["index"], i)}
                for i in range(len(b["steps"]), len(b["steps"]) + steps_of(b["index"]))
            ]
            trajectories.append({**b, "steps": b["steps"] + own, "messages": ["m"] * 20})


def agent_step_spread(index: int, i: int) -> dict[str, Any]:
    text = f"<think> r </think>\n<search> q{i} </search>"
    m = 1 + (index * 7 + i * 3) % 5
    return {
        "text": text,
        "logprobs": logprobs_for(text, {"reasoning": m, "exploration": m + 1}),
        "regions": {k: [list(s) for s in v] for k, v in region_spans(text).items()},
    }


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(1, 12),
    initial=st.integers(1, 4),
    top_k=st.integers(0, 4),
    samples=st.integers(0, 4),
    rounds=st.integers(0, 4),
    region=st.sampled_from(["reasoning", "exploration", "all", "mixed"]),
    steps=st.integers(0, 3),
    min_step=st.integers(0, 3),
)
def test_budget_is_spent_exactly_and_never_exceeded(
    budget, initial, top_k, samples, rounds, region, steps, min_step
):
    initial = min(initial, budget)
    ctx = MuseContext(
        budget=budget,
        initial_rollouts=initial,
        top_k_steps=top_k,
        samples_per_step=samples,
        rounds=rounds,
        region=region,
        min_branch_step=min_step,
    )
    trajectories = simulate(ctx, lambda index: steps)
    assert len(trajectories) == budget
    assert all(t["branch_step"] >= min_step for t in trajectories if t["parent"])
    assert [t["index"] for t in trajectories] == list(range(budget))
    forked = [(t["parent"], t["branch_step"]) for t in trajectories if t["parent"]]
    per_round = [sum(t["round"] == r for t in trajectories if t["parent"]) for r in range(9)]
    assert max(per_round) <= top_k * samples
    assert max(map(forked.count, set(forked)), default=0) <= top_k * samples
    assert max((t["round"] for t in trajectories), default=0) <= rounds


@pytest.mark.parametrize(
    ("quota", "points", "samples", "expected"),
    [
        (6, 2, 3, [3, 3]),  # the round found all its points
        (5, 2, 3, [3, 2]),  # the budget ran out: the less uncertain point gets fewer
        (2, 2, 3, [2, 0]),
        (7, 1, 4, [7]),  # one point found: it takes the missing point's samples too
        (8, 3, 2, [3, 3, 2]),  # the missing one's 2 dealt out, the most uncertain first
        (4, 0, 2, []),
    ],
)
def test_a_round_shares_its_forks_among_the_points_it_found(quota, points, samples, expected):
    assert shares(quota, points, samples) == expected


def test_a_round_with_one_branch_point_spends_the_budget_on_forks_not_fresh_rollouts():
    ctx = MuseContext(budget=8, top_k_steps=2, samples_per_step=4, min_branch_step=1)
    # the first rollout has one step past min_branch_step: one point, which gets all 7
    trajectories = simulate(ctx, lambda index: 2 if index == 0 else 1)
    assert [(t["parent"], t["branch_step"]) for t in trajectories[1:]] == [("t0", 1)] * 7


def test_no_branch_point_after_a_repeated_search():
    def step(i: int, query: str, m: int) -> dict[str, Any]:
        text = f"<think> r </think>\n<search> {query} </search>"
        spans = {k: [list(x) for x in v] for k, v in region_spans(text).items()}
        lp = logprobs_for(text, {"reasoning": 1, "exploration": m})
        return {"text": text, "logprobs": lp, "regions": spans, "origin": "t0"}

    # step 2 searches step 1's query again (case and spacing aside): steps 3 and 4 are in the loop
    steps = [step(0, "a", 2), step(1, "b", 2), step(2, " B ", 3), step(3, "c", 9), step(4, "d", 8)]
    assert loop_start(steps) == 2
    picked = select_branch_points([{"id": "t0", "steps": steps}], "exploration", "ppl", 5)
    assert [p["step"] for p in picked] == [2, 0, 1]
    assert loop_start(steps[:2]) is None


@settings(max_examples=15, deadline=None)
@given(budget=st.integers(1, 9), rounds=st.integers(1, 3), samples=st.integers(1, 3))
def test_graph_never_exceeds_the_budget(budget, rounds, samples):
    state, model = run_muse(
        three_step_agent(SPREADS), budget=budget, rounds=rounds, samples_per_step=samples
    )
    assert len(state["trajectories"]) == budget
    assert len(state["reports"]) == budget


def test_multi_round_forks_branches_of_the_previous_round():
    def agent(seed, step):
        # every rollout's own steps are more uncertain than its parent's: round 2 forks a branch
        text = SEARCH.format(step=step) if step < 2 else ANSWER.format(answer="x")
        return text, {"exploration": 2 + seed, "reasoning": 1, "answer": 1}

    state, _ = run_muse(agent, budget=5, top_k_steps=1, samples_per_step=2, rounds=2)
    rounds = [(t["id"], t["round"], t["parent"]) for t in state["trajectories"]]
    assert rounds[:3] == [("t0", 0, None), ("t1", 1, "t0"), ("t2", 1, "t0")]
    assert {r[2] for r in rounds[3:]} <= {"t1", "t2"} and all(r[1] == 2 for r in rounds[3:])
    assert len(state["branch_points"]) == 2


def answers_by_seed(answers: dict[int, str | None], spreads: dict[int, int] | None = None):
    def agent(seed, step):
        if answers[seed] is None:
            return SEARCH.format(step=step), {}
        return ANSWER.format(answer=answers[seed]), {"answer": (spreads or {}).get(seed, 1)}

    return agent


VOTERS = {0: "Paris", 1: "paris.", 2: "London", 3: None}


def run_baseline(join, analyst="<choice>1</choice>", spreads=None):
    model = FakeChat(agent=answers_by_seed(VOTERS, spreads), analyst=analyst)
    graph = rollouts_graph(model, CountingSearcher(), budget=4, join=join, max_turns=2)
    return graph.invoke({"question": "Q?"})


def test_majority_votes_normalised_answers_and_excludes_unanswered():
    state = run_baseline("majority")
    assert state["answer"] == "Paris" and state["stop_reason"] == "answered"
    assert state["aggregation"]["votes"] == {"paris": 2.0, "london": 1.0}
    assert state["aggregation"]["excluded"] == ["t3"]
    assert [r["trajectory"] for r in state["reports"]] == ["t0", "t1", "t2", "t3"]
    assert state["trajectories"][3]["stop_reason"].startswith("max_turns")


def test_weighted_vote_follows_answer_confidence():
    state = run_baseline("weighted", spreads={0: 4, 1: 4, 2: 1})  # Paris 2 x 0.25, London 1.0
    assert state["answer"] == "London"
    assert state["aggregation"]["votes"]["paris"] == pytest.approx(0.5)


def test_select_copies_the_chosen_reports_answer():
    state = run_baseline("select", analyst="compare... <choice>3</choice> <answer>Rome</answer>")
    assert state["answer"] == "London"  # report 3 = third answered trajectory; never "Rome"
    assert state["aggregation"]["method"] == "analyst" and state["counters"]["aggregate_calls"] == 1


@pytest.mark.parametrize("analyst", ["I pick the second", "<choice>9</choice>"])
def test_select_falls_back_to_majority_on_unparsable_output(analyst):
    state = run_baseline("select", analyst=analyst)
    assert state["answer"] == "Paris"
    assert state["aggregation"]["method"] == "majority"
    assert "choice" in state["aggregation"]["fallback"]


def test_no_answer_anywhere_is_reported():
    model = FakeChat(agent=answers_by_seed({0: None, 1: None}))
    graph = rollouts_graph(model, CountingSearcher(), budget=2, join="select", max_turns=1)
    state = graph.invoke({"question": "Q?"})
    assert state["answer"] is None and state["stop_reason"].startswith("no_answer")
    assert len(state["reports"]) == 2


def test_graph_draws_every_node_and_edge():
    graph = muse_graph(FakeChat(agent=None), CountingSearcher())
    mermaid = graph.get_graph().draw_mermaid()
    for edge in (
        "router -.-> rollout",
        "router -.-> report",
        "router -.-> aggregate",
        "rollout --> router",
        "report --> aggregate",
        "__start__ --> router",
        "aggregate --> __end__",
    ):
        assert edge in mermaid, mermaid


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": 0}, "budget must be at least 1"),
        ({"region": "x"}, "region"),
        ({"initial_rollouts": 9}, "budget"),
        ({"min_branch_step": -1}, "min_branch_step must be 0 or more"),
        ({"beam": 2}, "unexpected keyword argument 'beam'"),
    ],
)
def test_invalid_settings_say_how_to_fix_them(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        muse_graph(FakeChat(agent=None), CountingSearcher(), **options)


def test_the_baseline_is_the_same_door_with_rounds_zero():
    from langgraph_parallel import (
        MuseContext,
        create_parallel_muse_graph,
        independent_rollouts,
        parallel_search_rollouts,
    )

    context = independent_rollouts(budget=3)
    assert (context.rounds, context.join) == (0, "majority")
    model = FakeChat(agent=three_step_agent(SPREADS))
    rollouts = parallel_search_rollouts(model, CountingSearcher())
    state = create_parallel_muse_graph(rollouts, context=context).invoke({"question": "Q?"})
    # Every rollout starts at once from the question: none is a fork.
    assert [t["parent"] for t in state["trajectories"]] == [None, None, None]
    forked = MuseContext(budget=3, top_k_steps=1, join="majority")
    state = create_parallel_muse_graph(rollouts, context=forked).invoke({"question": "Q?"})
    assert [t["parent"] for t in state["trajectories"]][1:] == ["t0", "t0"]


def test_a_context_dict_keeps_the_build_time_settings():
    # The LangGraph API server passes the run's context as a (often empty) dict.
    graph = rollouts_graph(
        FakeChat(agent=three_step_agent(SPREADS)), CountingSearcher(), budget=3, join="weighted"
    )
    assert len(graph.invoke({"question": "Q?"}, context={})["trajectories"]) == 3
    state = graph.invoke({"question": "Q?"}, context={"budget": 2})
    assert len(state["trajectories"]) == 2 and state["aggregation"]["join"] == "weighted"


def test_the_compiled_graph_is_a_node_of_a_users_graph():
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class UserState(TypedDict, total=False):
        question: str
        answer: str | None
        trajectories: list[Any]
        notes: str

    builder = StateGraph(UserState)
    builder.add_node("plan", lambda state: {"notes": "planned"})
    model = FakeChat(agent=three_step_agent(SPREADS))
    node = "parallel_muse"
    builder.add_node(node, muse_graph(model, CountingSearcher(), budget=3, join="majority"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", node)
    builder.add_edge(node, END)
    state = builder.compile().invoke({"question": "Q?"})
    assert state["answer"] == "x" and state["notes"] == "planned"
    assert len(state["trajectories"]) == 3  # the subgraph's output keys the parent shares


def test_add_parallel_search_names_the_keys_a_users_state_lacks():
    from langgraph.graph import StateGraph
    from typing_extensions import TypedDict

    from langgraph_parallel import add_parallel_search

    class Plain(TypedDict):
        question: str

    with pytest.raises(ValueError, match=r"queries: list\[str\]; observation: str"):
        add_parallel_search(StateGraph(Plain), CountingSearcher())


def test_rollouts_stream_live_events_with_their_ids():
    from langgraph_parallel.agent.run import run_question

    model = FakeChat(agent=three_step_agent(SPREADS))
    graph = muse_graph(model, CountingSearcher(), budget=4)
    events = []
    run = run_question(graph, "Q?", on_event=events.append)
    ids = {t["id"] for t in run.state["trajectories"]}
    starts = [e["rollout"] for e in events if e["event"] == "rollout_start"]
    ends = [e for e in events if e["event"] == "rollout_end"]
    assert sorted(starts) == sorted(ids) == sorted(e["rollout"] for e in ends)
    for end in ends:  # each rollout starts before it ends, with its trajectory's answer
        assert starts.index(end["rollout"]) < events.index(end)
        (trajectory,) = [t for t in run.state["trajectories"] if t["id"] == end["rollout"]]
        assert end["answer"] == trajectory["answer"]
    forks = [e for e in events if e["event"] == "rollout_start" and e["parent"]]
    assert sorted((e["parent"], e["branch_step"]) for e in forks) == branch_origins(run.state)
    # The sub-queries inside each rollout stream too.
    assert sum(e["event"] == "search_end" for e in events) == sum(
        len(t["search_results"]) for t in run.state["trajectories"]
    )


def test_a_runs_context_reaches_the_loop_of_every_rollout():
    model = FakeChat(agent=three_step_agent(SPREADS))
    graph = rollouts_graph(model, CountingSearcher(), budget=2, max_turns=4)
    assert [t["answer"] for t in graph.invoke({"question": "Q?"})["trajectories"]] == ["x", "x"]
    per_run = independent_rollouts(budget=2, max_turns=1, final_answer_step=False)
    state = graph.invoke({"question": "Q?"}, context=per_run)
    for trajectory in state["trajectories"]:  # one step, a search, and no more
        assert trajectory["stop_reason"].startswith("max_turns: 1 ")
        assert trajectory["counters"]["llm_calls"] == 1
