"""SearchBatcher: the sub-queries of one fan-out are searched in one call, and only then."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval.batching import SearchBatcher
from tests.fakes import CountingSearcher


class Recording(CountingSearcher):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[list[str]] = []

    def batch_search(self, queries: Any, k: int = 3) -> Any:
        with self._lock:
            self.calls.append(list(queries))
        return super().batch_search(queries, k)


@pytest.fixture
def pool():
    with ThreadPoolExecutor(max_workers=8) as executor:
        yield executor


def submit_together(batcher: SearchBatcher, queries: list[str], group: str, size: int) -> list:
    """Submit from one thread per query, all released at once (as Send branches start)."""
    start, futures = threading.Barrier(len(queries)), {}

    def branch(query: str) -> None:
        start.wait()
        futures[query] = batcher.submit(query, 3, group=group, size=size)

    threads = [threading.Thread(target=branch, args=(q,)) for q in queries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [futures[q] for q in queries]


def test_a_full_group_is_one_call_and_each_branch_gets_its_own_passages(pool) -> None:
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=10.0)  # a full group never waits for this
    futures = submit_together(batcher, ["a", "b", "c", "d"], "g1", 4)
    results = [f.result(timeout=5) for f in futures]
    assert [r[0].title for r in results] == ["Title a", "Title b", "Title c", "Title d"]
    assert len(searcher.calls) == 1 and sorted(searcher.calls[0]) == ["a", "b", "c", "d"]


def test_a_lone_query_is_searched_at_once(pool) -> None:
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=10.0)
    assert batcher.submit("solo", 3).result(timeout=5)[0].title == "Title solo"
    assert batcher.submit("one", 3, group="g", size=1).result(timeout=5)[0].id == "one"
    assert searcher.calls == [["solo"], ["one"]]


def test_a_group_short_of_its_size_is_searched_after_the_wait_and_late_members_alone(pool):
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=0.05)
    started = time.perf_counter()
    futures = submit_together(batcher, ["a", "b"], "g", 3)  # the third never comes in time
    assert [f.result(timeout=5)[0].id for f in futures] == ["a", "b"]
    assert time.perf_counter() - started >= 0.05
    late = batcher.submit("c", 3, group="g", size=3)  # e.g. a retried branch
    assert late.result(timeout=5)[0].id == "c"
    assert [sorted(c) for c in searcher.calls] == [["a", "b"], ["c"]]


def test_other_groups_and_other_k_are_not_mixed(pool) -> None:
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=5.0)
    first = submit_together(batcher, ["a", "b"], "g1", 2)
    second = submit_together(batcher, ["c", "d"], "g2", 2)
    other_k = batcher.submit("e", 1, group="g2", size=2)  # same group key, another k
    batcher.submit("f", 1, group="g2", size=2)
    assert other_k.result(timeout=5)[0].id == "e"
    assert all(f.result(timeout=5) for f in first + second)
    assert sorted(map(sorted, searcher.calls)) == [["a", "b"], ["c", "d"], ["e", "f"]]


def test_a_caller_that_gave_up_is_dropped_from_its_group(pool) -> None:
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=0.2)
    gone, kept = (batcher.submit(q, 3, group="g", size=3) for q in ("gone", "kept"))
    assert gone.cancel()  # the search node's timeout fired before the group was searched
    assert kept.result(timeout=5)[0].id == "kept"
    assert searcher.calls == [["kept"]]


def test_a_failing_sub_query_does_not_fail_its_siblings(pool) -> None:
    searcher = Recording(fail=lambda q: RuntimeError(f"bad {q}") if q == "bad" else None)
    batcher = SearchBatcher(searcher, pool)
    bad, good = submit_together(batcher, ["bad", "good"], "g", 2)
    assert good.result(timeout=5)[0].id == "good"
    with pytest.raises(RuntimeError, match="bad bad"):
        bad.result(timeout=5)
    assert len(searcher.calls) == 3 and sorted(searcher.calls[1:]) == [["bad"], ["good"]]


def test_a_base_exception_reaches_every_member_without_a_fallback(pool) -> None:
    searcher = Recording(fail=lambda q: KeyboardInterrupt())  # type: ignore[arg-type,return-value]
    batcher = SearchBatcher(searcher, pool)
    for future in submit_together(batcher, ["a", "b"], "g", 2):
        with pytest.raises(KeyboardInterrupt):
            future.result(timeout=5)
    assert len(searcher.calls) == 1


def test_a_searcher_returning_the_wrong_number_of_lists_is_named(pool) -> None:
    class Short:
        def batch_search(self, queries: Any, k: int = 3) -> Any:
            return []

    batcher = SearchBatcher(Short(), pool)  # type: ignore[arg-type]
    for future in [*submit_together(batcher, ["a", "b"], "g", 2), batcher.submit("c", 3)]:
        with pytest.raises(UserError, match="returned 0 result lists for [12] quer.*Passage"):
            future.result(timeout=5)


def test_the_joined_call_lists_the_group_in_its_order_whatever_arrives_first(pool) -> None:
    searcher = Recording()
    batcher = SearchBatcher(searcher, pool, wait=10.0)
    futures = {}
    for order, query in reversed(list(enumerate(["a", "b", "c"]))):  # the last branch first
        futures[query] = batcher.submit(query, 3, group="g", size=3, order=order)
    assert [futures[q].result(timeout=5)[0].title for q in "abc"] == [
        "Title a",
        "Title b",
        "Title c",
    ]
    assert searcher.calls == [["a", "b", "c"]]
