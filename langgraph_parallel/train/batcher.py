"""Gathering concurrent generation requests of the rollouts into one ``generate`` batch.

Written here rather than taken from a library: the requests come from LangGraph's threads (one
per rollout) in the middle of the agent loop, and a batch must wait for exactly the rollouts
still running, which neither ``transformers`` nor TRL offers for a custom rollout function.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

__all__ = ["Batcher"]


class Batcher:
    """Collect concurrent generation requests and run them as one batch.

    A request waits at most ``window`` seconds for company; a batch starts at once when
    ``expected`` requests are waiting.
    """

    def __init__(self, run: Any, window: float = 0.05) -> None:
        self._run = run
        self._window = window
        self._pending: list[tuple[str, dict[str, Any], Future[Any]]] = []
        self._cond = threading.Condition()
        self._busy = False
        self.expected = 1
        self.exact = False

    def expect(self, n: int, *, exact: bool = False) -> None:
        """Wait for ``n`` requests; ``exact``: with no time window, as callers report finishing.

        In exact mode every batch holds one request of each caller still running, whatever
        the timing, so the same rollouts decode in the same batches on every run (a resumed
        training samples what an uninterrupted one samples).
        """
        with self._cond:
            self.expected, self.exact = max(1, n), exact
            self._cond.notify_all()

    def finished(self) -> None:
        """Note that one caller sends no more requests (exact mode waits for one fewer)."""
        with self._cond:
            self.expected = max(0, self.expected - 1)
            self._cond.notify_all()

    def submit(self, prompt: str, options: dict[str, Any]) -> Any:
        """Queue one request and return its result once its batch has run."""
        future: Future[Any] = Future()
        with self._cond:
            self._pending.append((prompt, options, future))
            self._cond.notify_all()
        self._drive()
        return future.result()

    def _drive(self) -> None:
        # Whichever caller finds the batcher idle becomes the leader and runs the batch;
        # the others wait for their futures.
        with self._cond:
            if self._busy:
                return
            self._busy = True
            window = None if self.exact else self._window
            self._cond.wait_for(lambda: len(self._pending) >= self.expected, window)
            # Rows in prompt order: a batch's composition, not the threads' timing, decides
            # which sample each prompt gets.
            batch = sorted(self._pending, key=lambda item: item[0])
            self._pending = []
        try:
            groups: dict[str, list[tuple[str, dict[str, Any], Future[Any]]]] = {}
            for item in batch:
                groups.setdefault(repr(sorted(item[1].items())), []).append(item)
            for items in groups.values():
                try:
                    outputs = self._run([p for p, _, _ in items], items[0][1])
                except Exception as exc:  # every caller of the batch sees the failure
                    for _, _, future in items:
                        future.set_exception(exc)
                    continue
                for (_, _, future), output in zip(items, outputs, strict=True):
                    future.set_result(output)
        finally:
            with self._cond:
                self._busy = False
                again = bool(self._pending)
            if again:
                self._drive()
