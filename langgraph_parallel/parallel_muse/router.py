"""The ParallelMuse router: score finished trajectories, fork at their most uncertain steps.

The router is the hub of the graph: it starts the initial rollouts, runs the branching rounds
(one ``Send("rollout", {"branch": Branch})`` per sample) and, once the budget or the rounds are
used up, sends the trajectories to ``report`` (one ``Send`` per distinct report), or straight to
``aggregate`` when no report is needed. What to send is planned by :mod:`.plan` (budget, rounds,
branch points and report calls are explained there); how a rollout is sent is
:meth:`RouterNode.rollout_sends`, which the wrapper of any checkpointed agent overrides
(:mod:`.agent_nodes`).

Recursion limit: each round costs two super-steps (``rollout``, ``router``) and the reduction
two more (``report``, ``aggregate``; one without reports). When the run's ``remaining_steps``
cannot fit another round, the planned rollouts are dropped and the trajectories so far are
reduced, with the reason in ``limit`` (``aggregate`` records it); with no room for the reduction
either, the router answers by majority vote itself and ends the run. Either way no
``GraphRecursionError`` reaches the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from langgraph_parallel.errors import clean_text
from langgraph_parallel.parallel_muse.context import MuseContext, muse_context
from langgraph_parallel.parallel_muse.plan import plan_branches, plan_reports
from langgraph_parallel.parallel_muse.reduce import vote
from langgraph_parallel.parallel_muse.state import Branch, RolloutInput, Trajectory

__all__ = ["MuseRoute", "RouterNode"]

MuseRoute = Literal["rollout", "report", "aggregate", "__end__"]

# Super-steps a node needs after the router (which runs with ``remaining_steps == r``; the run's
# last node needs ``r >= 1``): aggregate alone, report + aggregate, and a rollout round before.
_STEPS_TO_AGGREGATE = 2
_STEPS_TO_REDUCE = 3
_STEPS_TO_ROLL = 5


class RouterNode:
    """Start rollouts, fork trajectories, then send them to ``report`` (or ``aggregate``).

    State keys read: ``question``, ``trajectories``, ``dispatched``, ``round``,
    ``branch_points``, ``remaining_steps``; written: ``dispatched``, ``round``,
    ``branch_points`` (new points only), ``limit`` (and ``answer``, ``stop_reason`` and
    ``aggregation`` when it must end the run itself; see the module docstring).

    Args:
        defaults: Settings used when the run passes no :class:`MuseContext`.
    """

    def __init__(self, defaults: MuseContext) -> None:
        self.defaults = defaults

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Command[MuseRoute]:
        """Route to ``rollout``, ``report`` or ``aggregate`` (module docstring has the rules)."""
        ctx = muse_context(runtime, self.defaults)
        trajectories = list(state.get("trajectories") or [])
        dispatched = int(state.get("dispatched") or 0)
        branches, points, rounds_done = plan_branches(
            clean_text(state["question"]),
            trajectories,
            ctx,
            dispatched=dispatched,
            rounds_done=int(state.get("round") or 0),
            used=state.get("branch_points") or [],
        )
        update: dict[str, Any] = {
            "dispatched": dispatched + len(branches),
            "round": rounds_done,
            "branch_points": points,
        }
        remaining = state.get("remaining_steps")
        if branches and (remaining is None or remaining >= _STEPS_TO_ROLL):
            return Command(update=update, goto=self.rollout_sends(branches, state))
        if branches:  # planned, but the recursion limit has no room for them
            update = {
                "limit": f"recursion_limit: {len(branches)} planned rollouts not run; raise "
                "config['recursion_limit']"
            }
        tasks = plan_reports(clean_text(state["question"]), trajectories, ctx)
        needed = _STEPS_TO_REDUCE if tasks else _STEPS_TO_AGGREGATE
        if trajectories and (remaining is None or remaining >= needed):
            if not tasks:
                return Command(update=update, goto="aggregate")
            return Command(update=update, goto=[Send("report", task) for task in tasks])
        return Command(update=_end_here(trajectories, update.get("limit")), goto="__end__")

    def rollout_sends(self, branches: Sequence[Branch], state: Mapping[str, Any]) -> list[Send]:
        """Return one ``Send("rollout", ...)`` per planned branch (payload: the branch)."""
        return [Send("rollout", RolloutInput(branch=b)) for b in branches]


def _end_here(trajectories: Sequence[Trajectory], limit: str | None) -> dict[str, Any]:
    """Return the final update when no step is left for ``report`` and ``aggregate``."""
    limit = limit or "recursion_limit: no graph steps left for reports and aggregation"
    chosen, votes = vote(trajectories, weighted=False)
    record = {
        "join": "majority",
        "method": "majority",
        "votes": votes,
        "excluded": [t["id"] for t in trajectories if not t["answer"]],
        "fallback": limit,
        "chosen": chosen["id"] if chosen else None,
        "limit": limit,
    }
    return {
        "answer": chosen["answer"] if chosen else None,
        "stop_reason": "answered" if chosen else limit,
        "aggregation": record,
        "limit": limit,
        "counters": {},
    }
