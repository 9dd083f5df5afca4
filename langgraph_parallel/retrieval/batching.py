"""Join the one-query searches of a fan-out into one ``batch_search`` call.

LangGraph runs each ``Send("search", ...)`` branch on its own, so a fan-out of four sub-queries
makes four one-query calls; with a dense encoder behind them that is four forward passes (and
the encoder's lock runs them one after another). :class:`SearchBatcher` gathers the branches of
one fan-out, which share a group key and know the group's size, and searches them together:
one encoder pass, one dense matrix product, one BM25 pass.

Why written here: micro-batching libraries (uBatch, pybatcher) close a batch at a fixed size
or after a time window, so a lone query, or a fan-out narrower than the fixed size, waits for
the whole window. Here each fan-out is its own group whose size the fan-out knows, so a group
is searched the moment its last member arrives and a lone query never waits; that keyed
rendezvous is about forty lines.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.search import Searcher, checked_results

__all__ = ["SearchBatcher"]

_REMEMBERED = 4096  # closed groups kept, so a retried branch of one runs alone at once


@dataclass
class _Group:
    size: int
    items: list[tuple[int, str, Future[list[Passage]]]] = field(default_factory=list)
    full: threading.Event = field(default_factory=threading.Event)


class SearchBatcher:
    """Run the sub-queries of one fan-out as one ``batch_search`` call.

    A query submitted with a ``group`` key and ``size`` > 1 waits until ``size`` queries of the
    group (with the same ``k``) have arrived, or ``wait`` seconds after the first did (a graph
    run with ``max_concurrency`` below the fan-out width), then one call searches every query
    that arrived. A query without a group, or arriving after its group was searched (a retried
    branch), is searched alone at once. If the joined call raises, each query is searched
    alone, so one failing sub-query does not fail the others. What the searcher returns is
    checked (:func:`~langgraph_parallel.retrieval.search.checked_results`), with no fallback:
    until it has once returned passages the right way, a wrong answer fails every member with
    the same ``UserError`` (a wrong searcher); after that, with a ``TypeError`` each (a failing
    service, reported per sub-query).

    Args:
        searcher: Any :class:`~langgraph_parallel.retrieval.search.Searcher`.
        executor: Runs the searches (so the caller can stop waiting after a timeout).
        wait: Longest wait, in seconds, for the rest of a group.
    """

    def __init__(self, searcher: Searcher, executor: Executor, *, wait: float = 0.05) -> None:
        self.searcher = searcher
        self.executor = executor
        self.wait = wait
        self._lock = threading.Lock()
        self._open: dict[tuple[str, int], _Group] = {}
        self._closed: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._kept = False  # the searcher has returned passages the right way once

    def submit(
        self, query: str, k: int, *, group: str | None = None, size: int = 1, order: int = 0
    ) -> Future[list[Passage]]:
        """Return a future of the passages for ``query``.

        Args:
            query: The sub-query.
            k: Passages wanted.
            group: Key shared by the sub-queries of one fan-out (``None``: search alone).
            size: How many sub-queries the group has.
            order: Its place in the group: the joined call lists the group's queries in this
                order, not in the order their branches happened to arrive, so a run's calls
                do not depend on thread timing.
        """
        key = (group or "", k)
        with self._lock:
            alone = group is None or size <= 1 or key in self._closed
            if not alone:
                leader = key not in self._open
                batch = self._open.setdefault(key, _Group(size))
                future: Future[list[Passage]] = Future()
                batch.items.append((order, query, future))
                if len(batch.items) >= batch.size:
                    self._close(key)
                    batch.full.set()
        if alone:
            return self.executor.submit(self._search_one, query, k)
        if leader:
            self.executor.submit(self._run, key, batch)
        return future

    def _search_one(self, query: str, k: int) -> list[Passage]:
        return list(self._checked(self.searcher.batch_search([query], k), 1)[0])

    def _checked(self, results: object, queries: int) -> Sequence[Sequence[Passage]]:
        checked = checked_results(results, queries, self.searcher, kept=self._kept)
        self._kept = True
        return checked

    def _close(self, key: tuple[str, int]) -> None:
        """Mark a group searched (lock held): later members run alone."""
        self._open.pop(key, None)
        self._closed[key] = None
        while len(self._closed) > _REMEMBERED:
            self._closed.popitem(last=False)

    def _run(self, key: tuple[str, int], batch: _Group) -> None:
        batch.full.wait(self.wait)
        with self._lock:
            if self._open.get(key) is batch:
                self._close(key)  # timed out short of its size: search those that came
            # A member whose caller gave up (timeout -> cancel) is dropped here.
            ordered = sorted(batch.items, key=lambda item: item[0])
            items = [(q, f) for _, q, f in ordered if f.set_running_or_notify_cancel()]
        if not items:
            return
        try:
            results = self.searcher.batch_search([q for q, _ in items], key[1])
        except BaseException as exc:
            if len(items) == 1 or not isinstance(exc, Exception):  # e.g. KeyboardInterrupt
                for _, future in items:
                    future.set_exception(exc)
                return
            # One bad sub-query must not fail its siblings: search each alone, so every
            # branch gets its own result or its own error (and retries on its own).
            for query, future in items:
                _chain(self.executor.submit(self._search_one, query, key[1]), future)
            return
        try:
            checked = self._checked(results, len(items))
        except (UserError, TypeError) as exc:  # a broken searcher or answer: no fallback
            for _, future in items:
                future.set_exception(exc)
            return
        for (_, future), passages in zip(items, checked, strict=True):
            future.set_result(list(passages))


def _chain(source: Future[list[Passage]], target: Future[list[Passage]]) -> None:
    """Settle ``target`` with ``source``'s outcome when it is done."""

    def copy(done: Future[list[Passage]]) -> None:
        exc = done.exception()
        if exc is not None:
            target.set_exception(exc)
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)
