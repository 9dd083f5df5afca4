"""One level of the serving experiment: every question once, N runs at once, on one server."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from lab.experiments.serving.serving_ceiling import question_tokens
from lab.experiments.serving.serving_metrics import (
    MetricsSampler,
    cache_counters,
    reset_prefix_cache,
)
from lab.experiments.serving.serving_replay import QUESTION

__all__ = ["ROW_KEYS", "run_level", "stop_reasons"]

ROW_KEYS = (
    "id",
    "answer",
    "stop_reason",
    "wall_s",
    "llm_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "em",
    "f1",
    "error",
)
"""What ``serving.json`` keeps of each question's row (plus ``start_s``/``end_s``)."""


def stop_reasons(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Count the rows by stop reason, the reason's detail after ``:`` left out."""
    return dict(
        sorted(Counter((r.get("stop_reason") or "none").split(":")[0] for r in rows).items())
    )


def run_level(
    graph: Any,
    questions: Sequence[Any],
    workers: int,
    base: str,
    on_done: Callable[[int], None] | None = None,
    epoch: float | None = None,
) -> dict[str, Any]:
    """Run every question once with ``workers`` concurrent runs; return the level's figures.

    Args:
        graph: The compiled graph every run invokes.
        questions: The questions, each run once.
        workers: Runs at once.
        base: The server's address (``/metrics``, ``/reset_prefix_cache``).
        on_done: Called with the number of questions finished after each one finishes.
        epoch: ``time.perf_counter()`` value the rows' ``start_s``/``end_s`` count from
            (default: the level's start), so a caller can place events among them.

    Returns:
        Throughput, latency percentiles, stop reasons, tokens per question
        (:func:`~.serving_ceiling.question_tokens`), the engine batch reached, the prefix-cache
        hit rate, and ``rows`` (:data:`ROW_KEYS`, ``start_s``, ``end_s``).
    """
    from langgraph_parallel.eval.harness import evaluate

    reset_prefix_cache(base)
    with MetricsSampler(base) as sampler:
        hits0, queries0 = cache_counters(sampler)
        begin = time.perf_counter()
        zero = begin if epoch is None else epoch

        def timed(question: Any) -> dict[str, Any]:
            start = time.perf_counter()
            QUESTION.set(question.id)  # the pool runs each task in the thread's own context
            row = evaluate(graph, "parallel-search", question)
            kept = {k: row[k] for k in ROW_KEYS}
            kept.update(start_s=round(start - zero, 3), end_s=round(time.perf_counter() - zero, 3))
            return kept

        rows = []
        with ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(timed, q) for q in questions]
            for future in as_completed(futures):
                rows.append(future.result())
                if on_done is not None:
                    on_done(len(rows))
        wall = time.perf_counter() - begin
        hits1, queries1 = cache_counters(sampler)
    latencies = sorted(r["wall_s"] for r in rows)
    return {
        "concurrency": workers,
        "questions": len(rows),
        "distinct_questions": len({r["id"] for r in rows}),
        "wall_s": round(wall, 1),
        "throughput_q_per_s": round(len(rows) / wall, 3),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
        "answered": sum(r["answer"] is not None for r in rows),
        "stop_reasons": stop_reasons(rows),
        "errors": sum(r["error"] is not None for r in rows),
        "em": round(statistics.mean(r["em"] for r in rows), 3),
        "f1": round(statistics.mean(r["f1"] for r in rows), 3),
        **question_tokens(rows),
        "max_running_requests": sampler.max_running,
        # A restarted server starts its counters again: no rate for a level that spans one.
        "prefix_cache_hit_rate": round((hits1 - hits0) / (queries1 - queries0), 3)
        if queries1 > queries0 and hits1 >= hits0
        else None,
        "rows": sorted(rows, key=lambda r: r["start_s"]),
    }
