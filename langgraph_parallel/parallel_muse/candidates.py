"""Distinct branches, the calls: draw candidate steps where forks and fresh rollouts start.

With ``MuseContext.branch_candidates`` = n, the router hands each round's planned rollouts to
:meth:`BranchSampler.choose` before it sends them. For each branch point it rebuilds the prompt
the fork's first step will be sent (the parent's checkpoint before that step, read as the loop's
``think`` reads it: :func:`~langgraph_parallel.agent.step.step_prompt`, with the step's own call
options), draws n candidate steps on it, keeps those that explore (:mod:`.distinct`) and gives
each fork one of them; the fresh rollouts of the round get the same on their first step, kept
apart from each other and from the first steps of the trajectories so far. A fork or fresh
rollout runs the loop from there with its candidate as that step (:mod:`~langgraph_parallel.
agent.given`: the reply is the step's, no call is made). Where no candidate is left for it, a
fresh rollout samples its own first step as before; a fork's place goes elsewhere
(:func:`~.distinct.deal`).

How the n candidates are drawn depends on what the rollouts' model declares
(:class:`~langgraph_parallel.agent.policy.PolicySpec` ``multi_sample``): ``ChatVLLM`` and
``ChatVLLMServer`` get one call with ``n`` (one engine request: the shared prefix is prefilled
once, and mostly served from the cache); any other chat model gets n separate calls at the same
time, so it still works, at n prompts' cost. Sample ``j`` of a draw is seeded ``base + j``, as
vLLM seeds the samples of one request, with ``base = seed + budget * (1 + i)`` for a draw whose
first rollout is number ``i``: apart from the run's own trajectories' seeds (``seed`` to
``seed + budget - 1``), so a rollout that samples its own step (one no candidate was left for)
does not draw a candidate again. A call that fails leaves its forks (or fresh rollouts) to
sample their own steps, as without the setting. At temperature 0 a draw is one sample: greedy
samples are all the same.

Accounting: a kept candidate is its trajectory's step and carries its own usage (with ``n``, the
engine charges the prompt to the first sample only); the candidates not kept are counted in the
router's ``counters``: their ``prompt_tokens``, ``cached_prompt_tokens`` and
``completion_tokens`` (so the agent's totals hold every token spent), and
``branch_candidate_calls``, ``branch_candidates`` (drawn), ``branch_candidates_kept`` and
``branch_candidate_errors``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langgraph_parallel.agent.context import loop_settings
from langgraph_parallel.agent.given import prompt_digest
from langgraph_parallel.agent.nodes import Blocking, Body, Either
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.agent.step import StepPrompt, prompt_style, step_options, step_prompt
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_muse.agent_thread import thread_config
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.distinct import deal, keep_distinct, step_key
from langgraph_parallel.parallel_muse.plan import fork, fresh_branch
from langgraph_parallel.parallel_muse.state import Branch, GivenStep, Trajectory

__all__ = ["BranchSampler", "CandidateCall", "Chosen", "adraw_all", "draw_all"]


@dataclass(frozen=True)
class CandidateCall:
    """One draw of candidate steps: the prompt, the step's call options, one seed a sample.

    ``options`` are the step's own (:func:`~langgraph_parallel.agent.step.step_options`),
    without the seed.
    """

    messages: list[BaseMessage]
    options: dict[str, Any]
    seeds: tuple[int, ...]


@dataclass
class Chosen:
    """The round's rollouts after the draw: the branches, their given steps, the counters."""

    branches: list[Branch]
    given: dict[str, GivenStep] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)


def _jobs(model: BaseChatModel, call: CandidateCall) -> list[dict[str, Any]]:
    """Return the call options of each model call one draw makes (module docstring)."""
    if policy_of(model).multi_sample:
        return [{**call.options, "seed": call.seeds[0], "n": len(call.seeds)}]
    return [{**call.options, "seed": seed} for seed in call.seeds]


def _replies(result: Any) -> list[BaseMessage]:
    return [generation.message for generation in result.generations[0]]


def _draw_one(model: BaseChatModel, messages: list[BaseMessage], options: dict[str, Any]) -> Any:
    if "n" in options:
        return _replies(model.generate([messages], **options))
    return [model.invoke(messages, **options)]


async def _adraw_one(
    model: BaseChatModel, messages: list[BaseMessage], options: dict[str, Any]
) -> Any:
    if "n" in options:
        return _replies(await model.agenerate([messages], **options))
    return [await model.ainvoke(messages, **options)]


def _gathered(
    calls: Sequence[CandidateCall], jobs: list[list[dict[str, Any]]], outcomes: list[Any]
) -> list[tuple[list[BaseMessage] | None, int]]:
    """Regroup the model calls' outcomes per draw: its samples (``None``: all failed), calls."""
    out: list[tuple[list[BaseMessage] | None, int]] = []
    position = 0
    for own in jobs[: len(calls)]:
        results = outcomes[position : position + len(own)]
        position += len(own)
        replies = [r for result in results if not isinstance(result, Exception) for r in result]
        failed = all(isinstance(result, Exception) for result in results)
        out.append((None if failed else replies, len(own)))
    return out


def draw_all(
    model: BaseChatModel, calls: Sequence[CandidateCall]
) -> list[tuple[list[BaseMessage] | None, int]]:
    """Make every draw's model calls at once; return each draw's samples and its call count."""
    jobs = [_jobs(model, call) for call in calls]
    work = [
        (call.messages, options) for call, own in zip(calls, jobs, strict=True) for options in own
    ]
    if not work:
        return []
    outcomes: list[Any] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(work), 32)) as pool:
        futures = [pool.submit(_draw_one, model, messages, options) for messages, options in work]
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception as exc:  # this draw's forks sample their own steps
                outcomes.append(exc)
    return _gathered(calls, jobs, outcomes)


async def adraw_all(
    model: BaseChatModel, calls: Sequence[CandidateCall]
) -> list[tuple[list[BaseMessage] | None, int]]:
    """:func:`draw_all` on the event loop (``agenerate`` / ``ainvoke``)."""
    jobs = [_jobs(model, call) for call in calls]
    work = [
        (call.messages, options) for call, own in zip(calls, jobs, strict=True) for options in own
    ]
    outcomes = await asyncio.gather(
        *(_adraw_one(model, messages, options) for messages, options in work),
        return_exceptions=True,
    )
    return _gathered(calls, jobs, list(outcomes))


def _read_states(agent: Any, configs: list[Any]) -> list[Mapping[str, Any]]:
    return [agent.get_state(config).values for config in configs]


async def _aread_states(agent: Any, configs: list[Any]) -> list[Mapping[str, Any]]:
    return [(await agent.aget_state(config)).values for config in configs]


class BranchSampler:
    """Draw candidate steps for a round's planned rollouts; keep those that explore.

    Args:
        agent: The loop's graph with its checkpointer (the parents' checkpoints are read).
        model: The rollouts' model (the loop's), which draws the candidates.
    """

    def __init__(self, agent: Any, model: BaseChatModel) -> None:
        self.agent = agent
        self.model = model

    def choose(
        self,
        planned: Sequence[Branch],
        trajectories: Sequence[Trajectory],
        ctx: MuseContext,
        *,
        agent_input: Mapping[str, Any],
        dispatched: int,
        fill: bool,
    ) -> Body[Chosen]:
        """Return the rollouts to send instead of ``planned`` (module docstring).

        Args:
            planned: The round's rollouts as :func:`~.plan.plan_branches` planned them.
            trajectories: Every finished trajectory so far.
            ctx: The run's settings (``branch_candidates`` is n).
            agent_input: What a fresh run starts from (its first step's prompt is rebuilt).
            dispatched: Rollouts sent before this round (the first index of this one's).
            fill: Budget the round's points cannot take goes to fresh rollouts now (the last
                round, :func:`~.plan.fills_with_fresh`); else it is left to the next round.
        """
        loop = loop_settings(ctx)
        style = yield Blocking(prompt_style, (self.model, loop))
        by_id = {t["id"]: t for t in trajectories}
        # The round's points in plan order (the most uncertain first), each its forks' indices.
        groups: dict[tuple[str, int], list[int]] = {}
        for branch in planned:
            if branch["parent"] is not None and branch["branch_step"] is not None:
                point = (branch["parent"], branch["branch_step"])
                groups.setdefault(point, []).append(branch["index"])
        configs = [
            thread_config(by_id[parent]["thread_id"], checkpoint_id=_fork_at(by_id[parent], step))
            for parent, step in groups
        ]
        states = yield Either(_read_states, _aread_states, (self.agent, configs))
        prompts = [step_prompt(self.model, values, loop, style) for values in states]
        temperature = ctx.temperature if ctx.branch_temperature is None else ctx.branch_temperature
        calls = [
            self._call(prompt, ctx, temperature, indices[0])
            for prompt, indices in zip(prompts, groups.values(), strict=True)
        ]
        drawn = (yield Either(draw_all, adraw_all, (self.model, calls))) if calls else []
        kept: list[list[BaseMessage | None]] = []
        for (parent, step), indices, (replies, _) in zip(
            groups, groups.values(), drawn, strict=True
        ):
            if replies is None:  # the draw failed: these forks sample their own steps
                kept.append([None] * len(indices))
            else:
                exclude = [step_key(by_id[parent]["steps"][step])]
                kept.append(list(keep_distinct(replies, exclude, len(replies))))
        dealt = deal([len(indices) for indices in groups.values()], [len(k) for k in kept])
        fresh = sum(b["parent"] is None for b in planned)
        fresh += sum(len(indices) for indices in groups.values()) - sum(dealt) if fill else 0
        chosen = Chosen(branches=[])
        index = dispatched
        question, round_ = planned[0]["question"], planned[0]["round"]
        for (parent, step), n, replies, prompt in zip(groups, dealt, kept, prompts, strict=True):
            for reply in replies[:n]:
                self._give(chosen, fork(by_id[parent], step, index, ctx, round_), prompt, reply)
                index += 1
        # Fresh rollouts: their first steps apart from each other and from those so far.
        exclude = [step_key(t["steps"][0]) for t in trajectories if t["steps"]]
        firsts: list[BaseMessage | None] = [None] * fresh
        first = step_prompt(self.model, agent_input, loop, style)
        if fresh > 1 or (fresh == 1 and exclude):
            call = self._call(first, ctx, ctx.temperature, index)
            drawn += yield Either(draw_all, adraw_all, (self.model, [call]))
            found = keep_distinct(drawn[-1][0] or [], exclude, fresh)
            firsts[: len(found)] = found
        for reply in firsts:
            self._give(chosen, fresh_branch(question, index, ctx, round_), first, reply)
            index += 1
        chosen.counters = _counters(drawn, chosen)
        return chosen

    def _call(
        self, prompt: StepPrompt, ctx: MuseContext, temperature: float, index: int
    ) -> CandidateCall:
        """Return the draw for rollouts from number ``index`` on (module docstring: seeds)."""
        loop = loop_settings(ctx)
        options = step_options(
            self.model,
            loop,
            answer_only=prompt.answer_only(loop),
            keep_logprobs=True,
            temperature=temperature,
            top_p=ctx.top_p,
        )
        base = ctx.seed + ctx.budget * (1 + index)
        # Greedy samples are all the same one (and vLLM refuses n > 1 without sampling).
        count = ctx.branch_candidates if temperature > 0 else 1
        seeds = tuple(base + j for j in range(count))
        return CandidateCall(prompt.messages, options, seeds)

    @staticmethod
    def _give(
        chosen: Chosen, branch: Branch, prompt: StepPrompt, reply: BaseMessage | None
    ) -> None:
        chosen.branches.append(branch)
        if reply is not None:
            digest = prompt_digest(prompt.messages)
            chosen.given[branch["id"]] = GivenStep(prompt=digest, reply=reply)


def _fork_at(parent: Trajectory, step: int) -> str:
    """Return the checkpoint a fork of ``parent`` at ``step`` starts from."""
    # Ranked steps always have one (uncertainty._ranked), so planned forks do.
    return str((parent["steps"][step].get("fork") or {})["checkpoint_id"])


def _counters(
    drawn: Sequence[tuple[list[BaseMessage] | None, int]], chosen: Chosen
) -> dict[str, int]:
    """Count the draws, and the tokens of the samples no rollout took (module docstring)."""
    used = {id(given["reply"]) for given in chosen.given.values()}
    counters: dict[str, int] = {}
    for replies, calls in drawn:
        counters = add_counters(counters, {"branch_candidate_calls": calls})
        if replies is None:
            counters = add_counters(counters, {"branch_candidate_errors": 1})
            continue
        counters = add_counters(counters, {"branch_candidates": len(replies)})
        for reply in replies:
            if id(reply) in used:
                counters = add_counters(counters, {"branch_candidates_kept": 1})
            else:
                counters = add_counters(counters, usage_counters(reply))
    return counters
