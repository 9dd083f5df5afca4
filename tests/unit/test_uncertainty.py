"""Step uncertainty: entropy of known distributions, ppl, region token mapping, branch points."""

from __future__ import annotations

import math

import pytest

from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.parallel_muse.uncertainty import (
    answer_confidence,
    region_score,
    select_branch_points,
    token_entropy,
    token_regions,
)


def tok(token, logprob, top=None):
    top = [logprob] if top is None else top
    return {"token": token, "logprob": logprob, "top_logprobs": [{"logprob": v} for v in top]}


def step(text, logprobs, origin="t0"):
    spans = {k: [list(s) for s in v] for k, v in region_spans(text).items()}
    return {"text": text, "logprobs": logprobs, "regions": spans, "origin": origin}


def test_entropy_of_a_known_distribution():
    h = token_entropy([{"logprob": math.log(p)} for p in (0.5, 0.25, 0.25)])
    assert h == pytest.approx(1.0397, abs=1e-4)  # -(.5 ln .5 + 2 * .25 ln .25)


def test_truncated_top_k_is_renormalised_before_the_entropy():
    # 0.4 / 0.2 / 0.2 is 0.5 / 0.25 / 0.25 of the mass kept; multiplying the renormalised
    # probabilities by the raw logprobs (the reference code's bug) would give 1.263.
    h = token_entropy([{"logprob": math.log(p)} for p in (0.4, 0.2, 0.2)])
    assert h == pytest.approx(1.0397, abs=1e-4)
    assert token_entropy([]) is None
    assert token_entropy([{"logprob": 0.0}]) == 0.0


def test_entropy_score_is_exp_of_the_mean_token_entropy():
    half = [math.log(0.5)] * 2
    quarter = [math.log(0.25)] * 4
    s = step("abcd", [tok("ab", math.log(0.5), half), tok("cd", math.log(0.25), quarter)])
    expected = math.exp((math.log(2) + math.log(4)) / 2)
    assert region_score(s, "all", "entropy") == pytest.approx(expected)
    assert expected == pytest.approx(math.sqrt(8))


def test_ppl_score_uses_the_sampled_token_logprobs():
    s = step("abc", [tok("a", -1.0, [-0.1]), tok("b", -2.0), tok("c", -3.0)])
    assert region_score(s, "all", "ppl") == pytest.approx(math.exp(2.0))
    s["logprobs"].append(tok("d", float("-inf")))  # unreported sampled token: skipped
    assert region_score(s, "all", "ppl") == pytest.approx(math.exp(2.0))


def test_character_spans_map_onto_tokens_by_accumulated_length():
    text = "<think> ab </think>\n<search> q </search>"
    pieces = ["<think>", " ab", " </think>", "\n", "<search>", " q", " </", "search>"]
    assert "".join(pieces) == text
    lp = [tok(p, -0.5) for p in pieces]
    regions = token_regions(region_spans(text), lp)
    # reasoning is the think body " ab " (chars 7..11): tokens " ab" and " </think>" overlap it
    assert regions["reasoning"] == [1, 2]
    assert regions["exploration"] == [4, 5, 6, 7]
    assert regions["answer"] == []
    assert regions["all"] == list(range(8))


def test_region_without_tokens_has_no_score():
    text = "<think> ab </think>\n<answer> x </answer>"
    s = step(text, [tok(text, -0.5)])
    assert region_score(s, "exploration", "entropy") is None
    assert region_score(s, "reasoning", "entropy") == pytest.approx(1.0)


def test_answer_confidence_scores_the_answer_text_not_the_tags():
    pieces = ["<answer>", " Paris", " </answer>"]
    s = step(
        "".join(pieces),
        [tok("<answer>", 0.0), tok(" Paris", math.log(0.5)), tok(" </answer>", 0.0)],
    )
    assert answer_confidence(s) == pytest.approx(0.5)
    assert answer_confidence(step("<think> x </think>", [tok("<think> x </think>", -1.0)])) is None


def flat(m):
    return [math.log(1 / m)] * m


def agent_step(reasoning_m, exploration_m, origin="t0", answer=False, query="q"):
    action = "<answer> a </answer>" if answer else f"<search> {query} </search>"
    think = "<think> r </think>\n"
    return step(
        think + action,
        [tok(think, math.log(1 / reasoning_m), flat(reasoning_m))]
        + [tok(action, math.log(1 / exploration_m), flat(exploration_m))],
        origin,
    )


def trajectory(tid, *ms, answer_last=True):
    # Distinct queries: a search repeated in a trajectory ends its branch points (a loop).
    steps = [agent_step(r, e, tid, query=f"q{i}") for i, (r, e) in enumerate(ms)]
    if answer_last:
        steps[-1] = agent_step(ms[-1][0], ms[-1][1], tid, answer=True)
    return {"id": tid, "steps": steps}


def picks(points):
    return [(p["trajectory"], p["step"]) for p in points]


def test_top_k_by_region_and_mixed_split():
    t = trajectory("t0", (7, 2), (1, 5), (3, 9))
    assert picks(select_branch_points([t], "exploration", "entropy", 2)) == [("t0", 1), ("t0", 0)]
    assert picks(select_branch_points([t], "reasoning", "entropy", 2)) == [("t0", 0), ("t0", 2)]
    assert picks(select_branch_points([t], "all", "ppl", 1)) == [("t0", 2)]
    mixed = select_branch_points([t], "mixed", "entropy", 2)
    assert [(p["region"], p["step"]) for p in mixed] == [("reasoning", 0), ("exploration", 1)]
    # odd k: the extra point goes to exploration; with step 0 taken, exploration runs out and
    # reasoning's next best fills in
    mixed3 = select_branch_points([t], "mixed", "entropy", 3)
    assert picks(mixed3) == [("t0", 0), ("t0", 1), ("t0", 2)]
    assert [p["region"] for p in mixed3] == ["reasoning", "exploration", "reasoning"]


def test_inherited_and_excluded_steps_are_never_picked_and_ties_go_to_earlier_steps():
    parent = trajectory("t0", (2, 4), (2, 4), (2, 4))
    child = {"id": "t1", "steps": [*parent["steps"][:1], agent_step(2, 4, "t1")]}
    points = select_branch_points([parent, child], "exploration", "entropy", 5, exclude={("t0", 0)})
    assert picks(points) == [("t0", 1), ("t1", 1)]


def test_equal_steps_of_one_trajectory_go_earliest_first():
    t = trajectory("t0", (2, 4), (2, 4), (2, 4))
    assert picks(select_branch_points([t], "reasoning", "entropy", 3)) == [
        ("t0", 0),
        ("t0", 1),
        ("t0", 2),
    ]
    assert picks(select_branch_points([t], "reasoning", "entropy", 1, min_step=1)) == [("t0", 1)]


def test_points_before_min_step_are_never_picked():
    t = trajectory("t0", (7, 2), (1, 5), (3, 9))  # step 0 is the most uncertain reasoning step
    assert picks(select_branch_points([t], "reasoning", "entropy", 1)) == [("t0", 0)]
    assert picks(select_branch_points([t], "reasoning", "entropy", 1, min_step=1)) == [("t0", 2)]
    mixed = select_branch_points([t], "mixed", "entropy", 3, min_step=1)
    assert picks(mixed) == [("t0", 2), ("t0", 1)]  # only two steps left to pick from
    assert select_branch_points([t], "all", "ppl", 2, min_step=3) == []


def test_unknown_region_is_refused():
    with pytest.raises(ValueError, match="region"):
        select_branch_points([], "thinking", "entropy", 1)  # type: ignore[arg-type]
