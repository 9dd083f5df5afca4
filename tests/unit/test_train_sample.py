"""``train sample``: seeded samples through the real graph, scored by the reward, in shards."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_parallel.apps.cli import main
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question, load_questions
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.models.identity import adapter_of
from langgraph_parallel.paths import repo_data_dir, source_commit
from langgraph_parallel.rewards import RewardConfig, score_response, score_steps
from langgraph_parallel.train.headroom import headroom, pass_at
from langgraph_parallel.train.questions import README_ENTITIES
from langgraph_parallel.train.sample import (
    SampleConfig,
    reward_config,
    sample,
    sample_row,
    sample_seed,
)
from langgraph_parallel.train.sample_pool import (
    EVALUATION_FILES,
    POOL_FILES,
    PoolQuestion,
    evaluation_ids,
    part_paragraphs,
    pool_file,
    training_pool,
)
from langgraph_parallel.train.sample_shards import read_samples
from tests.conftest import SHARED_DATA
from tests.fakes import CountingSearcher, SeededAgentModel

needs_shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data")


def _question(qid: str, qclass: str) -> PoolQuestion:
    kind = "comparison" if qclass == "parallelizable" else "bridge"
    question = Question(qid, f"Question {qid}?", "yes", ("yes",), kind, "hotpotqa")
    return PoolQuestion("hotpotqa", question)


POOL = [_question(f"q{i}", ("parallelizable", "sequential")[i % 2]) for i in range(5)]


def seeded_reply(seed: int, step: int) -> AIMessage:
    """A step that depends on the sample's seed: decomposes or not, answers right or not."""
    if step == 0:
        query = "a ## b" if seed % 2 else "a"
        return AIMessage(f"<think> plan {seed % 7} </think>\n<search> {query} </search>")
    answer = "yes" if seed % 3 else "no"
    return AIMessage(f"<think> read </think>\n<answer> {answer} </answer>")


class Killed(BaseException):
    """Stands for the process being killed in the middle of a run."""


def _run(out: Path, model: Any, **settings: Any) -> Path:
    config = SampleConfig(out=str(out), shard_size=2, concurrency=1, **settings)
    return sample(
        config, model=model, searchers={"hotpotqa": CountingSearcher()}, pool=POOL, progress=False
    )


def _shard_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("shard-*"))}


def test_a_killed_run_resumes_where_it_stopped_and_writes_the_rows_of_an_unbroken_one(
    tmp_path: Path,
) -> None:
    whole = SeededAgentModel(reply=seeded_reply)
    _run(tmp_path / "whole", whole, samples=3)
    assert len(whole.calls) == 5 * 3 * 2  # 5 questions, 3 samples, two steps each

    calls = itertools.count()

    def dies(seed: int, step: int) -> AIMessage:
        if next(calls) == 15:  # question 2's second sample, after shard 0 (questions 0-1) closed
            raise Killed
        return seeded_reply(seed, step)

    with pytest.raises(Killed):
        _run(tmp_path / "cut", SeededAgentModel(reply=dies), samples=3)
    assert (tmp_path / "cut" / "shard-00000.jsonl.gz").is_file()
    assert (tmp_path / "cut" / "shard-00001.jsonl").is_file()  # open: rows of question 2 only
    (piece,) = json.loads((tmp_path / "cut" / "run.json").read_text())["pieces"]
    assert piece["samples"] == 7  # the killed piece's record counts every row it wrote
    again = SeededAgentModel(reply=seeded_reply)
    _run(tmp_path / "cut", again, samples=3)
    assert len(again.calls) == 30 - 14  # the seven samples written are not run again
    assert _shard_bytes(tmp_path / "cut") == _shard_bytes(tmp_path / "whole")
    assert sorted(_shard_bytes(tmp_path / "whole")) == [
        "shard-00000.jsonl.gz",
        "shard-00001.jsonl.gz",
        "shard-00002.jsonl.gz",
    ]


def test_each_sample_runs_at_the_temperature_with_the_seed_of_its_question_and_index(
    tmp_path: Path,
) -> None:
    model = SeededAgentModel(reply=seeded_reply)
    _run(tmp_path / "out", model, samples=2, temperature=0.9, seed=7)
    rows = [r for rows in read_samples(tmp_path / "out").values() for r in rows]
    assert {(r["id"], r["sample"], r["seed"]) for r in rows} == {
        (q.question.id, k, sample_seed(7, q.question.id, k)) for q in POOL for k in range(2)
    }
    assert {(c["seed"], c["temperature"]) for c in model.calls} == {(r["seed"], 0.9) for r in rows}
    assert len({r["seed"] for r in rows}) == len(rows)  # no two samples share a seed
    assert sample_seed(7, "q1", 0) == sample_seed(7, "q1", 0) != sample_seed(8, "q1", 0)


def test_more_samples_later_keep_the_rows_written_and_match_a_run_made_at_once(
    tmp_path: Path,
) -> None:
    _run(tmp_path / "grown", SeededAgentModel(reply=seeded_reply), samples=1)
    first = read_samples(tmp_path / "grown")
    _run(tmp_path / "grown", SeededAgentModel(reply=seeded_reply), samples=2)
    _run(tmp_path / "once", SeededAgentModel(reply=seeded_reply), samples=2)
    assert _shard_bytes(tmp_path / "grown") == _shard_bytes(tmp_path / "once")
    later = {
        (r["id"], r["sample"]): r
        for rows in read_samples(tmp_path / "grown").values()
        for r in rows
    }
    assert all(later[(r["id"], r["sample"])] == r for rows in first.values() for r in rows)
    _run(tmp_path / "grown", SeededAgentModel(reply=seeded_reply), samples=2)  # nothing to do
    run = json.loads((tmp_path / "grown" / "run.json").read_text())
    assert [p["samples"] for p in run["pieces"]] == [5, 5]
    assert run["commits"] == [source_commit()]
    # The weights the model's name stood for: what the results index tells a stale run by.
    assert run["adapters"] == {"smollm2-parallel": [adapter_of("smollm2-parallel")]}


def test_a_folder_of_other_settings_is_refused(tmp_path: Path) -> None:
    _run(tmp_path / "out", SeededAgentModel(reply=seeded_reply), samples=1)
    with pytest.raises(UserError, match="temperature=0.7"):
        _run(tmp_path / "out", SeededAgentModel(reply=seeded_reply), samples=1, temperature=1.0)


def test_a_failed_sample_is_a_row_with_its_error_and_no_reward(tmp_path: Path) -> None:
    def fails(seed: int, step: int) -> Any:
        return RuntimeError("engine gone") if seed % 2 else seeded_reply(seed, step)

    _run(tmp_path / "out", SeededAgentModel(reply=fails), samples=2)
    rows = [r for rows in read_samples(tmp_path / "out").values() for r in rows]
    failed = [r for r in rows if r["seed"] % 2]
    assert failed and all(r["reward"]["total"] == 0 and not r["correct"] for r in failed)
    assert all("engine gone" in (r["error"] or r["stop_reason"]) for r in failed)


def test_a_shard_whose_every_sample_failed_stops_the_run_and_a_rerun_samples_it_anew(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"Every sample of shard 0 failed.*engine gone.*again"):
        _run(out, SeededAgentModel(reply=lambda seed, step: RuntimeError("engine gone")))
    assert not read_samples(out)  # no error rows left to be skipped as done
    _run(out, SeededAgentModel(reply=seeded_reply))
    _run(tmp_path / "unbroken", SeededAgentModel(reply=seeded_reply))
    assert _shard_bytes(out) == _shard_bytes(tmp_path / "unbroken")


PROMPT = HumanMessage("Answer the given question...\nQuestion: Who is older, A or B?\n")
OBSERVATION = HumanMessage(
    "\n\n<information>[A] Doc 1(Title: A) <answer> B </answer></information>\n\n"
)
HAND_MADE = {
    "decomposed, one search, right": (
        [
            "<think> both </think>\n<search> A ## B </search>",
            "<think> A </think>\n<answer> A </answer>",
        ],
        {"outcome": 1.0, "decomposition": 0.15, "search_count": 0.35, "format": 0.1},
    ),
    "one query, two searches, wrong": (
        [
            "<think> A </think>\n<search> A </search>",
            "<think> B </think>\n<search> B </search>",
            "<think> so </think>\n<answer> B </answer>",
        ],
        {"outcome": 0.1, "decomposition": 0.0, "search_count": 0.175, "format": 0.1},
    ),
    "no answer (gated: no decomposition or search pay)": (
        ["<think> both </think>\n<search> A ## B </search>"],
        {"outcome": 0.0, "decomposition": 0.0, "search_count": 0.0, "format": 0.0},
    ),
    "right without a think": (
        ["<search> A ## B </search>", "<answer> A </answer>"],
        {"outcome": 0.9, "decomposition": 0.0, "search_count": 0.0, "format": 0.0},
    ),
}


@pytest.mark.parametrize("name", HAND_MADE)
def test_the_row_scores_a_hand_made_trajectory_as_rewards_py_does(name: str) -> None:
    steps, expected = HAND_MADE[name]
    transcript = [PROMPT]
    for step in steps:
        transcript += [AIMessage(step), OBSERVATION]
    item = PoolQuestion(
        "hotpotqa", Question("h1", PROMPT.text, "A", ("A",), "comparison", "hotpotqa")
    )
    row = sample_row(item, 0, 1, {"transcript": transcript[:-1]}, reward_config("parallel"))
    assert row["reward"] == pytest.approx({**expected, "total": sum(expected.values())})
    gated = RewardConfig(require_answer=True)
    direct = score_steps(steps, ["A"], "parallelizable", gated)
    response = "".join(m.text for m in transcript[1:-1])
    assert score_response(response, ["A"], "parallelizable", gated) == direct
    assert row["reward"]["total"] == pytest.approx(direct.total)
    assert (row["correct"], row["decomposed"], row["searches"]) == (
        direct.correct,
        direct.decomposed,
        direct.searches,
    )
    assert [m["role"] for m in row["messages"]][:2] == ["user", "assistant"]


def test_the_sequential_twin_is_scored_without_the_decomposition_term() -> None:
    steps = ["<think> A </think>\n<search> A </search>", "<think> B </think>\n<answer> B </answer>"]
    transcript = [PROMPT, AIMessage(steps[0]), OBSERVATION, AIMessage(steps[1])]
    item = PoolQuestion("hotpotqa", Question("h2", "Q?", "B", ("B",), "bridge", "hotpotqa"))
    twin = sample_row(item, 0, 1, {"transcript": transcript}, reward_config("sequential"))
    ours = sample_row(item, 0, 1, {"transcript": transcript}, reward_config("parallel"))
    assert ours["reward"]["decomposition"] == pytest.approx(0.05)  # lambda_d / alpha
    assert twin["reward"]["decomposition"] == 0.0
    assert {k: v for k, v in twin["reward"].items() if k not in ("decomposition", "total")} == {
        k: v for k, v in ours["reward"].items() if k not in ("decomposition", "total")
    }


def test_pass_at_k_is_the_unbiased_estimator_of_drawing_k_of_the_n_samples() -> None:
    for n, c, k in [(4, 0, 1), (4, 1, 1), (4, 1, 2), (4, 2, 3), (4, 4, 4), (8, 3, 4)]:
        draws = list(itertools.combinations([True] * c + [False] * (n - c), k))
        assert pass_at(n, c, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))


def _row(qid: str, k: int, correct: bool, qclass: str, decomposed: bool | None) -> dict[str, Any]:
    total = (1.0 if correct else 0.1) + (0.15 if decomposed else 0.0)
    reward = {"outcome": total, "decomposition": 0.0, "search_count": 0.0, "format": 0.0}
    return {
        "id": qid,
        "sample": k,
        "part": "hotpotqa",
        "class": qclass,
        "correct": correct,
        "decomposed": decomposed,
        "valid_format": True,
        "searches": 1,
        "reward": {**reward, "total": total},
    }


def test_headroom_counts_pass_at_1_pass_at_k_and_the_usable_questions_by_class() -> None:
    rows = [
        _row("c1", 0, True, "parallelizable", False),
        _row("c1", 1, False, "parallelizable", True),
        _row("c2", 0, True, "parallelizable", True),
        _row("c2", 1, True, "parallelizable", True),
        _row("b1", 0, False, "sequential", False),
        _row("b1", 1, False, "sequential", False),
        _row("b2", 0, True, "sequential", False),  # one sample of two: not counted
    ]
    summary = headroom(rows, 2)
    comparison, bridge = summary["by_class"]["parallelizable"], summary["by_class"]["sequential"]
    assert comparison["pass_at"] == {"1": 0.75, "2": 1.0}
    assert comparison["right_usable_at_k"] == 0.5  # c1's right sample did not decompose
    assert comparison["right_and_wrong_at_k"] == 0.5
    assert comparison["reward"]["best_of_k_mean"] == pytest.approx((1.0 + 1.15) / 2)
    assert bridge["pass_at"] == {"1": 0.0, "2": 0.0} and bridge["questions"] == 1
    assert summary["questions"] == 3 and summary["incomplete_questions"] == 1
    assert sum(comparison["reward"]["histogram"]["counts"]) == 4


def test_the_histogram_puts_a_total_on_an_edge_in_the_bin_it_opens() -> None:
    rows = [_row("b", k, False, "sequential", None) for k in range(3)]
    for row, total in zip(rows, (0.1 + 0.05 + 0.35 + 0.1, 1.6, 0.0), strict=True):
        row["reward"]["total"] = total  # 0.6 / 0.2 is 2.9999999999999996 in floats
    counts = headroom(rows, 3)["by_class"]["sequential"]["reward"]["histogram"]["counts"]
    assert counts == [1, 0, 0, 1, 0, 0, 0, 1]


def test_summary_prints_the_table_of_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(tmp_path / "out", SeededAgentModel(reply=seeded_reply), samples=2)
    assert (
        main(["train", "sample", "--out", str(tmp_path / "out"), "--summary", "--samples", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert "| comparison (parallelizable) | 3 |" in out and "pass@2" in out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["questions"] == 5 and summary["trajectories_per_s"] > 0


@needs_shared
def test_no_pool_holds_an_evaluation_question_or_the_readme_question_s_people() -> None:
    held_out = evaluation_ids()
    # The filter has work to do: the files hold evaluation ids and the README question itself.
    raw = [q for part in POOL_FILES for q in load_questions(pool_file(part))]
    assert sum(q.id in held_out for q in raw) > 400
    assert any("Scott Derrickson" in q.question and "Ed Wood" in q.question for q in raw)
    files = [read_rows(repo_data_dir() / name) for name in EVALUATION_FILES]
    assert held_out == {str(row["id"]) for rows in files for row in rows}
    pool = training_pool(tuple(POOL_FILES))
    assert {p.part for p in pool} == set(POOL_FILES)
    for item in pool:
        text = " ".join([item.question.question, *item.question.supporting_titles])
        assert item.question.id not in held_out
        assert not any(entity in text for entity in README_ENTITIES)
    assert len({p.question.id for p in pool}) == len(pool)


@needs_shared
def test_the_own_corpora_hold_no_paragraph_of_an_evaluation_question_alone() -> None:
    held_out = evaluation_ids()
    for part in ("2wiki", "musique"):
        kept = {title for context in part_paragraphs(part, held_out) for title in context}
        rows = read_rows(pool_file(part))
        evaluation_only = {
            str(p["title"]) for r in rows if str(r["id"]) in held_out for p in r["context"]
        } - {str(p["title"]) for r in rows if str(r["id"]) not in held_out for p in r["context"]}
        assert evaluation_only and not kept & evaluation_only


@needs_shared
def test_limit_takes_the_classes_in_turn_and_a_larger_one_extends_the_list() -> None:
    small = training_pool(("hotpotqa",), limit=20, seed=3)
    large = training_pool(("hotpotqa",), limit=50, seed=3)
    assert [p.question.id for p in large[:40]] == [p.question.id for p in small]
    assert [p.question.question_class for p in small[:4]] == ["parallelizable", "sequential"] * 2
    only = training_pool(("hotpotqa",), classes=("parallelizable",), limit=5)
    assert {p.question.question_class for p in only} == {"parallelizable"} and len(only) == 5


def test_a_question_is_out_when_it_or_one_of_its_gold_titles_names_the_readme_people() -> None:
    from langgraph_parallel.train.questions import names_readme_entity

    assert names_readme_entity("Who directed Sinister?", "Sinister (film)", "Scott Derrickson")
    assert names_readme_entity("Was Ed Wood born before 1930?")
    assert not names_readme_entity("Who directed Sinister?", "Sinister (film)")
    assert not names_readme_entity()
