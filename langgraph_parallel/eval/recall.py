"""Gold-page recall of a run's searches: whether the agent found the pages the answer needs.

A benchmark row with EM 0 is either a search failure (no sub-query retrieved a gold supporting
page) or a reading failure (the pages were retrieved and the model still answered wrong); these
fields tell the two apart. Titles are compared after folding case and whitespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["RECALL_KEYS", "gold_recall", "run_searches"]

RECALL_KEYS: tuple[str, ...] = ("recall", "all_gold", "sub_query_hits")
"""Row fields averaged over the questions that have gold titles (``None`` elsewhere)."""


def _key(title: str) -> str:
    return " ".join(str(title).split()).casefold()


def run_searches(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every sub-query result of a finished graph run, in order.

    ParallelSearch and the baselines keep them in ``search_results``; ParallelMuse keeps each
    trajectory's own in ``trajectories[i]["search_results"]`` (tagged here with ``trajectory``:
    its index), since forked trajectories reuse turn numbers.
    """
    found = [dict(r) for r in state.get("search_results") or []]
    for trajectory in state.get("trajectories") or []:
        index = trajectory.get("index")
        found += [{**r, "trajectory": index} for r in trajectory.get("search_results") or []]
    return found


def gold_recall(
    searches: Iterable[Mapping[str, Any]], gold_titles: Sequence[str]
) -> dict[str, Any]:
    """Score a run's searches against the question's gold supporting titles.

    Args:
        searches: Sub-query results with ``turn``, ``query`` and ``titles`` (the retrieved
            passages' titles), as in :func:`run_searches`.
        gold_titles: The question's gold supporting titles (empty when the dataset has none).

    Returns:
        ``recall``: share of gold titles retrieved by any sub-query; ``all_gold``: 1.0 if all
        were, else 0.0; ``sub_query_hits``: share of sub-queries that retrieved at least one gold
        title (``None`` when there was no sub-query); all three are ``None`` without gold titles.
        ``gold_found``: each gold title -> the first turn that retrieved it (``None``: never).
        ``sub_query_gold``: per sub-query, its ``turn``, ``query`` (and ``trajectory`` when
        given) and the gold titles it retrieved.
    """
    gold = {_key(t): str(t) for t in gold_titles}
    first_turn: dict[str, int | None] = dict.fromkeys(gold.values())
    per_query: list[dict[str, Any]] = []
    for result in searches:
        hit = [gold[k] for k in dict.fromkeys(map(_key, result.get("titles") or [])) if k in gold]
        turn = int(result.get("turn") or 0)
        entry: dict[str, Any] = {"turn": turn, "query": str(result.get("query") or "")}
        if result.get("trajectory") is not None:
            entry["trajectory"] = result["trajectory"]
        per_query.append({**entry, "gold": hit})
        for title in hit:
            seen = first_turn[title]
            first_turn[title] = turn if seen is None else min(seen, turn)
    out: dict[str, Any] = {"gold_found": first_turn, "sub_query_gold": per_query}
    if not gold:
        return {**out, **dict.fromkeys(RECALL_KEYS)}
    found = sum(turn is not None for turn in first_turn.values())
    hits = sum(bool(entry["gold"]) for entry in per_query)
    return {
        **out,
        "recall": found / len(gold),
        "all_gold": float(found == len(gold)),
        "sub_query_hits": hits / len(per_query) if per_query else None,
    }
