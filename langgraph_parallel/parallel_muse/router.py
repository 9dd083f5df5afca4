"""The ParallelMuse router: score finished trajectories, fork at their most uncertain steps.

The router is the hub of the graph: it starts the initial rollouts, runs the branching rounds
(one ``Send("rollout", {"branch": Branch})`` per sample) and, once the budget or the rounds are
used up, sends the trajectories to ``report`` (one ``Send`` per distinct report,
:func:`plan_reports`), or straight to ``aggregate`` when no report is needed. Planning is pure:
:func:`plan_branches` and :func:`plan_reports`.

Budget accounting: every ``Send("rollout")`` is one trajectory and counts against ``budget``,
whatever it produces. A round forks ``top_k_steps`` points with ``samples_per_step`` branches
each, the most uncertain point first; if the budget runs out mid-round, the less uncertain points
get fewer (or no) samples. Whatever budget is left after the last round (or when no step is left
to fork) goes to fresh full rollouts, sent together with the last round's branches so the engine
decodes them in one batch.

Branch points start at step ``min_branch_step`` or later (default 0: any step; a fork at step 0
keeps only the prompt, so it is a fresh rollout, see :class:`MuseContext`). A trajectory with
nothing to fork from there leaves its budget to fresh rollouts, as above.

Multiple rounds: round ``r`` ranks the own steps of *all* trajectories so far (best-first search
over the tree), minus the points already forked, so a branch's new steps compete with the still
unforked steps of earlier trajectories.

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

from langgraph_parallel.agent.context import run_context
from langgraph_parallel.errors import clean_text
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.reduce import vote
from langgraph_parallel.parallel_muse.report import report_steps
from langgraph_parallel.parallel_muse.state import (
    Branch,
    ReportCopy,
    ReportTask,
    RolloutInput,
    Trajectory,
)
from langgraph_parallel.parallel_muse.uncertainty import BranchPoint, select_branch_points

MuseRoute = Literal["rollout", "report", "aggregate", "__end__"]

# Super-steps a node needs after the router (which runs with ``remaining_steps == r``; the run's
# last node needs ``r >= 1``): aggregate alone, report + aggregate, and a rollout round before.
_STEPS_TO_AGGREGATE = 2
_STEPS_TO_REDUCE = 3
_STEPS_TO_ROLL = 5


def fresh_branch(question: str, index: int, ctx: MuseContext, round_: int) -> Branch:
    """Return a full rollout from the question's first prompt, numbered ``index``."""
    return Branch(
        question=question,
        id=f"t{index}",
        index=index,
        parent=None,
        branch_step=None,
        round=round_,
        seed=ctx.seed + index,
        messages=[],
        steps=[],
    )


def fork(parent: Trajectory, step: int, index: int, ctx: MuseContext, round_: int) -> Branch:
    """Return a branch re-generating ``parent``'s step ``step`` from the messages before it."""
    cut = parent["steps"][step]["message_index"]
    return Branch(
        question=parent["question"],
        id=f"t{index}",
        index=index,
        parent=parent["id"],
        branch_step=step,
        round=round_,
        seed=ctx.seed + index,
        messages=list(parent["messages"][:cut]),
        steps=list(parent["steps"][:step]),
    )


def plan_branches(
    question: str,
    trajectories: Sequence[Trajectory],
    ctx: MuseContext,
    *,
    dispatched: int,
    rounds_done: int,
    used: Sequence[BranchPoint] = (),
) -> tuple[list[Branch], list[BranchPoint], int]:
    """Decide the next rollouts (module docstring has the rules).

    Args:
        question: The user question.
        trajectories: Every finished trajectory so far.
        ctx: Budget, rounds, region and mode.
        dispatched: Rollouts sent so far (the budget already spent).
        rounds_done: Branching rounds already run.
        used: Branch points already forked.

    Returns:
        ``(branches, points, rounds_done)``: the rollouts to send (none means: report), the
        branch points they fork, and the updated round count.
    """
    branching = min(ctx.rounds, ctx.top_k_steps, ctx.samples_per_step) > 0
    if dispatched == 0:
        count = ctx.initial_rollouts if branching else ctx.budget
        return [fresh_branch(question, i, ctx, 0) for i in range(count)], [], 0
    remaining = ctx.budget - dispatched
    branches: list[Branch] = []
    points: list[BranchPoint] = []
    if branching and rounds_done < ctx.rounds and remaining > 0:
        rounds_done += 1
        exclude = {(p["trajectory"], p["step"]) for p in used}
        by_id = {t["id"]: t for t in trajectories}
        picked = select_branch_points(trajectories, ctx.region, ctx.mode, ctx.top_k_steps,
                                      exclude=exclude, min_step=ctx.min_branch_step)  # fmt: skip
        for point in picked:
            samples = min(ctx.samples_per_step, remaining - len(branches))
            if samples <= 0:
                break
            points.append(point)
            for _ in range(samples):
                index = dispatched + len(branches)
                parent = by_id[point["trajectory"]]
                branches.append(fork(parent, point["step"], index, ctx, rounds_done))
    if not points or rounds_done >= ctx.rounds:
        for _ in range(remaining - len(branches)):
            branches.append(fresh_branch(question, dispatched + len(branches), ctx, rounds_done))
    return branches, points, rounds_done


def plan_reports(
    question: str, trajectories: Sequence[Trajectory], ctx: MuseContext
) -> list[ReportTask]:
    """Decide the report calls, one :class:`ReportTask` each, in trajectory order.

    ``ctx.reports`` picks them (see :class:`MuseContext`): with ``distinct`` and ``contested``,
    the first trajectory of each distinct report prompt (:func:`~.report.report_steps`, and
    the answer) is asked for and the others are listed in its ``copies``.
    """
    chosen = sorted(trajectories, key=lambda t: t["index"])
    if ctx.reports == "contested":
        # The analyst reads reports only when join="select" meets answers that differ once
        # normalised as vote() does (AggregateNode's own test); nothing else reads them.
        _, votes = vote(chosen, weighted=False)
        contested = ctx.join == "select" and len(votes) > 1
        chosen = [t for t in chosen if t["answer"]] if contested else []
    if ctx.reports == "all":
        return [ReportTask(question=question, trajectory=t) for t in chosen]
    tasks: dict[tuple[str, str | None], ReportTask] = {}
    for trajectory in chosen:
        # The answer too: a copy carries the source's text, whose failure stub names the answer.
        key = (report_steps(trajectory), trajectory["answer"])
        if key not in tasks:
            tasks[key] = ReportTask(question=question, trajectory=trajectory, copies=[])
            continue
        tasks[key]["copies"].append(
            ReportCopy(
                trajectory=trajectory["id"],
                index=trajectory["index"],
                answer=trajectory["answer"],
            )
        )
    return list(tasks.values())


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
        ctx = run_context(runtime, self.defaults)
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
            sends = [Send("rollout", RolloutInput(branch=b)) for b in branches]
            return Command(update=update, goto=sends)
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
