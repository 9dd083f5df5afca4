"""ParallelMuse token accounting and benchmark fields on hand-made runs with known counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.eval.muse import MUSE_KEYS, muse_fields
from langgraph_parallel.eval.report import write_report
from langgraph_parallel.eval.summary import group_metrics, summarize
from langgraph_parallel.parallel_muse.accounting import COST_KEYS, muse_costs
from langgraph_parallel.parallel_muse.regions import region_spans

SEARCH = "<think> plan </think>\n<search> a ## b </search>"  # 46 characters
ANSWER = "<think> so </think>\n<answer> Paris </answer>"


def step(text: str, origin: str, *, width: int = 2, logprobs: bool = True) -> dict[str, Any]:
    """A step cut into ``width``-character tokens (the last one shorter)."""
    tokens = [text[i : i + width] for i in range(0, len(text), width)]
    return {
        "text": text,
        "logprobs": [{"token": t, "logprob": -0.1} for t in tokens] if logprobs else [],
        "regions": {k: [list(s) for s in v] for k, v in region_spans(text).items()},
        "usage": {},
        "action": "answer" if "<answer>" in text else "search",
        "message_index": 1,
        "origin": origin,
    }


def trajectory(tid: str, index: int, steps: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": "Question: capital?"},
        {"role": "assistant", "content": SEARCH},
        {"role": "user", "content": "<information>Paris is the capital.</information>"},
    ]
    return {
        "id": tid,
        "index": index,
        "parent": None,
        "steps": steps,
        "answer": "Paris",
        "messages": messages,
        **kw,
    }


def tokens_in(text: str, region: str, width: int = 2) -> int:
    spans = region_spans(text)[region]
    starts = range(0, len(text), width)
    return sum(any(a < s + width and s < b for a, b in spans) for s in starts)


def run_state() -> dict[str, Any]:
    """t0: search then answer; t1 forks t0 at step 1 (inherits the search, own answer)."""
    t0 = trajectory("t0", 0, [step(SEARCH, "t0"), step(ANSWER, "t0")])
    t1 = trajectory(
        "t1", 1, [step(SEARCH, "t0"), step(ANSWER, "t1")], parent="t0", branch_step=1, answer="Lyon"
    )
    counters = {
        "llm_calls": 3,
        "prompt_tokens": 900,
        "cached_prompt_tokens": 600,
        "completion_tokens": 45,
        "report_calls": 2,
        "report_prompt_tokens": 1000,
        "report_cached_prompt_tokens": 200,
        "report_completion_tokens": 300,
        "aggregate_calls": 1,
        "aggregate_prompt_tokens": 400,
        "aggregate_completion_tokens": 5,
    }
    return {"answer": "Lyon", "trajectories": [t0, t1], "counters": counters}


def test_costs_split_agent_and_reduction_and_count_inherited_steps_once() -> None:
    costs = muse_costs(run_state())
    assert list(costs) == list(COST_KEYS)
    assert costs["agent_prompt_tokens"] == 900
    assert costs["agent_cached_prefill"] == 600
    assert costs["agent_uncached_prefill"] == 300
    assert costs["agent_generated"] == 45
    assert costs["agent_cost"] == 345
    assert costs["reduction_calls"] == 3
    assert costs["reduction_prompt_tokens"] == 1400
    assert costs["reduction_cached_prefill"] == 200
    assert costs["reduction_uncached_prefill"] == 1200
    assert costs["reduction_generated"] == 305
    assert costs["reduction_cost"] == 1505
    # Own steps: t0's search and answer, t1's answer; t1's inherited search is not recounted.
    for region in ("reasoning", "exploration", "answer"):
        expected = tokens_in(SEARCH, region) + 2 * tokens_in(ANSWER, region)
        assert costs[f"{region}_tokens"] == expected
    assert costs["exploration_tokens"] == tokens_in(SEARCH, "exploration") > 0
    assert costs["trajectories"] == 2 and costs["forks"] == 1 and costs["first_branch_step"] == 1
    assert costs["steps_per_trajectory"] == 2
    assert costs["agent_cost_per_step"] == 345 / 4  # t1's inherited search counts as a step


def test_first_branch_step_is_the_earliest_fork_and_none_without_forks() -> None:
    state = run_state()
    t2 = trajectory("t2", 2, [step(ANSWER, "t2")], parent="t0", branch_step=0)
    found = [*state["trajectories"], t2]
    assert muse_costs({**state, "trajectories": found})["first_branch_step"] == 0
    assert muse_costs({**state, "trajectories": found[:1]})["first_branch_step"] is None


def test_regions_are_unknown_without_logprobs_never_guessed() -> None:
    state = run_state()
    state["trajectories"][1]["steps"][1] = step(ANSWER, "t1", logprobs=False)
    costs = muse_costs(state)
    assert costs["exploration_tokens"] is None and costs["reasoning_tokens"] is None
    assert costs["agent_cost"] == 345  # the engine's counts do not need logprobs


def test_fields_score_every_join_on_the_same_trajectories() -> None:
    state = run_state()
    fields = muse_fields(state, ["Paris"])
    assert set(fields) == {*MUSE_KEYS, "tree", "join_inputs"}
    assert fields["tree"].startswith("flowchart TD")
    assert fields["em_join_graph"] == 0.0  # the graph picked Lyon
    assert fields["em_single"] == 1.0  # t0 alone said Paris
    assert fields["em_any"] == 1.0
    # One vote each: the tie goes to the answer reached first (t0).
    assert fields["em_join_majority"] == 1.0 and fields["em_join_weighted"] == 1.0
    # Paris is in the passages both read, Lyon is not: Lyon's vote counts half.
    assert fields["em_join_evidence"] == 1.0
    assert [(i["answer"], i["em"], i["supported"]) for i in fields["join_inputs"]] == [
        ("Paris", 1.0, True),
        ("Lyon", 0.0, False),
    ]
    assert muse_fields({"answer": "x", "counters": {}}, ["x"]) == {}


def test_summary_averages_muse_keys_only_where_rows_have_them() -> None:
    rows: list[dict[str, Any]] = [
        {"em": 1.0, "em_single": 1.0, "exploration_tokens": 10.0},
        {"em": 0.0, "em_single": 0.0, "exploration_tokens": None},
    ]
    block = group_metrics(rows)
    assert block["em_single"] == pytest.approx(0.5)
    assert block["exploration_tokens"] == pytest.approx(10.0)
    assert "agent_cost" not in block and "agent_cost" not in group_metrics([{"em": 1.0}])


def test_report_adds_muse_tables_saving_plot_and_trees(tmp_path: Path) -> None:
    rows = []
    for qid, cost in (("q1", 100.0), ("q2", 300.0)):
        for graph, factor in (("parallel-muse", 0.5), ("rollouts-majority", 1.0)):
            fields = {key: 1.0 for key in MUSE_KEYS}
            fields |= {"agent_cost": cost * factor, "steps_per_trajectory": 2.0 + (qid == "q2")}
            rows.append(
                {
                    "graph": graph,
                    "id": qid,
                    "question": f"{qid}?",
                    "type": "bridge",
                    "class": "sequential",
                    "em": 1.0,
                    "answer": "a",
                    **fields,
                    "tree": f'flowchart TD\n    q["{qid}"]',
                }
            )
    summary = summarize(rows, ["parallel-muse", "rollouts-majority"])
    paths = write_report(summary, tmp_path, command="bench ...", rows=rows)
    assert {p.name for p in paths} >= {"report.md", "muse_saving.png", "trees.md"}
    report = (tmp_path / "report.md").read_text()
    assert "## ParallelMuse: cost and joins" in report
    assert "Partial over independent rollouts: agent_cost 0.500x" in report
    assert "![muse_saving.png](muse_saving.png)" in report
    assert (tmp_path / "trees.md").read_text().count("```mermaid") == 4
    plain = [{**r, "graph": "sequential"} for r in rows[:1]]
    for row in plain:
        for key in [*MUSE_KEYS, "tree"]:
            row.pop(key)
    other = tmp_path / "plain"
    other.mkdir()
    names = {p.name for p in write_report(summarize(plain), other, command="b", rows=plain)}
    assert names == {"report.md", "em_vs_tokens.png", "calls_turns_by_class.png"}
    assert "ParallelMuse" not in (other / "report.md").read_text()
