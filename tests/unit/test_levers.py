"""The training-levers measurement compares the same trajectories under every setting."""

from __future__ import annotations

from lab.experiments.sft.levers import SETTINGS, same_questions


def test_only_questions_both_files_hold_are_timed_in_the_same_order() -> None:
    whole = [
        {"id": i, "policy": p} for i in ("a", "b", "c", "d") for p in ("parallel", "sequential")
    ]
    budget = [{"id": i, "policy": "parallel", "short": True} for i in ("d", "b", "a")]
    w, b = same_questions(whole, budget, n=2)
    assert [r["id"] for r in w] == [r["id"] for r in b] == ["a", "b"]
    assert all(r["policy"] == "parallel" for r in w) and all(r["short"] for r in b)
    assert same_questions(whole, budget, n=9)[0][-1]["id"] == "d"  # "c" was cut from the budget


def test_the_first_setting_is_the_baseline_every_lever_is_compared_with() -> None:
    first = next(iter(SETTINGS.values()))
    assert first == ("whole", 2, None)  # whole passages, padded pairs, every layer adapted
    assert {file for file, _, _ in SETTINGS.values()} == {"whole", "budget"}
