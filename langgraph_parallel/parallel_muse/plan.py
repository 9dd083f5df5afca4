"""ParallelMuse's planning, pure: which rollouts to start, which to fork, which to report.

:func:`plan_branches` decides the rollouts of the next round (:class:`~.state.Branch` payloads,
made by :func:`fresh_branch` and :func:`fork`), :func:`plan_reports` the report calls;
the router (:mod:`.router`) sends them. They read trajectories, never a graph, so the
ParallelMuse graph and the wrapper of any checkpointed agent (:mod:`.graph`) plan alike.

Budget accounting: every rollout is one trajectory and counts against ``budget``, whatever it
produces. A round forks ``top_k_steps`` points with ``samples_per_step`` branches each, the most
uncertain point first; if the budget runs out mid-round, the less uncertain points get fewer (or
no) samples. A round that finds fewer than ``top_k_steps`` points gives the points it found the
missing points' samples (one each in turn, the most uncertain first): a fork costs less than the
fresh rollout that would otherwise take its place (on 150 held-out HotpotQA questions under the
defaults of 2349794, questions whose round found one point cost 0.915x the agent tokens of 8
independent rollouts, those that found two 0.741x; ``benchmarks/parallel_muse/defaults/``).
Whatever budget is left after the last round (or when no step is left to fork) goes to fresh
full rollouts, sent together with the last round's branches so the engine decodes them in one
batch.

Branch points start at step ``min_branch_step`` or later (default 1; 0 allows any step, but a fork
at step 0 keeps only the prompt, so it is a fresh rollout, see :class:`~.context.MuseContext`). A
trajectory with nothing to fork from there leaves its budget to fresh rollouts, as above.

Distinct branches (``branch_candidates``): the router hands the planned rollouts to
:mod:`.candidates`, which draws their first steps and keeps the forks whose steps explore; the
plan here is the same, only fewer forks may be sent, and their budget goes as above.

Multiple rounds: round ``r`` ranks the own steps of *all* trajectories so far (best-first search
over the tree), minus the points already forked, so a branch's new steps compete with the still
unforked steps of earlier trajectories.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.reduce import vote
from langgraph_parallel.parallel_muse.report import report_steps
from langgraph_parallel.parallel_muse.state import Branch, ReportCopy, ReportTask, Trajectory
from langgraph_parallel.parallel_muse.uncertainty import BranchPoint, select_branch_points

__all__ = ["fills_with_fresh", "fork", "fresh_branch", "plan_branches", "plan_reports", "shares"]


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
        picked = select_branch_points(
            trajectories,
            ctx.region,
            ctx.mode,
            ctx.top_k_steps,
            exclude=exclude,
            min_step=ctx.min_branch_step,
        )
        quota = min(ctx.top_k_steps * ctx.samples_per_step, remaining)
        split = shares(quota, len(picked), ctx.samples_per_step)
        for point, samples in zip(picked, split, strict=True):
            if samples <= 0:
                break
            points.append(point)
            for _ in range(samples):
                index = dispatched + len(branches)
                parent = by_id[point["trajectory"]]
                branches.append(fork(parent, point["step"], index, ctx, rounds_done))
    if fills_with_fresh(ctx, points, rounds_done):
        for _ in range(remaining - len(branches)):
            branches.append(fresh_branch(question, dispatched + len(branches), ctx, rounds_done))
    return branches, points, rounds_done


def fills_with_fresh(ctx: MuseContext, points: Sequence[BranchPoint], rounds_done: int) -> bool:
    """Whether the budget a round leaves goes to fresh rollouts now (module docstring).

    So it does after the last round, and in a round that found no point to fork; otherwise
    it is left to the next round.
    """
    return not points or rounds_done >= ctx.rounds


def shares(quota: int, points: int, samples: int) -> list[int]:
    """Split a round's ``quota`` of forks over ``points`` branch points, most uncertain first.

    Each point gets ``samples`` in turn until the quota runs out; a quota larger than
    ``points * samples`` (the round found fewer points than it looked for) is dealt out one
    more each, the most uncertain point first.
    """
    out = []
    left = quota
    for _ in range(points):
        out.append(min(samples, left))
        left -= out[-1]
    for index in range(left if points else 0):
        out[index % points] += 1
    return out


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
