"""Paired bootstrap intervals: the difference of two systems on the same questions."""

from __future__ import annotations

import pytest

from lab.paired import (
    PairedDifference,
    paired_bootstrap,
    paired_by_class,
    paired_by_id,
)


def test_a_clear_difference_has_an_interval_that_excludes_zero() -> None:
    a = [1] * 40 + [0] * 60
    b = [0] * 100
    d = paired_bootstrap(a, b)
    assert (d.n, d.a, d.b, d.diff, d.wins, d.losses) == (100, 0.4, 0.0, 0.4, 40, 0)
    assert 0.29 < d.low < 0.4 < d.high < 0.51 and d.excludes_zero
    assert "n=100" in str(d) and "+40 / -0" in str(d)


def test_pairing_cancels_the_questions_both_get_right() -> None:
    # 50 right by both, 3 only by a, 2 only by b: a small difference, interval across zero.
    a = [1] * 50 + [1] * 3 + [0] * 2 + [0] * 45
    b = [1] * 50 + [0] * 3 + [1] * 2 + [0] * 45
    d = paired_bootstrap(a, b)
    assert d.diff == pytest.approx(0.01) and d.low < 0 < d.high and not d.excludes_zero


def test_the_same_seed_gives_the_same_interval_and_bad_input_is_refused() -> None:
    a, b = [1, 0, 1, 1, 0, 1], [0, 0, 1, 0, 0, 1]
    assert paired_bootstrap(a, b) == paired_bootstrap(a, b)
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap([], [])


def test_pairs_by_id_use_only_the_questions_both_have() -> None:
    d = paired_by_id({"q1": 1.0, "q2": 1.0, "q3": 0.0}, {"q2": 0.0, "q3": 0.0, "q4": 1.0})
    assert (d.n, d.a, d.b) == (2, 0.5, 0.0)


def test_two_runs_compare_per_class_on_the_questions_both_ran() -> None:
    a = [{"id": f"c{i}", "class": "parallelizable", "em": 1.0} for i in range(4)]
    a += [{"id": f"b{i}", "class": "sequential", "em": float(i == 0)} for i in range(4)]
    b = [{"id": f"c{i}", "class": "parallelizable", "em": 0.0} for i in range(3)]  # c3 not run
    b += [{"id": f"b{i}", "class": "sequential", "em": 0.0} for i in range(4)]
    table = paired_by_class(a, b)
    assert set(table) == {"parallelizable", "sequential", "all"}
    assert (table["parallelizable"].n, table["parallelizable"].diff) == (3, 1.0)
    assert (table["sequential"].n, table["sequential"].wins) == (4, 1)
    assert table["all"].n == 7


def test_a_stored_difference_reads_back_and_writes_its_interval() -> None:
    stored = {
        "n": 4,
        "a": 0.5,
        "b": 0.25,
        "diff": 0.25,
        "low": -0.25,
        "high": 0.75,
        "wins": 2,
        "losses": 1,
    }
    d = PairedDifference.from_dict(stored)  # files from before "level" was stored
    assert d.level == 0.95 and not d.excludes_zero
    assert d.interval() == "+0.250 [-0.250, +0.750] (95% paired bootstrap, n=4, +2 / -1)"
    assert d.interval(counts=False, mark_zero=True) == (
        "+0.250 [-0.250, +0.750] (95% paired bootstrap, n=4, includes zero)"
    )
    assert str(d) == f"0.500 vs 0.250: {d.interval()}"


def test_a_ratio_of_means_has_a_paired_interval_around_it() -> None:
    from lab.paired import PairedRatio, paired_ratio, ratio_by_class

    a = [2, 2, 3, 2, 2, 1, 2, 2, 3, 2] * 10  # fewer calls on every question but a few
    b = [3, 3, 3, 3, 4, 2, 3, 3, 3, 3] * 10
    r = paired_ratio(a, b)
    assert r.n == 100 and r.ratio == sum(a) / sum(b)
    assert r.low < r.ratio < r.high < 1.0
    assert (
        r.interval() == f"{r.ratio:.2f}x [{r.low:.2f}, {r.high:.2f}] (95% paired bootstrap, n=100)"
    )
    assert PairedRatio.from_dict(r.__dict__) == r and paired_ratio(a, b) == r  # seeded
    same = paired_ratio([2] * 50, [2] * 50)
    assert same.low == same.ratio == same.high == 1.0
    with pytest.raises(ValueError, match="sum to zero"):
        paired_ratio([1, 2], [0, 0])
    rows_a = [{"id": i, "class": "x" if i % 2 else "y", "turns": 1} for i in range(20)]
    rows_b = [{"id": i, "class": "x" if i % 2 else "y", "turns": 2} for i in range(20)]
    by = ratio_by_class(rows_a, rows_b, "turns")
    assert set(by) == {"x", "y", "all"} and by["all"].ratio == 0.5 and by["x"].n == 10
    assert ratio_by_class(rows_a, [{**r, "turns": 0} for r in rows_b], "turns") == {}
