"""Settings of ParallelMuse: the graphs' ``context_schema`` and how nodes read it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from langgraph_parallel.agent.context import LoopContext, run_context
from langgraph_parallel.agent.limits import MIN_RECURSION_LIMIT
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.parallel_muse.uncertainty import MODES, REGIONS, Mode, Region
from langgraph_parallel.prompts import ANALYST_PROMPT, REPORT_FOLLOWUP_PROMPT, REPORT_PROMPT

__all__ = [
    "JOINS",
    "REPORT_MODES",
    "REPORT_STYLES",
    "Join",
    "MuseContext",
    "ReportMode",
    "ReportStyle",
    "muse_context",
    "muse_recursion_limit",
    "resolve_join",
]

Join = Literal["auto", "select", "majority", "weighted", "evidence"]
JOINS: tuple[str, ...] = ("auto", "select", "majority", "weighted", "evidence")
ReportMode = Literal["all", "distinct", "contested"]
REPORT_MODES: tuple[str, ...] = ("all", "distinct", "contested")
ReportStyle = Literal["auto", "model", "continue", "extract"]
REPORT_STYLES: tuple[str, ...] = ("auto", "model", "continue", "extract")


@dataclass(frozen=True, kw_only=True)
class MuseContext(LoopContext):
    """Settings of ParallelMuse (``context_schema``), on top of the loop's (:class:`LoopContext`).

    The loop's fields are the rollouts' (each run passes them to its rollouts); ParallelMuse
    knows no act's own settings: those are given where the act is built (for ParallelSearch's,
    ``parallel_search_rollouts(..., max_parallel_queries=...)``). Built on the loop's class,
    not holding it as a field, so a run's context stays flat (``context={"max_turns": 3,
    "budget": 4}``, as the LangGraph server builds it).

    Attributes:
        budget: Most trajectories per question, initial, branched and fresh together.
        initial_rollouts: Full rollouts before the first branching round.
        top_k_steps: Branch points picked per round.
        samples_per_step: Branches started from each branch point; a round that finds fewer
            than ``top_k_steps`` points shares the missing points' branches among those it
            found (:mod:`..plan`). The default 4 (2 x 4 covers the 7 trajectories the budget
            leaves after the first) spends the whole budget on forks whenever a step can be
            forked: a fork costs less than a fresh rollout even with the cache warm.
        rounds: Branching rounds; ``0`` gives ``budget`` independent rollouts (the baseline).
        min_branch_step: Earliest step a branch may start at. ``1`` (default) spends the
            samples on the most uncertain step from step 1 on; ``0`` is the paper's rule (any
            step), whose step-0 fork keeps only the prompt and so is a fresh rollout under
            another name. On the shipped policy, 150 held-out questions, ``1`` cost 0.863x the
            agent tokens of ``0`` (-724 [-943, -516] a question, 95% paired bootstrap) at equal
            EM (majority join the same on all 150), 0.742x those of independent rollouts
            (``benchmarks/parallel_muse/gpu-policy-later/``).
        region: Region whose uncertainty picks branch points (see :mod:`..uncertainty`).
        mode: ``ppl`` (the paper's score: perplexity of the region's sampled tokens) or
            ``entropy`` (mean entropy of their top-k candidates). On 8 seeded MuSiQue
            questions both picked the same branch points (``benchmarks/parallel_muse/sweep.md``).
        join: How ``aggregate`` picks the answer: ``select``, ``majority``, ``weighted`` or
            ``evidence`` (:mod:`..reduce` has the rules); ``auto`` (default): ``select`` when
            the analyst is a chat model, else ``majority`` (a raw-prompt policy, or no analyst
            at all). The embedded 135M policy as analyst picked the first trajectory on all 175
            held-out questions measured (``benchmarks/parallel_muse/gpu-policy/`` and
            ``defaults/``), for 1.2k tokens of reduction a question; majority needs no call.
        reports: Which trajectories get a report call. ``all``: every one. ``distinct``
            (default): one call per distinct report prompt (same steps and answer); the others
            get a copy naming its source in ``reused_from``. ``contested``: as ``distinct``, but
            only for trajectories that answered, and only when ``join`` is ``select`` and their
            normalised answers differ (the only case the analyst reads reports); otherwise no
            report is written at all.
        report_style: ``model`` (one model call on ``report_prompt`` compresses the trajectory,
            the paper's way), ``continue`` (one call on the trajectory's own messages plus
            ``report_followup``: the engine's prefix cache holds the trajectory), ``extract``
            (the trajectory's plan, searches and found titles, reasoning and answer written
            without a call) or ``auto`` (default): ``extract`` for a model prompted ``raw``
            (the embedded policies, which write no report: asked for one they repeat their
            own steps up to ``report_max_tokens``), ``model`` for a chat model.
            :mod:`..report` compares them.
        temperature: Sampling temperature of every agent step (of a fork's too, unless
            ``branch_temperature`` is set).
        branch_temperature: Sampling temperature of a fork's run, from the step it
            re-generates on; ``None`` (default): ``temperature``. A fork at ``temperature``
            often samples its parent's step again: on the shipped policy, 150 held-out
            HotpotQA questions, 458 of 952 forks made their parent's step again (the same search)
            at the branch point (``benchmarks/parallel_muse/defaults/hotpotqa150-pairs/``), and
            such a fork explores nothing its parent did not there. A higher one makes it try
            another path, which pays only for a policy whose samples there stay good: at 1.0
            the shipped 135M policy's forks repeated their parent less (262 of 952) but got 16
            of the 150 right, not 20 (-0.027 [-0.060, +0.000]), at 1.25x the agent tokens
            (``benchmarks/parallel_muse/defaults/hotpotqa150-branch-t1/``).
        branch_candidates: Candidate steps drawn in one call where rollouts start: at each
            branch point, the forks take candidates whose actions differ from the parent's
            step there and from each other's (same search after normalising the sub-queries,
            or the same answer, is the same action; :mod:`..distinct`), at most the forks the
            point was given; a point with fewer distinct candidates gives its forks to the
            round's other points, then to fresh rollouts (:mod:`..plan`'s rule for unspent
            budget). Fresh rollouts take distinct first steps the same way (apart from the
            first steps so far), and sample their own where none is left. ``0`` (default):
            every rollout samples its own steps: on 150 held-out bridge questions 8
            candidates made forks differ but voted worse than independent rollouts, at more
            tokens (``benchmarks/parallel_muse/defaults/hotpotqa150-distinct8/``). On
            ``ChatVLLM``/``ChatVLLMServer`` the candidates are one request with ``n`` (the
            prefix prefilled once, from the cache); any other chat model gets that many
            separate calls (:mod:`..candidates`). Over an agent that is not the loop the
            prompts cannot be rebuilt, so it must stay ``0``. The drawn candidates no rollout
            took are counted in the agent's tokens (``counters`` ``branch_candidate*``), and
            the forks that repeat their parent's step in :func:`~..accounting.muse_costs`.
        top_p: Nucleus sampling of every agent step.
        seed: Trajectory ``i`` samples with seed ``seed + i``, so branches differ. On a CPU a
            seed pins a sample only when its prompt is prefilled in the same chunks (our vLLM
            plugin, :mod:`~langgraph_parallel.models.vllm_plugin`, makes seeds safe there at
            that cost); without the plugin the in-process engine drops seeds
            (:class:`~langgraph_parallel.models.worker.EngineWorker`).
        report_max_tokens: Token limit of one report and of the analyst's reply.
        report_prompt: Report template (``{question}``, ``{trajectory}``), style ``model``.
        report_followup: The instruction turn after the trajectory, style ``continue``.
        analyst_prompt: Analyst template (``{question}``, ``{n}``, ``{reports}``).
    """

    budget: int = 8
    initial_rollouts: int = 1
    top_k_steps: int = 2
    samples_per_step: int = 4
    rounds: int = 1
    min_branch_step: int = 1
    region: Region = "exploration"
    mode: Mode = "ppl"
    join: Join = "auto"
    reports: ReportMode = "distinct"
    report_style: ReportStyle = "auto"
    temperature: float = 0.6
    branch_temperature: float | None = None
    branch_candidates: int = 0
    top_p: float = 0.95
    seed: int = 0
    report_max_tokens: int = 256
    report_prompt: str = REPORT_PROMPT
    report_followup: str = REPORT_FOLLOWUP_PROMPT
    analyst_prompt: str = ANALYST_PROMPT

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("budget", "initial_rollouts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 (got {getattr(self, name)}).")
        for name in (
            "top_k_steps",
            "samples_per_step",
            "rounds",
            "min_branch_step",
            "branch_candidates",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more (got {getattr(self, name)}).")
        for name in ("temperature", "branch_temperature"):
            if (getattr(self, name) or 0.0) < 0:
                raise ValueError(f"{name} must be 0 or more (got {getattr(self, name)}).")
        if self.initial_rollouts > self.budget:
            raise ValueError(
                f"initial_rollouts ({self.initial_rollouts}) exceeds budget ({self.budget}); "
                "raise the budget or start fewer rollouts."
            )
        for name, allowed in (
            ("region", REGIONS),
            ("mode", MODES),
            ("join", JOINS),
            ("reports", REPORT_MODES),
            ("report_style", REPORT_STYLES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(allowed)} (got {getattr(self, name)!r})."
                )


def resolve_join(join: Join, analyst: Any) -> Join:
    """Return the join ``auto`` stands for with this analyst (see :class:`MuseContext`).

    ``select`` when ``analyst`` is a chat model (it can read and compare reports), ``majority``
    for a raw-prompt policy or no analyst; any other join is returned as it is.
    """
    if join != "auto":
        return join
    return "select" if analyst is not None and policy_of(analyst).style == "chat" else "majority"


def muse_context(runtime: Any, defaults: MuseContext) -> MuseContext:
    """Return the run's settings (:func:`run_context`), ``join="auto"`` taken from ``defaults``.

    The graph resolves ``auto`` when it is built, where the analyst is known; a run's own
    context that says ``auto`` gets that resolution.
    """
    ctx = run_context(runtime, defaults)
    return replace(ctx, join=defaults.join) if ctx.join == "auto" else ctx


def muse_recursion_limit(rounds: int) -> int:
    """Return ParallelMuse's default ``recursion_limit``, with room for ``rounds`` rounds.

    The router and one ``rollout`` step per round, plus the initial rollouts, ``report`` and
    ``aggregate``: ``2 * rounds + 5`` super-steps, with slack and the loop's floor
    (:data:`~langgraph_parallel.agent.limits.MIN_RECURSION_LIMIT`).
    """
    return max(MIN_RECURSION_LIMIT, 2 * rounds + 5 + 4)
