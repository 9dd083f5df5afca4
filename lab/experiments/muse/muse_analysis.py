"""ParallelMuse against independent rollouts on the same questions: means, ratios, best join."""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from lab.paired import paired_by_id
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.eval.summary import mean_present

__all__ = [
    "AGENT",
    "INDEPENDENT",
    "JOINS",
    "PARTIAL",
    "REDUCTION",
    "analyse",
    "by_first_branch",
    "paired",
]

AGENT = (
    "agent_uncached_prefill",
    "agent_generated",
    "agent_cost",
    "agent_cached_prefill",
    "reasoning_tokens",
    "exploration_tokens",
    "trajectories",
    "forks",
    "steps_per_trajectory",
    "agent_cost_per_step",
    "llm_calls",
    "wall_s",
)
REDUCTION = ("reduction_calls", "reduction_cost", "reduction_cached_prefill")
JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_single", "em_any")
RATIOS = (
    "agent_cost",
    "agent_cost_per_step",
    "agent_uncached_prefill",
    "agent_generated",
    "exploration_tokens",
    "reasoning_tokens",
    "reduction_cost",
    "wall_s",
)


def _per_step(row: dict[str, Any]) -> dict[str, Any]:
    # Rows written before the field get it from the same counts (cost over trajectories x
    # steps per trajectory = all steps).
    steps = (row.get("steps_per_trajectory") or 0) * (row.get("trajectories") or 0)
    if "agent_cost_per_step" in row or row.get("agent_cost") is None or not steps:
        return row
    return {**row, "agent_cost_per_step": row["agent_cost"] / steps}


_FORK = re.compile(r"\(fork of \S+ at step (\d+)\)")


def _first_branch(row: dict[str, Any]) -> dict[str, Any]:
    # Rows written before the field get it from their tree, whose fork leaves read
    # "(fork of tX at step k)" (parallel_muse/tree.py).
    if "first_branch_step" in row or "tree" not in row:
        return row
    steps = [int(k) for k in _FORK.findall(row["tree"])]
    return {**row, "first_branch_step": float(min(steps)) if steps else None}


def by_first_branch(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return the agent cost of partial over independent rollouts by the first fork's step.

    Apart for the questions whose first fork was at step 0 (it shares only the question's
    prompt) and at a later step.
    """
    independent = {r["id"]: r for r in rows if r["graph"] == INDEPENDENT}
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
        "step 0": [],
        "a later step": [],
    }
    for row in rows:
        step = row.get("first_branch_step")
        if row["graph"] == PARTIAL and row["id"] in independent and step is not None:
            groups["step 0" if step == 0 else "a later step"].append((row, independent[row["id"]]))
    return {
        name: {
            "n": len(pairs),
            "agent_cost": sum(p["agent_cost"] for p, _ in pairs)
            / sum(i["agent_cost"] for _, i in pairs)
            if pairs
            else None,
        }
        for name, pairs in groups.items()
    }


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Return per graph means, and partial over independent, on the questions both answered."""
    rows = [_first_branch(_per_step(r)) for r in rows]
    ids = {r["id"] for r in rows if r["graph"] == PARTIAL} & {
        r["id"] for r in rows if r["graph"] == INDEPENDENT
    }
    graphs: dict[str, dict[str, Any]] = {}
    for graph in (PARTIAL, INDEPENDENT):
        part = [r for r in rows if r["graph"] == graph and r["id"] in ids]
        means = {k: mean_present(part, k) for k in AGENT + REDUCTION + JOINS}
        graphs[graph] = {"n": len(part), **means}
    partial, independent = graphs[PARTIAL], graphs[INDEPENDENT]
    ratios = {
        k: partial[k] / independent[k] if partial[k] is not None and independent[k] else None
        for k in RATIOS
    }
    best = max(
        ("em_join_graph", "em_join_majority", "em_join_weighted"), key=lambda k: partial[k] or 0
    )
    single = partial["em_single"] or 0.0
    return {
        "graphs": graphs,
        "paired": paired([r for r in rows if r["id"] in ids]),
        "partial_over_independent": ratios,
        "by_first_branch": by_first_branch(rows),
        "best_join": {
            "join": best,
            "em": partial[best],
            "em_single": single,
            "relative_gain": (partial[best] - single) / single if single else None,
            "independent_same_join": independent[best],
        },
    }


def paired(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each join's EM against the single rollout and against the other system's same join.

    Keys ``"<graph> <join> - single"`` (the graph's own first rollout, on the same question)
    and ``"partial <join> - independent"``; values :class:`~.paired.PairedDifference` as dicts
    (95% paired bootstrap over the question ids both have a score for).
    """
    by: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        for key in JOINS:
            if r.get(key) is not None:
                by.setdefault((r["graph"], key), {})[r["id"]] = float(r[key])
    out: dict[str, dict[str, Any]] = {}
    for join in ("em_join_graph", "em_join_majority", "em_join_weighted", "em_any"):
        for graph in (PARTIAL, INDEPENDENT):
            scores, single = by.get((graph, join), {}), by.get((graph, "em_single"), {})
            if set(scores) & set(single):
                out[f"{graph} {join} - single"] = asdict(paired_by_id(scores, single))
        partial, independent = by.get((PARTIAL, join), {}), by.get((INDEPENDENT, join), {})
        if set(partial) & set(independent):
            out[f"partial {join} - independent"] = asdict(paired_by_id(partial, independent))
    return out
