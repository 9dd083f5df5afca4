"""Token accounting of one ParallelMuse run that cannot flatter partial rollouts.

Partial rollout saves work only where a branch re-uses its parent's prefix; the engine's prefix
cache decides how much of that prefix is actually not recomputed. So every figure comes from
what the engine reported per call (``usage`` of each step, ``report_*`` / ``aggregate_*``
counters), never from an estimate of what was shared:

- **agent** (the rollouts): prompt tokens, the part of them served from the prefix cache, the
  uncached rest (prefill actually computed) and generated tokens, summed over every model call
  of every trajectory (a fork's counters hold its own calls only, so an inherited step counts
  once, in the trajectory that generated it).
  ``agent_cost`` = uncached prefill + generated: the headline of the paper's comparison.
- **regions**: generated tokens inside the reasoning / exploration / answer regions of the
  trajectories' own steps (:func:`~.uncertainty.token_regions`; ``None`` when the model gave no
  logprobs, so a count is never guessed from characters).
- **reduction** (reports and the analyst): the same four figures, kept apart from the agent, so a
  judge of another model (``create_parallel_muse_graph(..., model=...)``) is costed on its own.
- **shape**: trajectories, forks, model steps per trajectory (inherited ones included: the
  length a single rollout would have had), and the first fork's step (``first_branch_step``:
  a fork at step 0 shares only the question's prompt, which independent rollouts share too),
  which the saving depends on; ``forks_repeating_parent``: the forks whose first own step is
  the action their parent took there (:func:`~.distinct.repeats_parent`: same search, its
  sub-queries normalised, or the same answer), which explore nothing new at the fork.
- **agent cost per step**: ``agent_cost`` over the steps of all trajectories (inherited ones
  included). A fork's continuation can run longer or shorter than a fresh rollout would have;
  this ratio separates what the shared prefixes save from what the trajectories' lengths add.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph_parallel.parallel_muse.distinct import repeats_parent
from langgraph_parallel.parallel_muse.regions import REGION_NAMES
from langgraph_parallel.parallel_muse.uncertainty import token_regions

__all__ = ["COST_KEYS", "muse_costs"]


COST_KEYS: tuple[str, ...] = (
    "agent_prompt_tokens",
    "agent_cached_prefill",
    "agent_uncached_prefill",
    "agent_generated",
    "agent_cost",
    *(f"{region}_tokens" for region in REGION_NAMES),
    "reduction_calls",
    "reduction_prompt_tokens",
    "reduction_cached_prefill",
    "reduction_uncached_prefill",
    "reduction_generated",
    "reduction_cost",
    "trajectories",
    "forks",
    "forks_repeating_parent",
    "first_branch_step",
    "steps_per_trajectory",
    "agent_cost_per_step",
)
"""Keys of :func:`muse_costs`, in table order."""


def muse_costs(output: Mapping[str, Any]) -> dict[str, float | None]:
    """Account the tokens of one ParallelMuse or independent-rollouts run (module docstring).

    Args:
        output: The graph's output (``trajectories`` with their steps, ``counters``).

    Returns:
        Every key of :data:`COST_KEYS`; region counts are ``None`` when some own step has text
        but no logprobs, ``first_branch_step`` without forks.
    """
    trajectories = list(output.get("trajectories") or [])
    counters = output.get("counters") or {}
    agent = _usage([counters])
    own = [s for t in trajectories for s in t["steps"] if s["origin"] == t["id"]]
    regions: dict[str, float | None] = dict.fromkeys(REGION_NAMES, None)
    if not any(step["text"] and not step["logprobs"] for step in own):
        spans = [token_regions(step["regions"], step["logprobs"]) for step in own]
        regions = {r: float(sum(len(t.get(r, [])) for t in spans)) for r in REGION_NAMES}
    reduction = _usage(
        {key: counters.get(f"{prefix}_{key}", 0) for key in _USAGE_KEYS}
        for prefix in ("report", "aggregate")
    )
    calls = counters.get("report_calls", 0) + counters.get("aggregate_calls", 0)
    lengths = [len(t["steps"]) for t in trajectories]
    by_id = {t["id"]: t for t in trajectories}
    return {
        **{f"agent_{key}": value for key, value in agent.items()},
        **{f"{region}_tokens": value for region, value in regions.items()},
        "reduction_calls": float(calls),
        **{f"reduction_{key}": value for key, value in reduction.items()},
        "trajectories": float(len(trajectories)),
        "forks": float(sum(t["parent"] is not None for t in trajectories)),
        "forks_repeating_parent": float(
            sum(repeats_parent(t, by_id[t["parent"]]) for t in trajectories if t["parent"] in by_id)
        ),
        "first_branch_step": min(
            (float(t["branch_step"]) for t in trajectories if t["parent"] is not None),
            default=None,
        ),
        "steps_per_trajectory": sum(lengths) / len(lengths) if lengths else 0.0,
        "agent_cost_per_step": agent["cost"] / sum(lengths) if sum(lengths) else None,
    }


_USAGE_KEYS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens")


def _usage(calls: Any) -> dict[str, float]:
    """Sum per-call usage into prompt, cached, uncached prefill, generated and their cost."""
    prompt = cached = generated = 0
    for usage in calls:
        prompt += int(usage.get("prompt_tokens") or 0)
        cached += int(usage.get("cached_prompt_tokens") or 0)
        generated += int(usage.get("completion_tokens") or 0)
    uncached = prompt - cached
    return {
        "prompt_tokens": float(prompt),
        "cached_prefill": float(cached),
        "uncached_prefill": float(uncached),
        "generated": float(generated),
        "cost": float(uncached + generated),
    }
