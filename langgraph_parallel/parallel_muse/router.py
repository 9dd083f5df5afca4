"""The ParallelMuse router: score finished trajectories, fork at their most uncertain steps.

The router is the hub of the graph: it starts the initial rollouts, runs the branching rounds
(one ``Send("rollout", RolloutInput)`` per sample: a fork names the parent's thread and the
checkpoint before the forked step, a fresh rollout carries the agent's input) and, once the
budget or the rounds are used up, sends the trajectories to ``report`` (one ``Send`` per distinct
report), or straight to ``aggregate`` when no report is needed. What to send is planned by
:mod:`.plan` (budget, rounds, branch points and report calls are explained there); with
``branch_candidates`` set, the planned rollouts' first steps are drawn here first and only the
forks whose steps explore are sent (:mod:`.candidates`).

Recursion limit: each round costs two super-steps (``rollout``, ``router``) and the reduction
two more (``report``, ``aggregate``; one without reports). When the run's ``remaining_steps``
cannot fit another round, the planned rollouts are dropped and the trajectories so far are
reduced, with the reason in ``limit`` (``aggregate`` records it); with no room for the reduction
either, the router answers by majority vote itself and ends the run. Either way no
``GraphRecursionError`` reaches the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, Send

from langgraph_parallel.agent.chat import answer_message
from langgraph_parallel.agent.nodes import Body, DualNode, run_body
from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.errors import clean_text
from langgraph_parallel.parallel_muse.agent_nodes import AgentInput
from langgraph_parallel.parallel_muse.candidates import BranchSampler
from langgraph_parallel.parallel_muse.context import MuseContext, muse_context
from langgraph_parallel.parallel_muse.plan import fills_with_fresh, plan_branches, plan_reports
from langgraph_parallel.parallel_muse.reduce import vote
from langgraph_parallel.parallel_muse.state import (
    Branch,
    ForkSource,
    GivenStep,
    RolloutInput,
    Trajectory,
)
from langgraph_parallel.parallel_muse.uncertainty import BranchPoint

__all__ = ["MuseRoute", "RouterNode"]

MuseRoute = Literal["rollout", "report", "aggregate", "__end__"]

# Super-steps a node needs after the router (which runs with ``remaining_steps == r``; the run's
# last node needs ``r >= 1``): aggregate alone, report + aggregate, and a rollout round before.
_STEPS_TO_AGGREGATE = 2
_STEPS_TO_REDUCE = 3
_STEPS_TO_ROLL = 5


class RouterNode(DualNode):
    """Read the input, start rollouts, fork trajectories, then send them to ``report``.

    Its first call reads the run's input first (:class:`~.agent_nodes.AgentInput`): in the
    router, not a node of its own, so that a run's smallest ``recursion_limit`` that ends it
    with a state is the same as ever.

    State keys read: ``question``, ``trajectories``, ``dispatched``, ``round``,
    ``branch_points``, ``remaining_steps`` (and the input); written: ``dispatched``, ``round``,
    ``branch_points`` (new points only), ``limit`` (and ``answer``, ``stop_reason`` and
    ``aggregation`` when it must end the run itself; see the module docstring), and the input
    reader's keys.

    Args:
        defaults: Settings used when the run passes no :class:`MuseContext`.
        inputs: Reads the run's input.
        sampler: Draws the first steps of a round's rollouts when ``branch_candidates`` is
            set (distinct branches, :mod:`.candidates`); ``None`` (rollouts that are not the
            agent loop): every rollout samples its own.
    """

    def __init__(
        self, defaults: MuseContext, inputs: AgentInput, sampler: BranchSampler | None = None
    ) -> None:
        self.defaults = defaults
        self.inputs = inputs
        self.sampler = sampler

    def body(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[Command[MuseRoute]]:
        """Route to ``rollout``, ``report`` or ``aggregate`` (module docstring has the rules).

        A run on a thread whose last run finished (``stop_reason`` set) is a new question: the
        input is read again and the question's own keys start empty (the chat is kept).
        """
        started: dict[str, Any] = {}
        again = "thread_prefix" in state and state.get("stop_reason") is not None
        if "thread_prefix" not in state or again:  # the run's first call
            started = yield from self.inputs.body(state, runtime)
            state = {**state, **(_FRESH if again else {}), **started}
        routed = yield from self.routing(state, runtime)
        update = {**started, **(routed.update or {})}
        if again:
            for key, empty in _FRESH.items():
                value = update.get(key, empty)
                # Keys with reducers would add to the last question's: written whole instead.
                update[key] = Overwrite(value) if key in _REDUCED else value
        return Command(update=update, goto=routed.goto)

    def route(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Command[MuseRoute]:
        """Return the route and the router's own update (module docstring has the rules).

        Blocks on the draws of distinct branches, if any (:meth:`routing` is the node's own).
        """
        return run_body(self.routing(state, runtime))

    def routing(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[Command[MuseRoute]]:
        """:meth:`route` as a node body: the draws are yielded (sync or async)."""
        ctx = muse_context(runtime, self.defaults)
        trajectories = list(state.get("trajectories") or [])
        dispatched = int(state.get("dispatched") or 0)
        rounds_done = int(state.get("round") or 0)
        used = list(state.get("branch_points") or [])
        points: list[BranchPoint] = []
        counters: dict[str, int] = {}
        given: dict[str, GivenStep] = {}
        while True:
            branches, found, rounds_done = plan_branches(
                clean_text(state["question"]),
                trajectories,
                ctx,
                dispatched=dispatched,
                rounds_done=rounds_done,
                used=[*used, *points],
            )
            points += found
            if not branches or self.sampler is None or ctx.branch_candidates < 1:
                break
            chosen = yield from self.sampler.choose(
                branches,
                trajectories,
                ctx,
                agent_input=state.get("agent_input") or {},
                dispatched=dispatched,
                fill=fills_with_fresh(ctx, found, rounds_done),
            )
            counters = add_counters(counters, chosen.counters)
            branches, given = chosen.branches, chosen.given
            # A round whose points kept no fork leaves its budget to the next round: plan it.
            if branches or rounds_done >= ctx.rounds or dispatched >= ctx.budget:
                break
        update: dict[str, Any] = {
            "dispatched": dispatched + len(branches),
            "round": rounds_done,
            "branch_points": points,
        }
        if counters:
            update["counters"] = counters
        remaining = state.get("remaining_steps")
        if branches and (remaining is None or remaining >= _STEPS_TO_ROLL):
            return Command(update=update, goto=self.rollout_sends(branches, state, given))
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

    def rollout_sends(
        self,
        branches: Sequence[Branch],
        state: Mapping[str, Any],
        given: Mapping[str, GivenStep] | None = None,
    ) -> list[Send]:
        """Return one ``Send("rollout", RolloutInput)`` per planned branch.

        The first trajectory of a run on a given thread (``from_thread``) is that thread.
        ``given`` holds the first steps drawn for some branches (by branch id).
        """
        by_id = {t["id"]: t for t in state.get("trajectories") or []}
        sends = []
        for branch in branches:
            task = RolloutInput(branch=branch, thread_id=f"{state['thread_prefix']}-{branch['id']}")
            if branch["parent"] is not None and branch["branch_step"] is not None:
                parent = by_id[branch["parent"]]
                # Never None: steps without a fork point are not ranked (uncertainty._ranked).
                point = cast(dict[str, str], parent["steps"][branch["branch_step"]].get("fork"))
                task["fork"] = ForkSource(
                    thread_id=parent["thread_id"],
                    checkpoint_id=point["checkpoint_id"],
                    as_node=point["as_node"],
                )
            elif branch["index"] == 0 and state.get("from_thread"):
                task["thread_id"] = state["from_thread"]  # the caller's finished run
            else:
                task["input"] = state["agent_input"]
            if given and branch["id"] in given:
                task["given"] = given[branch["id"]]
            sends.append(Send("rollout", task))
        return sends


_FRESH: dict[str, Any] = {
    "trajectories": [],
    "reports": [],
    "counters": {},
    "branch_points": [],
    "dispatched": 0,
    "round": 0,
    "answer": None,
    "stop_reason": None,
    "aggregation": {},
    "limit": None,
}
"""A question's own keys as a new question on a thread starts them."""
_REDUCED = frozenset({"trajectories", "reports", "counters", "branch_points"})


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
    answer = chosen["answer"] if chosen else None
    reason = "answered" if chosen else limit
    return {
        "answer": answer,
        "stop_reason": reason,
        "aggregation": record,
        "limit": limit,
        "counters": {},
        "messages": [answer_message(answer, reason)],
        "from_thread": None,  # consumed: a next question on this thread does not fork it
    }
