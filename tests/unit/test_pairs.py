"""Comparison questions from corpus paragraph pairs (``lab/training/pairs.py``), and the file."""

from __future__ import annotations

from collections import Counter

import pytest

from lab.training.pairs import EVALUATION, KINDS, held_out_names, kind_of, person, plural, says
from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.train.gold import gold_questions
from langgraph_parallel.train.questions import README_ENTITIES
from langgraph_parallel.train.reading import conclusion

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


def test_what_a_person_is_gives_the_kind_a_both_question_asks_about() -> None:
    def one(sentence: str) -> tuple[str, str] | None:
        found = person(sentence.split(" (")[0], [sentence])
        assert found is not None
        return kind_of(found)

    assert one("Daniel Mann (1912 - 1991) was an American film and television director.") == (
        "director",
        "film",
    )
    assert one("Kam Heskin (born 1973) is an American actress and singer.") == ("actress", "acting")
    assert one("Ed Grant (born 1950) is an American businessman.") == ("businessman", "public life")
    assert one("Jo Nesbo (born 1960) is a Norwegian jockey.") is None  # no family knows it
    assert [plural(w) for w in ("actor", "actress", "businessman", "coach")] == [
        "actors",
        "actresses",
        "businessmen",
        "coaches",
    ]
    assert says("an American actress and singer", ["singer"]) and not says("a singer", ["sing"])


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
        elif " both " in row["question"]:
            ka, kb = kind_of(a), kind_of(b)
            assert ka is not None and kb is not None
            asked = row["question"].rsplit(" both ", 1)[1].rstrip("?")
            if row["answer"] == "yes":
                assert plural(ka[0]) == plural(kb[0]) == asked
            else:  # one is what is asked, the other of another family and never called it
                first_asked = plural(ka[0]) == asked
                (k_one, k_other), other = ((ka, kb), b) if first_asked else ((kb, ka), a)
                assert plural(k_one[0]) == asked and k_other[1] != k_one[1]
                assert not says(other.sentence, KINDS[k_one[1]])
            # The teacher's reading states both kinds and reaches the same answer.
            facts = {p["title"]: tuple(p["sentences"][:1]) for p in row["context"]}
            stated = conclusion(row["question"], row["supporting_titles"], facts, row["answer"])
            assert stated is not None and stated.endswith(f"both {asked} -> {row['answer']}")
            kinds["both " + row["answer"]] += 1
            continue
        else:
            assert a.born is not None and b.born is not None and a.born != b.born
            assert row["answer"] == (a if a.born < b.born else b).name
        kinds[row["answer"] if row["answer"] in ("yes", "no") else "born"] += 1
    assert kinds["yes"] == kinds["no"] >= 100 and kinds["born"] >= 200
    assert kinds["both yes"] == kinds["both no"] >= 100


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
