"""Where one question's time goes: its engine requests, its searches, and a web search's wait.

What ``bench run latency-policies`` (:mod:`.policies`) records per question, kept apart from
the run itself so that each part is tested with fakes:

- :class:`QuestionClock`: a question's engine requests and searches, each timed. A run sets it
  as the current clock (:func:`timing`) in the thread that invokes the graph; LangGraph runs
  every node in a copy of that thread's context, so the engine requests its ``think`` nodes
  submit find it there (:func:`watch_engine`) whatever else runs at the same time.
- :func:`watch_engine`: wraps one engine worker's ``submit`` so that each request's final
  ``vllm.RequestOutput`` is read into the clock: its time from submit to result, and vLLM's
  own per-request timestamps (``RequestOutput.metrics``, engine-core clock: queued, scheduled,
  first token, last token), which split it into queue, prefill and decode. They are filled
  only when the engine logs stats (``disable_log_stats=False``).
- :class:`EngineSteps`: a vLLM stat logger (``StatLoggerBase``'s ``record``) added to a
  running engine's logger manager: the engine steps that produced tokens and, per step, the
  n-gram drafter's proposals and how many of them the model accepted
  (``SchedulerStats.spec_decoding_stats``). Per engine, not per request: one question at a
  time on an engine, its deltas are that question's.
- :class:`TimedSearcher`: a searcher that times each ``batch_search`` into one clock (one
  per question: the search pool's threads do not carry the question's context).
- :class:`WebLatencySearcher`: the bundled index answering as a web search does, after a
  seeded 0.5-1.5 s a query; the queries of one call are searched at once, as
  :class:`~langgraph_parallel.retrieval.tavily.TavilySearcher` does, so a call waits for its
  slowest query.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.search import Searcher

__all__ = [
    "EngineSteps",
    "QuestionClock",
    "TimedSearcher",
    "WebLatencySearcher",
    "request_times",
    "timing",
    "watch_engine",
]

_CLOCK: contextvars.ContextVar[QuestionClock | None] = contextvars.ContextVar(
    "latency_question_clock", default=None
)


@dataclass
class QuestionClock:
    """One question's engine requests and searches, as they finish (thread-safe).

    Attributes:
        requests: Per engine request: ``total_s`` (submit to result), ``queue_s``,
            ``prefill_s``, ``decode_s`` (vLLM's timestamps; 0 when it logs none),
            ``prompt_tokens``, ``cached_tokens``, ``generated_tokens``.
        searches: Per ``batch_search`` call: ``queries`` and ``s``.
        tokens: Keep each request's token ids too (``prompt_ids``, ``output_ids``).
    """

    requests: list[dict[str, Any]] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)
    tokens: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_request(self, times: dict[str, Any]) -> None:
        """Record one finished engine request."""
        with self._lock:
            self.requests.append(times)

    def add_search(self, queries: int, seconds: float) -> None:
        """Record one ``batch_search`` call of ``queries`` queries."""
        with self._lock:
            self.searches.append({"queries": queries, "s": seconds})

    def split(self, wall_s: float) -> dict[str, float]:
        """Return the question's time by phase: engine parts, search and the graph's rest.

        ``graph_s`` is what is left of ``wall_s`` outside the engine requests and the
        searches (the graph, prompt rendering, parsing); ``engine_other_s`` is the part of the
        requests' time vLLM's timestamps do not cover (the frontend, its queue, the IPC).
        """
        with self._lock:
            requests, searches = list(self.requests), list(self.searches)
        engine = sum(r["total_s"] for r in requests)
        search = sum(s["s"] for s in searches)
        parts = {k: sum(r[k] for r in requests) for k in ("queue_s", "prefill_s", "decode_s")}
        return {
            "engine_s": round(engine, 4),
            **{k: round(v, 4) for k, v in parts.items()},
            "engine_other_s": round(engine - sum(parts.values()), 4),
            "search_s": round(search, 4),
            "search_calls": len(searches),
            "graph_s": round(wall_s - engine - search, 4),
        }


@contextmanager
def timing(clock: QuestionClock) -> Iterator[QuestionClock]:
    """Make ``clock`` the current question's clock in this thread's context while inside."""
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def request_times(output: Any, total_s: float, *, tokens: bool = False) -> dict[str, Any]:
    """Read one final ``vllm.RequestOutput`` into a clock's request record (see ``requests``).

    With ``tokens``, the record also holds the prompt's and the reply's token ids
    (``prompt_ids``, ``output_ids``): what the drafter could copy from, and what it had to
    guess (:mod:`.drafts` replays them).
    """
    stats = getattr(output, "metrics", None)
    queued = getattr(stats, "queued_ts", 0.0) or 0.0
    scheduled = getattr(stats, "scheduled_ts", 0.0) or 0.0
    first = getattr(stats, "first_token_ts", 0.0) or 0.0
    last = getattr(stats, "last_token_ts", 0.0) or 0.0
    timed = bool(queued and scheduled and first and last)
    completion = output.outputs[0] if output.outputs else None
    record = {
        "total_s": round(total_s, 4),
        "queue_s": round(scheduled - queued, 4) if timed else 0.0,
        "prefill_s": round(first - scheduled, 4) if timed else 0.0,
        "decode_s": round(last - first, 4) if timed else 0.0,
        "prompt_tokens": len(output.prompt_token_ids or []),
        "cached_tokens": int(output.num_cached_tokens or 0),
        "generated_tokens": len(completion.token_ids) if completion is not None else 0,
    }
    if tokens:
        record["prompt_ids"] = list(output.prompt_token_ids or [])
        record["output_ids"] = list(completion.token_ids) if completion is not None else []
    return record


def watch_engine(worker: Any, clock: Callable[[], float] = time.perf_counter) -> None:
    """Time every request ``worker`` serves into the clock current where it was submitted.

    A clock whose ``tokens`` is set also gets each request's token ids (:func:`request_times`).

    Idempotent; a request submitted outside :func:`timing` is not recorded. The caller gets a
    future of its own that resolves once the request is recorded, so a question's last
    request is in its clock when the graph returns (a done-callback of the engine's future
    could still be running then); cancelling it cancels the request.
    """
    if getattr(worker, "_latency_watched", False):
        return
    submit = worker.submit

    def timed_submit(prompt_token_ids: list[int], params: Any) -> Any:
        owner = _CLOCK.get()
        begin = clock()
        future = submit(prompt_token_ids, params)
        if owner is None:
            return future
        outer: Future[Any] = Future()

        def done(finished: Future[Any]) -> None:
            if outer.done():  # the caller cancelled it
                return
            if finished.cancelled():
                outer.cancel()
            elif (error := finished.exception()) is not None:
                outer.set_exception(error)
            else:
                times = request_times(finished.result(), clock() - begin, tokens=owner.tokens)
                owner.add_request(times)
                outer.set_result(finished.result())

        outer.add_done_callback(lambda o: future.cancel() if o.cancelled() else None)
        future.add_done_callback(done)
        return outer

    worker.submit = timed_submit
    worker._latency_watched = True


@dataclass
class EngineSteps:
    """A stat logger counting an engine's steps and its speculative drafts (module docstring).

    Add it to a running ``AsyncLLM`` with :meth:`attach`. ``record`` runs on the engine's
    output loop; :meth:`snapshot` reads the counters from any thread.

    Attributes:
        steps: Engine steps that produced tokens (a prefill's last chunk, a decode step).
        generated: Tokens they produced.
        drafts: Requests' drafts proposed by the drafter (one per request per step).
        draft_tokens: Draft tokens proposed (after the grammar's rejections).
        accepted: Draft tokens the model accepted.
    """

    steps: int = 0
    generated: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(
        self,
        scheduler_stats: Any,
        iteration_stats: Any,
        mm_cache_stats: Any = None,
        engine_idx: int = 0,
    ) -> None:
        """Add one engine output's counters (vLLM's ``StatLoggerBase.record``)."""
        generated = int(getattr(iteration_stats, "num_generation_tokens", 0) or 0)
        spec = getattr(scheduler_stats, "spec_decoding_stats", None)
        with self._lock:
            if generated:
                self.steps += 1
                self.generated += generated
            if spec is not None:
                self.drafts += int(spec.num_drafts)
                self.draft_tokens += int(spec.num_draft_tokens)
                self.accepted += int(spec.num_accepted_tokens)

    def record_sleep_state(self, is_awake: int = 0, level: int = 0) -> None:
        """Record nothing (a method of vLLM's logger interface)."""

    def log(self) -> None:
        """Log nothing (this counter only counts)."""

    def log_engine_initialized(self) -> None:
        """Log nothing at the engine's start."""

    def snapshot(self) -> dict[str, int]:
        """Return the counters now (subtract two snapshots for what happened between)."""
        with self._lock:
            return {
                "steps": self.steps,
                "generated": self.generated,
                "drafts": self.drafts,
                "draft_tokens": self.draft_tokens,
                "accepted": self.accepted,
            }

    @staticmethod
    def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        """Return ``after - before``, counter by counter."""
        return {key: after[key] - before.get(key, 0) for key in after}

    @classmethod
    def attach(cls, engine: Any) -> EngineSteps:
        """Add a new counter to a running ``AsyncLLM``'s logger manager and return it.

        Raises:
            RuntimeError: The engine logs no stats (started with ``disable_log_stats``).
        """
        manager = getattr(engine, "logger_manager", None)
        if manager is None:
            raise RuntimeError("the engine logs no stats: start it with disable_log_stats=False")
        counter = cls()
        manager.stat_loggers.append(counter)
        return counter


class TimedSearcher:
    """A searcher timing each ``batch_search`` call into one :class:`QuestionClock`.

    Args:
        searcher: Any :class:`~langgraph_parallel.retrieval.search.Searcher`.
        clock: The question's clock.
    """

    def __init__(self, searcher: Searcher, clock: QuestionClock) -> None:
        self.searcher = searcher
        self.clock = clock

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search with the wrapped searcher; record the call's queries and seconds."""
        begin = time.perf_counter()
        try:
            return self.searcher.batch_search(queries, k)
        finally:
            self.clock.add_search(len(queries), time.perf_counter() - begin)


class WebLatencySearcher:
    """A searcher that answers after a web search's wait (module docstring).

    Each query waits ``low + (high - low) * u`` seconds, ``u`` uniform and drawn from the query
    text and ``seed``: the same query waits the same in every run, whichever policy sends it
    and whatever runs beside it. The queries of one call wait at once (the call waits for its
    slowest), as a web searcher's requests in flight do.

    Args:
        searcher: The searcher that finds the passages (the bundled index).
        low: Shortest wait of a query, in seconds.
        high: Longest wait.
        seed: Seed of the waits.
        sleep: Called with each call's wait (tests pass a recorder).
    """

    def __init__(
        self,
        searcher: Searcher,
        *,
        low: float = 0.5,
        high: float = 1.5,
        seed: int = 0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 <= low <= high:
            raise ValueError(f"need 0 <= low <= high (got {low}, {high})")
        self.searcher = searcher
        self.low, self.high, self.seed = low, high, seed
        self._sleep = sleep

    def wait_of(self, query: str) -> float:
        """Return the seconds ``query`` waits."""
        u = random.Random(f"{self.seed}\0{query}").random()
        return self.low + (self.high - self.low) * u

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Wait for the slowest query of the call, then return the wrapped searcher's results."""
        waits = [self.wait_of(q) for q in queries if q.strip()]
        if waits:
            self._sleep(max(waits))
        return self.searcher.batch_search(queries, k)
