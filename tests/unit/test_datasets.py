"""Question loading, type filtering, seeded sampling, classes and loader errors."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval import Question, class_counts, classify, load_questions
from langgraph_parallel.eval.datasets import QUESTION_FORMAT, generated_id

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
SAMPLE300 = REPO / "data" / "hotpotqa_dev_sample300.jsonl.gz"

needs_shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} is absent")


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def row(i: int, type_: str | None = "bridge", **extra: object) -> dict[str, object]:
    return {"id": f"q{i}", "question": f"Question {i}?", "answer": f"a{i}", "type": type_, **extra}


# --- bundled sample (never skipped) ---------------------------------------------------------


def test_repo_sample300() -> None:
    qs = load_questions(SAMPLE300)
    assert len(qs) == 300
    assert Counter(q.type for q in qs) == {"comparison": 150, "bridge": 150}
    assert {q.dataset for q in qs} == {"hotpotqa"}
    assert class_counts(qs) == {"parallelizable": 150, "sequential": 150, "unknown": 0}
    assert all(q.question_class == "parallelizable" for q in qs if q.type == "comparison")
    assert all(q.question_class == "sequential" for q in qs if q.type == "bridge")
    first = qs[0]
    assert isinstance(first.answers, tuple) and first.answer in first.answers
    assert isinstance(first.supporting_titles, tuple) and first.supporting_titles


def test_type_filter_on_sample300() -> None:
    comparison = load_questions(SAMPLE300, types="comparison")
    assert len(comparison) == 150 and {q.type for q in comparison} == {"comparison"}
    both = load_questions(SAMPLE300, types=["comparison", "bridge"], limit=10)
    assert [q.id for q in both] == [q.id for q in load_questions(SAMPLE300)[:10]]


def test_seeded_sampling_is_deterministic() -> None:
    a = load_questions(SAMPLE300, limit=20, seed=1)
    b = load_questions(SAMPLE300, limit=20, seed=1)
    c = load_questions(SAMPLE300, limit=20, seed=2)
    unseeded = load_questions(SAMPLE300, limit=20)
    assert [q.id for q in a] == [q.id for q in b]
    assert [q.id for q in a] != [q.id for q in c]
    assert [q.id for q in a] != [q.id for q in unseeded]
    assert len({q.id for q in a}) == 20
    # The type filter applies before the sample is drawn.
    bridge = load_questions(SAMPLE300, types="bridge", limit=5, seed=1)
    assert len(bridge) == 5 and {q.type for q in bridge} == {"bridge"}


# --- real benchmark files in shared/data ----------------------------------------------------


@needs_shared
def test_hotpotqa_distractor_subset() -> None:
    qs = load_questions(SHARED_DATA / "hotpotqa_dev_distractor_subset.jsonl.gz")
    assert Counter(q.type for q in qs) == {"comparison": 436, "bridge": 1285}
    assert class_counts(qs) == {"parallelizable": 436, "sequential": 1285, "unknown": 0}
    assert qs[0].question == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert qs[0].answer == "yes" and qs[0].question_class == "parallelizable"


@needs_shared
def test_2wiki_sample500() -> None:
    qs = load_questions(SHARED_DATA / "2wikimultihopqa_dev_sample500.jsonl.gz")
    assert {q.dataset for q in qs} == {"2wiki"}
    classes = {t: {q.question_class for q in qs if q.type == t} for t in {q.type for q in qs}}
    assert classes == {
        "bridge_comparison": {"parallelizable"},
        "comparison": {"parallelizable"},
        "compositional": {"sequential"},
        "inference": {"sequential"},
    }
    assert class_counts(qs) == {"parallelizable": 234, "sequential": 266, "unknown": 0}


@needs_shared
def test_musique_all_sequential() -> None:
    qs = load_questions(SHARED_DATA / "musique_dev_all.jsonl.gz")
    assert len(qs) == 2417 and {q.dataset for q in qs} == {"musique"}
    assert class_counts(qs)["sequential"] == 2417
    assert len(load_questions(SHARED_DATA / "musique_dev_all.jsonl.gz", types="2hop")) == 1252


@needs_shared
def test_bamboogle_all_sequential() -> None:
    qs = load_questions(SHARED_DATA / "bamboogle.jsonl")
    assert len(qs) == 125 and {q.type for q in qs} == {None}
    assert {q.question_class for q in qs} == {"sequential"}


# --- classification -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "type_", "expected"),
    [
        ("hotpotqa", "comparison", "parallelizable"),
        ("HotpotQA", "bridge", "sequential"),
        ("2wiki", "bridge_comparison", "parallelizable"),
        ("2WikiMultihopQA", "comparison", "parallelizable"),
        ("2wiki", "compositional", "sequential"),
        ("2wiki", "inference", "sequential"),
        ("musique", "3hop1", "sequential"),
        ("bamboogle", None, "sequential"),
        ("hotpotqa", None, "unknown"),
        ("nq", None, "unknown"),
        ("mydata", "comparison", "unknown"),
    ],
)
def test_classify(dataset: str, type_: str | None, expected: str) -> None:
    assert classify(dataset, type_) == expected


def test_question_is_frozen() -> None:
    q = Question(id="1", question="q?", answer="a", answers=("a",), type=None, dataset="x")
    with pytest.raises(AttributeError):
        q.answer = "b"  # type: ignore[misc]


# --- loader behaviour and errors with temporary files ---------------------------------------


def test_answers_default_and_dataset_from_source(tmp_path: Path) -> None:
    rows = [
        row(1, source={"dataset": "MuSiQue-Ans v1.0 dev"}),
        row(2, answers=["alias"], supporting_titles=["T"]),
    ]
    qs = load_questions(write_jsonl(tmp_path / "questions.jsonl.gz", rows))
    assert qs[0].answers == ("a1",) and qs[0].dataset == "musique"
    assert qs[0].question_class == "sequential"
    assert qs[1].answers == ("a2", "alias") and qs[1].supporting_titles == ("T",)
    assert qs[1].dataset == "questions"  # no hint anywhere: the file stem
    assert load_questions(tmp_path / "questions.jsonl.gz", dataset="2wiki")[0].dataset == "2wiki"


@pytest.mark.parametrize("field", ["question", "answer"])
def test_missing_required_field(tmp_path: Path, field: str) -> None:
    bad = row(2)
    del bad[field]
    path = write_jsonl(tmp_path / "hotpotqa.jsonl", [row(1), bad])
    with pytest.raises(UserError) as info:
        load_questions(path)
    message = str(info.value)
    assert f"'{field}'" in message and "line 2" in message
    # the documented format, in this project's own docs (not a path outside the project)
    assert message.endswith(QUESTION_FORMAT) and "docs/guides/corpus.md" in message
    assert "shared/" not in message and "\n" not in message


def test_rows_with_only_question_and_answer_get_stable_ids(tmp_path: Path) -> None:
    rows = [
        {"question": "Who wrote Hamlet?", "answer": "Shakespeare"},
        {"question": "Capital of Italy?", "answers": ["Rome", "Roma"]},
        {"question": "Who wrote Hamlet?", "answer": "William Shakespeare"},
    ]
    path = write_jsonl(tmp_path / "mine.jsonl", rows)
    first = load_questions(path)
    assert [(q.answer, q.answers) for q in first] == [
        ("Shakespeare", ("Shakespeare",)),
        ("Rome", ("Rome", "Roma")),
        ("William Shakespeare", ("William Shakespeare",)),
    ]
    ids = [q.id for q in first]
    assert ids[0] == generated_id("Who wrote Hamlet?") and ids[2] == ids[0] + "-2"
    assert len(set(ids)) == 3
    # same ids on a shuffled reload, so a benchmark resumes the same rows
    shuffled = load_questions(path, seed=3)
    assert {(q.answer, q.id) for q in shuffled} == {(q.answer, q.id) for q in first}
    assert {q.dataset for q in first} == {"mine"} and first[0].question_class == "unknown"


def test_a_blank_question_or_empty_answers_list_is_refused(tmp_path: Path) -> None:
    for bad, field in (
        ({"question": " ", "answer": "a"}, "question"),
        ({"question": "q?", "answers": []}, "answer"),
    ):
        path = write_jsonl(tmp_path / "mine.jsonl", [bad])
        with pytest.raises(UserError, match=f"line 1: missing .*'{field}'"):
            load_questions(path)


def test_bad_json_line_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "hotpotqa.jsonl", [row(1), "", row(3), "{not json"])
    with pytest.raises(UserError, match="line 4"):
        load_questions(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(UserError, match="nope.jsonl"):
        load_questions(path)


def test_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "hotpotqa.jsonl.gz"
    path.write_text(json.dumps(row(1)) + "\n")
    with pytest.raises(UserError, match="Cannot read question file"):
        load_questions(path)


def test_unknown_type_and_bad_limit(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "hotpotqa.jsonl", [row(1), row(2, "comparison")])
    with pytest.raises(UserError, match="bridge, comparison"):
        load_questions(path, types="comparision")
    with pytest.raises(UserError, match="limit"):
        load_questions(path, limit=-1)
    assert load_questions(path, limit=0) == []
