"""Comparison questions from corpus paragraph pairs (``lab/training/pairs.py``), and the file."""

from __future__ import annotations

from collections import Counter

import pytest

from lab.training.pairs import EVALUATION, held_out_names, person
from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.train.gold import gold_questions
from langgraph_parallel.train.questions import README_ENTITIES

PAIRS = repo_data_dir() / "hotpotqa_corpus_pairs.jsonl.gz"


def test_a_first_sentence_gives_demonym_role_and_birth_year() -> None:
    derrickson = person(
        "Scott Derrickson",
        ["Scott Derrickson (born July 16, 1966) is an American director, screenwriter."],
    )
    assert derrickson is not None
    assert (derrickson.demonym, derrickson.role, derrickson.born) == ("American", "director", 1966)
    assert not derrickson.dead
    rodrigo = person("Bing Rodrigo", ["Bing Rodrigo (1954\u20132001) is a Filipino singer."])
    assert rodrigo is not None and rodrigo.born == 1954 and rodrigo.dead
    film = person("Shameless (TV)", ["Shameless is an American comedy-drama television series."])
    assert film is not None and film.born is None and not film.dead  # kept out of nationality
    assert person("Paris", ["Paris is the capital of France."]) is None
    # A sentence about someone else than the paragraph's title gives nothing.
    assert person("Ed Wood (film)", ["Tim Burton (born 1958) is an American director."]) is None


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return list(read_rows(PAIRS, what="question file"))


def test_every_pair_answer_follows_its_two_first_sentences(rows: list[dict]) -> None:
    kinds: Counter[str] = Counter()
    for row in rows:
        a, b = (person(p["title"], p["sentences"]) for p in row["context"])
        assert a is not None and b is not None
        assert row["supporting_facts"] == [[a.title, 0], [b.title, 0]]
        if "nationality" in row["question"]:
            assert row["answer"] == ("yes" if a.demonym == b.demonym else "no")
            assert a.role == b.role and (a.born or a.dead) and (b.born or b.dead)
        else:
            assert a.born is not None and b.born is not None and a.born != b.born
            assert row["answer"] == (a if a.born < b.born else b).name
        kinds[row["answer"] if row["answer"] in ("yes", "no") else "born"] += 1
    assert kinds["yes"] == kinds["no"] >= 100 and kinds["born"] >= 200


def test_no_pair_touches_an_evaluation_question_or_the_readme_people(rows: list[dict]) -> None:
    titles, texts = held_out_names()
    evaluation_ids = {q.id for path in EVALUATION for q in load_questions(path)}
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert row["id"] not in evaluation_ids
        assert not set(row["supporting_titles"]) & (titles | set(README_ENTITIES))
        names = [p["title"].split(" (")[0].lower() for p in row["context"]]
        assert not any(name in text for name in names for text in texts)


def test_pairs_are_comparisons_with_gold_plans_for_gold_mix() -> None:
    golds = list(gold_questions(PAIRS))
    assert len(golds) == len(load_questions(PAIRS))
    assert {g.question_class for g in golds} == {"parallelizable"}
    assert all(len(g.hops) == 1 and len(g.hops[0]) == 2 for g in golds)
