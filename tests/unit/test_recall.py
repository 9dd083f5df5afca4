"""Gold-page recall of a run's searches: hand-made cases, rows, summary and report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.harness import load_results, run_graphs
from langgraph_parallel.eval.recall import RECALL_KEYS, gold_recall, run_searches
from langgraph_parallel.eval.report import markdown_report
from langgraph_parallel.eval.summary import summarize


def result(turn: int, query: str, *titles: str, index: int = 0) -> dict[str, Any]:
    return {"turn": turn, "index": index, "query": query, "text": "", "titles": list(titles)}


def test_recall_counts_each_gold_title_once_at_its_first_turn() -> None:
    searches = [
        result(1, "a", "Alpha", "Noise", index=0),
        result(1, "b", "Other", index=1),
        result(2, "c", "  beta ", "alpha"),  # case and spacing do not matter
    ]
    scored = gold_recall(searches, ["Alpha", "Beta"])
    assert scored["recall"] == 1.0 and scored["all_gold"] == 1.0
    assert scored["gold_found"] == {"Alpha": 1, "Beta": 2}
    assert scored["sub_query_hits"] == pytest.approx(2 / 3)
    assert [q["gold"] for q in scored["sub_query_gold"]] == [["Alpha"], [], ["Beta", "Alpha"]]
    assert scored["sub_query_gold"][2] == {"turn": 2, "query": "c", "gold": ["Beta", "Alpha"]}


def test_partial_recall_and_a_run_without_searches() -> None:
    half = gold_recall([result(1, "a", "Alpha", "Alpha")], ["Alpha", "Beta"])
    assert (half["recall"], half["all_gold"], half["sub_query_hits"]) == (0.5, 0.0, 1.0)
    assert half["gold_found"] == {"Alpha": 1, "Beta": None}
    assert half["sub_query_gold"] == [{"turn": 1, "query": "a", "gold": ["Alpha"]}]
    none = gold_recall([], ["Alpha"])
    assert (none["recall"], none["all_gold"], none["sub_query_hits"]) == (0.0, 0.0, None)


def test_without_gold_titles_recall_is_unknown_not_zero() -> None:
    scored = gold_recall([result(1, "a", "Alpha")], [])
    assert {k: scored[k] for k in RECALL_KEYS} == dict.fromkeys(RECALL_KEYS)
    assert scored["gold_found"] == {}
    assert scored["sub_query_gold"] == [{"turn": 1, "query": "a", "gold": []}]


def test_run_searches_reads_parallel_search_and_parallel_muse_states() -> None:
    search_state = {"search_results": [result(1, "a", "Alpha")]}
    assert run_searches(search_state) == [result(1, "a", "Alpha")]
    muse_state = {
        "trajectories": [
            {"index": 0, "search_results": [result(1, "a", "Alpha")]},
            {"index": 1},  # a trajectory that answered without searching
            {"index": 2, "search_results": [result(2, "b", "Beta")]},
        ]
    }
    searches = run_searches(muse_state)
    assert [(s["trajectory"], s["query"]) for s in searches] == [(0, "a"), (2, "b")]
    scored = gold_recall(searches, ["Beta", "Alpha"])
    assert scored["gold_found"] == {"Beta": 2, "Alpha": 1}
    assert scored["sub_query_gold"][1] == {
        "turn": 2,
        "query": "b",
        "trajectory": 2,
        "gold": ["Beta"],
    }


class SearchingGraph:
    """Retrieves the question's first gold page, and nothing for questions numbered 1."""

    def invoke(self, inputs: dict[str, Any], **_: Any) -> dict[str, Any]:
        number = int(inputs["question"].split()[-1].rstrip("?"))
        titles = [] if number == 1 else [f"Gold {number}a", "Noise"]
        return {
            "answer": "wrong" if number < 2 else f"ans {number}",
            "stop_reason": "answered",
            "counters": {"llm_calls": 2, "turns": 1, "sub_queries": 1},
            "search_results": [result(1, f"query {number}", *titles)],
        }


def gold_questions() -> list[Question]:
    return [
        Question(
            id=f"q{i}",
            question=f"Question {i}?",
            answer=f"ans {i}",
            answers=(f"ans {i}",),
            type="comparison" if i % 2 == 0 else "bridge",
            dataset="hotpotqa",
            # q3 has no gold titles: it must not count in the recall means
            supporting_titles=() if i == 3 else (f"Gold {i}a", f"Gold {i}b"),
        )
        for i in range(4)
    ]


def test_rows_summary_and_report_show_recall_next_to_em(tmp_path: Path) -> None:
    summary = run_graphs(gold_questions(), {"g": SearchingGraph()}, tmp_path, progress=False)
    rows = {r["id"]: r for r in load_results(tmp_path / "results.jsonl")}
    assert rows["q0"]["gold_found"] == {"Gold 0a": 1, "Gold 0b": None}
    assert (rows["q0"]["recall"], rows["q0"]["em"]) == (0.5, 0.0)  # found, still wrong: reading
    assert (rows["q1"]["recall"], rows["q1"]["sub_query_hits"]) == (0.0, 0.0)  # search failure
    assert rows["q3"]["recall"] is None and rows["q3"]["sub_query_gold"][0]["gold"] == []
    block = summary["graphs"]["g"]
    # q0 0.5, q1 0.0, q2 0.5; q3 (no gold titles) is left out of the mean
    assert block["all"]["recall"] == pytest.approx(1 / 3)
    assert block["all"]["all_gold"] == 0.0
    assert block["all"]["sub_query_hits"] == pytest.approx(2 / 3)
    assert block["by_class"]["parallelizable"]["recall"] == pytest.approx(0.5)
    assert block["by_class"]["sequential"]["recall"] == 0.0
    assert block["all"]["em"] == pytest.approx(0.5)
    report = markdown_report(summary, command="cmd")
    header = next(line for line in report.splitlines() if line.startswith("| graph | n |"))
    assert "| EM | F1 | gold recall | all gold | hit sub-queries |" in header
    assert "| g | 4 | 0.500 | 0.500 | 0.333 | 0.000 | 0.667 |" in report


def test_rows_written_before_recall_existed_summarise_as_unknown() -> None:
    old = {"graph": "g", "id": "1", "type": "bridge", "class": "sequential", "em": 1.0}
    block = summarize([old])["graphs"]["g"]["all"]
    assert block["em"] == 1.0 and {k: block[k] for k in RECALL_KEYS} == dict.fromkeys(RECALL_KEYS)
    assert "| g | 1 | 1.000 | 0.000 | – | – | – |" in markdown_report(
        summarize([old]), command="cmd"
    )
