"""Benchmark fields of the ParallelMuse graphs: token accounting and every join on one run.

A ParallelMuse result row gets the accounting of
:func:`~langgraph_parallel.parallel_muse.accounting.muse_costs` and the EM of each way to pick an
answer from the *same* trajectories, so join modes are compared on identical rollouts:

- ``em_join_graph``: the answer the graph returned (its own ``join``);
- ``em_join_majority`` / ``em_join_weighted`` / ``em_join_evidence``: the votes of
  :func:`~langgraph_parallel.parallel_muse.reduce.vote` over the trajectories;
- ``em_single``: the first trajectory alone (``t0``, a full sampled rollout: what one rollout
  without ParallelMuse would have answered);
- ``em_any``: whether any trajectory's answer is right (the ceiling a perfect join reaches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_parallel.metrics import exact_match
from langgraph_parallel.parallel_muse.accounting import COST_KEYS, muse_costs
from langgraph_parallel.parallel_muse.reduce import supported, vote
from langgraph_parallel.parallel_muse.state import Trajectory
from langgraph_parallel.parallel_muse.tree import mermaid_tree
from langgraph_parallel.parallel_muse.uncertainty import answer_confidence

__all__ = ["JOIN_KEYS", "MUSE_KEYS", "muse_fields"]

JOIN_KEYS: tuple[str, ...] = (
    "em_join_graph",
    "em_join_majority",
    "em_join_weighted",
    "em_join_evidence",
    "em_single",
    "em_any",
)
MUSE_KEYS: tuple[str, ...] = (*JOIN_KEYS, *COST_KEYS)
"""Keys a ParallelMuse row adds; the summary averages them over the rows that have them."""


def muse_fields(state: Mapping[str, Any], answers: Sequence[str]) -> dict[str, Any]:
    """Return the :data:`MUSE_KEYS` of one run and its ``tree``, or ``{}`` without trajectories.

    Args:
        state: The graph's output.
        answers: The gold answers.

    Returns:
        The numbers, and ``tree``: the run as Mermaid
        (:func:`~langgraph_parallel.parallel_muse.tree.mermaid_tree`), for the report's trees.
    """
    trajectories = list(state.get("trajectories") or [])
    if not trajectories:
        return {}
    first = min(trajectories, key=lambda t: t["index"])
    fields: dict[str, float | None] = {
        "em_join_graph": exact_match(state.get("answer"), answers),
        "em_single": exact_match(first["answer"], answers),
        "em_any": max(exact_match(t["answer"], answers) for t in trajectories),
    }
    for join in ("majority", "weighted", "evidence"):
        chosen, _ = vote(trajectories, weighted=join == "weighted", evidence=join == "evidence")
        fields[f"em_join_{join}"] = exact_match(chosen["answer"] if chosen else None, answers)
    ordered = sorted(trajectories, key=lambda t: t["index"])
    return {
        **fields,
        **muse_costs(state),
        "tree": mermaid_tree(state),
        "join_inputs": [_join_input(t, answers) for t in ordered],
    }


def _join_input(trajectory: Trajectory, answers: Sequence[str]) -> dict[str, Any]:
    """Return what a join can read of one trajectory, and whether its answer is right.

    Kept in the row so that a new join can be scored on a finished run's trajectories without
    running them again.
    """
    last = trajectory["steps"][-1] if trajectory["steps"] else None
    return {
        "id": trajectory["id"],
        "parent": trajectory["parent"],
        "answer": trajectory["answer"],
        "em": exact_match(trajectory["answer"], answers),
        "confidence": answer_confidence(last) if last else None,
        "supported": supported(trajectory),
    }
