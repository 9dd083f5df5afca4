"""What the retrieval experiment measures of an index: gold recall, sub-query hits, latency."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.results import results_in
from langgraph_parallel.retrieval.batching import SearchBatcher

__all__ = ["KS", "latency", "recall", "sub_query_hits"]

KS = (1, 3, 10)


def recall(index: Any, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Return recall@k of gold titles, the question as the query (one batched call per 32)."""
    found: dict[int, list[float]] = {k: [] for k in KS}
    complete: dict[int, list[bool]] = {k: [] for k in KS}
    for start in range(0, len(questions), 32):
        chunk = questions[start : start + 32]
        hits = index.batch_search([q["question"] for q in chunk], max(KS))
        for q, passages in zip(chunk, hits, strict=True):
            gold = set(q["supporting_titles"])
            for k in KS:
                got = gold & {p.title for p in passages[:k]}
                found[k].append(len(got) / len(gold))
                complete[k].append(got == gold)
    out = {f"recall@{k}": round(statistics.mean(found[k]), 4) for k in KS}
    out |= {f"all@{k}": round(statistics.mean(complete[k]), 4) for k in KS}
    return out


def sub_query_hits(index: Any, results: Path) -> dict[str, Any]:
    """Return the share of a run's sub-queries with a gold page of their question in the top 1/3.

    Args:
        index: The index to search.
        results: A ``bench`` folder whose rows carry ``sub_query_gold`` (the agent's queries).
    """
    pairs = [
        (hit["query"], set(row["gold_found"]))
        for row in results_in(results)
        for hit in row["sub_query_gold"]
    ]
    found = index.batch_search([query for query, _ in pairs], 3)
    return {
        "sub_queries": len(pairs),
        **{
            f"hit@{k}": round(
                statistics.mean(
                    bool(gold & {p.title for p in passages[:k]})
                    for (_, gold), passages in zip(pairs, found, strict=True)
                ),
                4,
            )
            for k in (1, 3)
        },
    }


def latency(index: Any, texts: Sequence[str], n: int) -> dict[str, float]:
    """Return median seconds: one query; a fan-out of 4; 4 unbatched calls; one 4-query call.

    The fan-out is measured as the search node runs it: four threads (the ``Send`` branches)
    each submit one sub-query to a :class:`SearchBatcher` under one group key. ``texts`` needs
    ``4 * n`` queries: round ``i`` uses ``texts[4i:4i+4]`` and its first one alone.
    """
    texts = list(texts[: 4 * n])
    if len(texts) < 4 * n:
        raise SystemExit(f"latency needs {4 * n} queries, got {len(texts)}")
    one, fan, unbatched, batch = [], [], [], []
    with ThreadPoolExecutor(4) as branches, ThreadPoolExecutor(16) as pool:
        batcher = SearchBatcher(index, pool)
        for i in range(n):
            four = texts[4 * i : 4 * i + 4]
            start = time.perf_counter()
            index.batch_search([four[0]], 3)
            one.append(time.perf_counter() - start)
            start = time.perf_counter()
            branch = functools.partial(batcher.submit, k=3, group=f"fan-out-{i}", size=4)
            [future.result() for future in list(branches.map(branch, four))]
            fan.append(time.perf_counter() - start)
            start = time.perf_counter()
            list(branches.map(lambda q: index.batch_search([q], 3), four))
            unbatched.append(time.perf_counter() - start)
            start = time.perf_counter()
            index.batch_search(four, 3)
            batch.append(time.perf_counter() - start)
    one_s, fan_s = statistics.median(one), statistics.median(fan)
    return {
        "one_query_s": round(one_s, 4),
        "fan_out_4_s": round(fan_s, 4),
        "unbatched_4_s": round(statistics.median(unbatched), 4),
        "one_call_4_s": round(statistics.median(batch), 4),
        "fan_out_4_over_one": round(fan_s / one_s, 2),
    }
