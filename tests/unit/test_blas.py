"""A search's matrix products run on one BLAS thread, and the process gets its own count back.

The real count is read on the thread that set it: OpenBLAS 0.3.30 (numpy's) did not always
report it on another thread, though the products there ran on one thread (CPU time / wall
time of a long product: 1.0 inside, 2.0 after, on the 2-core CPU).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

from langgraph_parallel.retrieval import blas
from langgraph_parallel.retrieval.blas import one_blas_thread
from langgraph_parallel.retrieval.dense import CorpusIndex
from langgraph_parallel.retrieval.documents import Passage


def blas_threads() -> int:
    found = ThreadpoolController().select(user_api="blas").info()
    assert found, "numpy loaded no BLAS"
    return int(found[0]["num_threads"])


def test_one_thread_inside_and_the_callers_count_after() -> None:
    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == 2
        with one_blas_thread():
            assert blas_threads() == 1
            with one_blas_thread():  # nested, as an encoder called inside a search
                assert blas_threads() == 1
            assert blas_threads() == 1
        assert blas_threads() == 2
        with pytest.raises(RuntimeError), one_blas_thread():
            raise RuntimeError("a failed search")
        assert blas_threads() == 2


def test_callers_on_many_threads_set_and_give_back_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[tuple[str, str]] = []

    class Limit:
        def restore_original_limits(self) -> None:
            events.append(("restore", threading.current_thread().name))

    class Controller:
        def limit(self, *, limits: int, user_api: str) -> Limit:
            assert (limits, user_api) == (1, "blas")
            events.append(("limit", threading.current_thread().name))
            return Limit()

    monkeypatch.setattr(blas, "_controller", Controller())

    def search(_: int) -> None:
        with one_blas_thread():
            np.ones((64, 64), dtype=np.float32) @ np.ones((64, 8), dtype=np.float32)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(search, range(32)))
    # Each block's limit and restore are neighbours, on one thread: no block set the count
    # while another was inside, and none gave it back on a thread that did not set it.
    pairs = list(zip(events[::2], events[1::2], strict=True))
    assert len(pairs) == 32
    assert all(a[0] == "limit" and b == ("restore", a[1]) for a, b in pairs)


def test_the_exact_scan_runs_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    class Fixed:
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.2, 0.0]] * len(texts)

    docs = np.eye(3, dtype=np.float32)
    index = CorpusIndex([Passage(f"p{i}", f"T{i}", "x") for i in range(3)], docs, Fixed())
    seen: list[int] = []
    partition = np.partition

    def reading(*args: object, **kwargs: object) -> object:
        seen.append(blas_threads())  # the cut of each query's column, after its product
        return partition(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(np, "partition", reading)
    assert [j for j, _ in index.ranked(["q"], 2)[0]] == [0, 1]
    assert seen == [1]
