"""The teacher's last think: values read from the supporting sentences, compared, concluded."""

from __future__ import annotations

from langgraph_parallel.train.gold import gold_question
from langgraph_parallel.train.reading import conclusion, reading, singular, what_it_is
from langgraph_parallel.train.synth import THINK_BUDGET, gold_steps, valid_steps

MAGAZINES = {
    "Arthur's Magazine": ("Arthur's Magazine (1844-1846) was an American literary periodical.",),
    "First for Women": ("First for Women is a woman's magazine started in 1989.",),
}


def test_a_comparison_of_dates_states_both_years_and_which_is_earlier() -> None:
    question = "Which magazine was started first, Arthur's Magazine or First for Women?"
    stated = conclusion(question, list(MAGAZINES), MAGAZINES, "Arthur's Magazine")
    assert stated == (
        "Arthur's Magazine: 1844; First for Women: 1989; 1844 is earlier than 1989 "
        "-> Arthur's Magazine"
    )


def test_a_question_of_deaths_reads_the_second_year_of_a_life_span() -> None:
    facts = {
        "A (director)": ("A (May 7, 1890 - February 20, 1959) was a director.",),
        "B": ("B (1895 - 1967) was an actor.",),
    }
    stated = conclusion("Who died first, A or B?", list(facts), facts, "A")
    assert stated is not None and stated.startswith("A: 1959; B: 1967; 1959 is earlier")


def test_years_that_disagree_with_the_answer_state_nothing() -> None:
    # "Which came first" answered with the later year: the sentences hold another date.
    question = "Which magazine was started first, Arthur's Magazine or First for Women?"
    assert conclusion(question, list(MAGAZINES), MAGAZINES, "First for Women") is None
    assert conclusion("Which is bigger, A or B?", list(MAGAZINES), MAGAZINES, "A") is None


def test_a_nationality_question_says_both_or_versus() -> None:
    facts = {
        "Scott Derrickson": ("Scott Derrickson (born 1966) is an American director.",),
        "Ed Wood": ("Edward Davis Wood Jr. was an American filmmaker.",),
    }
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert conclusion(question, list(facts), facts, "yes") == (
        "Scott Derrickson: American; Ed Wood: American; both American -> yes"
    )
    # The sentences say "same" but the gold says "no": no conclusion rather than a wrong one.
    assert conclusion(question, list(facts), facts, "no") is None
    other = {**facts, "Ed Wood": ("Ed Wood is a Scottish footballer.",)}
    assert conclusion(question, list(other), other, "no") == (
        "Scott Derrickson: American; Ed Wood: Scottish; American vs Scottish -> no"
    )


def test_a_both_question_states_what_each_is_and_whether_both_are_that_kind() -> None:
    facts = {
        "Daniel Mann": ("Daniel Mann (1912 - 1991) was an American film and television director.",),
        "Mike Judge": ("Mike Judge (born 1962) is an American actor, animator and writer.",),
    }
    question = "Were Daniel Mann and Mike Judge both directors?"
    assert conclusion(question, list(facts), facts, "no") == (
        "Daniel Mann: American film and television director; Mike Judge: American actor; "
        "not both directors -> no"
    )
    # The sentences say "not both" but the gold says "yes": no conclusion rather than a wrong one.
    assert conclusion(question, list(facts), facts, "yes") is None
    same = {**facts, "Mike Judge": ("Mike Judge is an American animator and film director.",)}
    assert conclusion(question, list(same), same, "yes") == (
        "Daniel Mann: American film and television director; Mike Judge: American animator and "
        "film director; both directors -> yes"
    )
    # A kind with a qualifier ("about war") is more than what a first sentence says: without
    # that rule these sentences would read "not both documentaries about war -> no".
    films = {"A": ("A is a 2005 documentary.",), "B": ("B is a 1981 documentary film.",)}
    about_war = "Are A and B both documentaries about war?"
    assert conclusion(about_war, list(films), films, "no") is None
    assert conclusion("Are A and B both documentaries?", list(films), films, "yes") == (
        "A: 2005 documentary; B: 1981 documentary film; both documentaries -> yes"
    )
    assert what_it_is(["Gagea is a large genus of plants in the lily family."]) == "large genus"
    assert [singular(w) for w in ("actresses", "businessmen", "bodies", "writers", "glass")] == [
        "actress",
        "businessman",
        "body",
        "writer",
        "glass",
    ]


def test_without_a_rule_the_sentences_come_first_then_the_answer_within_budget() -> None:
    said = reading("Who?", ["A"], {"A": ("x",)}, "Paris", 40, lambda n: ("word " * 20)[:n])
    assert said.endswith(" -> Paris") and len(said) <= 40
    assert reading("Who?", ["A", "B"], {}, "Paris", 80, lambda n: "A is in Paris.") == (
        "A is in Paris. -> Paris"
    )


def test_gold_steps_end_with_the_stated_comparison_in_both_policies() -> None:
    row = {
        "id": "m1",
        "question": "Which magazine was started first, Arthur's Magazine or First for Women?",
        "answer": "Arthur's Magazine",
        "type": "comparison",
        "supporting_titles": list(MAGAZINES),
        "supporting_facts": [[t, 0] for t in MAGAZINES],
        "context": [{"title": t, "sentences": list(s)} for t, s in MAGAZINES.items()],
    }
    gold = gold_question(row, "hotpotqa")
    assert gold is not None
    for policy in ("parallel", "sequential"):
        steps = gold_steps(gold, policy)  # type: ignore[arg-type]
        assert valid_steps(steps, decompose=policy == "parallel")
        assert "1844 is earlier than 1989 -> Arthur's Magazine </think>" in steps[-1]
        assert len(steps[-1]) < THINK_BUDGET + 80
