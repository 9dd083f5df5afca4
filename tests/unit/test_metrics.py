"""SQuAD-style answer metrics: known cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_parallel.eval import cover_exact_match, exact_match, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Cat!", "cat"),
        ("  An   apple,  a day. ", "apple day"),
        ("Theory of the Atom", "theory of atom"),  # "the" only as a whole word
        ("U.S.A.", "usa"),
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match_known_cases() -> None:
    assert exact_match("The Cat!", "cat") == 1.0
    assert exact_match("cats", "cat") == 0.0
    assert exact_match("Barack Obama", ["Obama", "barack obama"]) == 1.0
    assert exact_match("obama", []) == 0.0


def test_f1_by_hand() -> None:
    # "dog ran" vs "dog": 1 shared token, precision 1/2, recall 1/1 -> F1 = 2/3.
    assert f1_score("a dog ran", "the dog") == pytest.approx(2 / 3)
    # "big red dog" vs "red dog house": 2 shared, P = R = 2/3 -> F1 = 2/3.
    assert f1_score("big red dog", "red dog house") == pytest.approx(2 / 3)
    assert f1_score("cat", "dog") == 0.0
    # Repeated tokens only count as often as they occur on both sides.
    assert f1_score("the the dog dog", "dog") == pytest.approx(2 * (1 / 2) * 1 / (1 / 2 + 1))


def test_f1_yes_no_special_case() -> None:
    assert f1_score("no", "no longer") == 0.0  # plain token F1 would give 2/3
    assert f1_score("yes it is", "yes") == 0.0
    assert f1_score("Yes.", "yes") == 1.0
    assert f1_score("noanswer", "no answer") == 0.0


def test_best_over_answers() -> None:
    golds = ["New York City", "NYC", "New York"]
    assert f1_score("new york", golds) == 1.0
    assert f1_score("new york state", golds) == pytest.approx(0.8)  # P 2/3, R 1 vs "new york"
    assert exact_match("NYC", golds) == 1.0
    # A bare string is one answer, not a sequence of one-character answers.
    assert exact_match("n", "NYC") == 0.0
    assert f1_score("n", "n y c") == pytest.approx(0.5)


def test_none_prediction_scores_zero() -> None:
    assert exact_match(None, "cat") == 0.0
    assert f1_score(None, ["cat"]) == 0.0
    assert cover_exact_match(None, "cat") == 0.0


def test_empty_answers_agree() -> None:
    assert exact_match("the", "a") == 1.0
    assert f1_score("the", "a") == 1.0
    assert f1_score("", "cat") == 0.0


def test_cover_exact_match() -> None:
    assert cover_exact_match("It was James Madison.", "james madison") == 1.0
    assert cover_exact_match("The answer is the Cat", ["dog", "cat"]) == 1.0
    assert cover_exact_match("concatenate", "cat") == 0.0  # whole tokens only
    assert cover_exact_match("cats", "cat") == 0.0
    assert cover_exact_match("madison james", "james madison") == 0.0
    assert cover_exact_match("anything", "the") == 0.0  # empty gold covers only empty pred
    assert cover_exact_match("a", "the") == 1.0


answers = st.text(alphabet=st.sampled_from("abcdeth .,!'-AT"), max_size=30) | st.text(max_size=30)
gold_lists = st.lists(answers, min_size=1, max_size=4)


@given(answers)
def test_normalize_is_idempotent(s: str) -> None:
    once = normalize_answer(s)
    assert normalize_answer(once) == once


@given(answers, gold_lists)
def test_metric_ranges(pred: str, golds: list[str]) -> None:
    em = exact_match(pred, golds)
    f1 = f1_score(pred, golds)
    cover = cover_exact_match(pred, golds)
    assert em in (0.0, 1.0)
    assert cover in (0.0, 1.0)
    assert 0.0 <= f1 <= 1.0
    if em == 1.0:
        assert f1 == 1.0
        assert cover == 1.0


@given(answers)
def test_prediction_matches_itself(s: str) -> None:
    assert exact_match(s, s) == 1.0
    assert f1_score(s, [s]) == 1.0
    assert cover_exact_match(s, s) == 1.0
