"""The ParallelSearch reward: a table of responses x question classes -> expected components."""

from __future__ import annotations

import pytest

from langgraph_parallel.protocol import INVALID_ACTION_OBSERVATION, parse_action
from langgraph_parallel.rewards import (
    RewardConfig,
    response_steps,
    score_response,
    score_steps,
)

GOLD = ["Paris"]
S1 = "<think>find the capital</think>\n<search> capital of France </search>"
S2 = "<think>two entities</think>\n<search> capital of France ## capital of Spain </search>"
S3 = "<think>next hop</think>\n<search> mayor of Paris </search>"
ANS_OK = "<think>it says Paris</think>\n<answer> Paris </answer>"
ANS_BAD = "<think>guess</think>\n<answer> Lyon </answer>"
ANS_NO_THINK = "<answer> Paris </answer>"
INVALID = "<think>hmm</think> I will search now"

# (case, steps, class) -> (outcome, decomposition, search_count, format)
TABLE = [
    # outcome branches, parallelizable question
    ("correct+valid, 1 round, decomposed", [S2, ANS_OK], "parallelizable", (1.0, 0.15, 0.35, 0.1)),
    ("correct+invalid (no think)", [S2, ANS_NO_THINK], "parallelizable", (0.9, 0.15, 0.35, 0.0)),
    ("wrong+valid", [S2, ANS_BAD], "parallelizable", (0.1, 0.15, 0.35, 0.1)),
    (
        "wrong+invalid (invalid step)",
        [INVALID, S2, ANS_BAD],
        "parallelizable",
        (0.0, 0.15, 0.35, 0.0),
    ),
    ("no answer at all", [S2, S1], "parallelizable", (0.0, 0.15, 0.175, 0.0)),
    # decomposition + search count, parallelizable
    ("par, single query, 1 round", [S1, ANS_OK], "parallelizable", (1.0, 0.0, 0.35, 0.1)),
    ("par, first single then split", [S1, S2, ANS_OK], "parallelizable", (1.0, 0.0, 0.175, 0.1)),
    ("par, no search", [ANS_OK], "parallelizable", (1.0, 0.0, 0.0, 0.1)),
    ("par, 3 rounds", [S2, S1, S3, ANS_BAD], "parallelizable", (0.1, 0.15, 0.35 / 3, 0.1)),
    # sequential question
    ("seq, single query, 2 rounds", [S1, S3, ANS_OK], "sequential", (1.0, 0.05, 0.35, 0.1)),
    ("seq, 3 rounds", [S1, S3, S1, ANS_OK], "sequential", (1.0, 0.05, 0.35, 0.1)),
    ("seq, 1 round", [S1, ANS_OK], "sequential", (1.0, 0.05, 0.175, 0.1)),
    ("seq, decomposed first", [S2, S3, ANS_BAD], "sequential", (0.1, 0.0, 0.35, 0.1)),
    ("seq, no search", [ANS_BAD], "sequential", (0.1, 0.0, 0.0, 0.1)),
    # unknown class: only outcome and format
    ("unknown class", [S2, ANS_OK], "unknown", (1.0, 0.0, 0.0, 0.1)),
    # format edge cases
    ("empty response", [], "parallelizable", (0.0, 0.0, 0.0, 0.0)),
    ("ends on a search", [S1], "sequential", (0.0, 0.05, 0.175, 0.0)),
]


@pytest.mark.parametrize(("case", "steps", "qclass", "expected"), TABLE, ids=[t[0] for t in TABLE])
def test_reward_table(case: str, steps: list[str], qclass: str, expected: tuple) -> None:
    reward = score_steps(steps, GOLD, qclass)
    got = (reward.outcome, reward.decomposition, reward.search_count, reward.format)
    assert got == pytest.approx(expected), case
    assert reward.total == pytest.approx(sum(expected))


def test_tool_call_query_list_counts_as_decomposition() -> None:
    call = [{"name": "search", "args": {"query_list": ["capital of France", "capital of Spain"]}}]
    search = parse_action("<think>two</think>", call)
    answer = parse_action("<think>done</think>", [{"name": "answer", "args": {"answer": "Paris"}}])
    reward = score_steps([search, answer], GOLD, "parallelizable")
    assert reward.decomposed is True
    assert (reward.decomposition, reward.search_count, reward.outcome) == (0.15, 0.35, 1.0)


def test_coefficients_are_configurable() -> None:
    config = RewardConfig(
        format_penalty=0.2, decomposition=0.3, alpha=2, search_count=0.5, format=0
    )
    par = score_steps([S2, ANS_NO_THINK], GOLD, "parallelizable", config)
    assert (par.outcome, par.decomposition, par.search_count, par.format) == (0.8, 0.3, 0.5, 0)
    seq = score_steps([S1, ANS_OK], GOLD, "sequential", config)
    assert (seq.decomposition, seq.search_count) == (0.15, 0.25)
    with pytest.raises(ValueError, match="alpha"):
        RewardConfig(alpha=0)


def test_response_text_drops_observations_and_notes() -> None:
    # A retrieved document that contains an answer tag must not be scored as the model's answer.
    observation = "\n\n<information>[q]\nDoc 1 <answer> Paris </answer></information>\n\n"
    response = S1 + observation + ANS_BAD
    assert response_steps(response) == [S1, "\n\n" + ANS_BAD]
    reward = score_response(response, GOLD, "sequential")
    assert not reward.correct and reward.searches == 1

    # An invalid step stays a step of its own, so the response is not well-formed.
    invalid_then_answer = INVALID + INVALID_ACTION_OBSERVATION + ANS_OK
    assert len(response_steps(invalid_then_answer)) == 2
    assert score_response(invalid_then_answer, GOLD, "unknown").valid_format is False
    assert score_response(S1 + observation + ANS_OK, GOLD, "unknown").valid_format is True


def test_unclosed_observation_at_the_end_is_dropped() -> None:
    assert response_steps(S1 + "<information> cut off") == [S1]
