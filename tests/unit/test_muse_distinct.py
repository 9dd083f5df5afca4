"""Distinct branches (issue 79 item 1): candidate steps drawn in one call, those that explore kept.

The rollouts' model replies as a function of the seed and the step: a call for ``n`` samples
with seed ``s`` gives sample ``j`` the seed ``s + j``, as vLLM does and as the separate calls of
a model without ``n`` are seeded (``candidates.py``), so both paths draw the same candidates. A
draw for rollouts from number ``i`` on starts at seed ``BUDGET * (1 + i)``, above every
trajectory's own seed: a test says which candidate each seed is. The first rollout (seed 0)
searches ``a``, then ``b`` (its most uncertain step, where the forks start), then answers;
rollouts sampling their own steps (seeds below ``BUDGET``) do the same.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from pydantic import PrivateAttr

from langgraph_parallel import MuseContext, create_parallel_muse_graph, parallel_search_rollouts
from langgraph_parallel.agent.given import given_step, given_steps_config, prompt_digest
from langgraph_parallel.agent.policy import PolicySpec
from langgraph_parallel.apps.bench_muse import MUSE_OPTIONS
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.parallel_muse.accounting import muse_costs
from langgraph_parallel.parallel_muse.distinct import action_key, deal, repeats_parent
from langgraph_parallel.protocol import parse_action
from tests.fakes import CountingSearcher, step_logprobs

BUDGET = 4
AT_FORK_SEED = BUDGET * 2
"""The first seed of the draw at the first round's fork point (its first fork is t1)."""
USAGE = {"input": 100, "cached": 60, "output": 10}


def search(query: str) -> str:
    return f"<think> look </think>\n<search> {query} </search>"


def answer(text: str) -> str:
    return f"<think> done </think>\n<answer> {text} </answer>"


class Sampler(OneReplyChatModel):
    """A raw-prompt policy with logprobs; ``script(seed, step)`` is a step's text.

    ``multi``: it declares ``n`` (one call, several samples), as ``ChatVLLM`` does; else each
    call gives one sample. Every call is recorded as ``(step, seed, n)``.
    """

    script: Callable[[int, int], str]
    multi: bool = True
    _calls: list[tuple[int, int, int]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def policy(self) -> PolicySpec:
        return PolicySpec(style="raw", logprobs=True, multi_sample=self.multi)

    @property
    def calls(self) -> list[tuple[int, int, int]]:
        return self._calls

    def respond(self, messages: list[BaseMessage], stop: Any, **kw: Any) -> AIMessage:
        """Sample ``kw["sample"]`` (0 for a plain call) of the draw seeded ``kw["seed"]``."""
        step = sum(isinstance(m, AIMessage) for m in messages)
        j = int(kw.get("sample", 0))
        text = self.script(int(kw["seed"]) + j, step)
        spread = {"exploration": 5} if (kw["seed"], step, j) == (0, 1, 0) else {}
        first = j == 0  # the engine prefills once: the first sample carries the prompt
        usage = {
            "input_tokens": USAGE["input"] if first else 0,
            "output_tokens": USAGE["output"],
            "total_tokens": (USAGE["input"] if first else 0) + USAGE["output"],
            "input_token_details": {"cache_read": USAGE["cached"] if first else 0},
        }
        return AIMessage(
            content=text,
            response_metadata={"logprobs": {"content": step_logprobs(text, spread)}},
            usage_metadata=usage,
        )

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        # ``n`` samples in one call, as the engine draws them (the base answers one).
        step = sum(isinstance(m, AIMessage) for m in messages)
        n = int(kw.get("n", 1))
        with self._lock:
            self._calls.append((step, int(kw["seed"]), n))
        samples = [self.respond(messages, stop, **kw, sample=j) for j in range(n)]
        return ChatResult(generations=[ChatGeneration(message=m) for m in samples])


def script(
    at_fork: list[str],
    first_steps: list[str] | None = None,
    first_seed: int = 0,
    fork_seed: int = AT_FORK_SEED,
) -> Callable[[int, int], str]:
    """A rollout's own seed: ``a``, ``b``, answer. Drawn candidates by seed (module docstring)."""

    def reply(seed: int, step: int) -> str:
        if step == 0:
            return search("a") if seed < BUDGET else search((first_steps or [])[seed - first_seed])
        if step == 1:
            return search("b") if seed < BUDGET else search(at_fork[seed - fork_seed])
        return answer(f"x{seed % BUDGET}")

    return reply


def run(model: Sampler, **settings: Any) -> dict[str, Any]:
    context = MuseContext(
        **{
            "budget": BUDGET,
            "top_k_steps": 1,
            "samples_per_step": 3,
            "max_turns": 4,
            **settings,
        }
    )
    graph = create_parallel_muse_graph(
        parallel_search_rollouts(model, CountingSearcher()), context=context
    )
    return graph.invoke({"question": "Q?"})


def fork_searches(state: dict[str, Any]) -> list[tuple[str, ...]]:
    """Each fork's first own step's sub-queries, in trajectory order."""
    out = []
    for t in state["trajectories"]:
        if t["parent"] is not None:
            step = t["steps"][t["branch_step"]]
            out.append(parse_action(step["text"]).queries)
    return out


# Candidates at the fork: the parent's step twice (once written otherwise), c twice, d, e.
AT_FORK = ["b", "B.", "c", "c", "d", "e"]


@pytest.mark.parametrize("multi", [True, False], ids=["one call with n", "separate calls"])
def test_candidates_that_repeat_the_parent_or_each_other_are_dropped(multi: bool) -> None:
    model = Sampler(script=script(AT_FORK), multi=multi)
    state = run(model, branch_candidates=6)
    # The parent's b (and "B.", the same search normalised) and the second c are not forks.
    assert fork_searches(state) == [("c",), ("d",), ("e",)]
    assert [t["branch_step"] for t in state["trajectories"][1:]] == [1, 1, 1]
    assert muse_costs(state)["forks_repeating_parent"] == 0
    # The forks took their drawn step: none of them called the model at the branch point.
    at_fork = [(seed, n) for step, seed, n in model.calls if step == 1]
    drawn = [(AT_FORK_SEED, 6)] if multi else [(AT_FORK_SEED + j, 1) for j in range(6)]
    assert sorted(at_fork) == sorted([(0, 1), *drawn])
    counters = state["counters"]
    assert counters["branch_candidate_calls"] == (1 if multi else 6)
    assert counters["branch_candidates"] == 6 and counters["branch_candidates_kept"] == 3
    assert "branch_candidate_errors" not in counters
    # Each fork went on from its own step: its answer is its own (seed = its index).
    assert [t["answer"] for t in state["trajectories"]] == ["x0", "x1", "x2", "x3"]


@pytest.mark.parametrize("multi", [True, False], ids=["one call with n", "separate calls"])
def test_the_async_path_draws_the_same(multi: bool) -> None:
    model = Sampler(script=script(AT_FORK), multi=multi)
    context = MuseContext(budget=BUDGET, top_k_steps=1, samples_per_step=3, branch_candidates=6)
    graph = create_parallel_muse_graph(
        parallel_search_rollouts(model, CountingSearcher()), context=context
    )
    state = asyncio.run(graph.ainvoke({"question": "Q?"}))
    assert fork_searches(state) == [("c",), ("d",), ("e",)]
    assert state["counters"]["branch_candidates_kept"] == 3


def test_at_most_the_points_forks_are_kept() -> None:
    model = Sampler(script=script(AT_FORK, fork_seed=3 * 2))  # the draw's seeds: budget 3
    state = run(model, budget=3, samples_per_step=2, branch_candidates=6)
    assert fork_searches(state) == [("c",), ("d",)]
    assert len(state["trajectories"]) == 3


def test_without_the_setting_forks_repeat_their_parent_and_the_accounting_says_so() -> None:
    # Every fork samples step 1 itself; seeds 1..3 all give the parent's b.
    model = Sampler(script=script(AT_FORK))
    state = run(model)
    assert fork_searches(state) == [("b",), ("b",), ("b",)]
    costs = muse_costs(state)
    assert costs["forks"] == 3 and costs["forks_repeating_parent"] == 3
    assert not any(k.startswith("branch_candidate") for k in state["counters"])


def test_the_candidates_no_rollout_took_are_counted_in_the_agents_tokens() -> None:
    model = Sampler(script=script(AT_FORK))
    state = run(model, branch_candidates=6)
    costs = muse_costs(state)
    # t0's three steps, the one draw (its prompt once, six samples), each fork's answer step.
    assert costs["agent_prompt_tokens"] == (3 + 1 + 3) * USAGE["input"]
    assert costs["agent_cached_prefill"] == (3 + 1 + 3) * USAGE["cached"]
    assert costs["agent_generated"] == (3 + 6 + 3) * USAGE["output"]
    # The dropped b (the first sample: the prompt), "B." and the second c.
    assert state["counters"]["completion_tokens"] == 12 * USAGE["output"]


def test_forks_without_distinct_candidates_leave_their_budget_to_fresh_distinct_rollouts() -> None:
    # Only c differs from the parent at the fork; the fresh rollouts' first steps are drawn on
    # the question's prompt, apart from t0's first search (a) and from each other.
    at_fork = ["b", "c", "b", "c", "b", "b"]
    firsts = ["a", "a", "f", "f", "g", "a"]
    model = Sampler(script=script(at_fork, firsts, first_seed=BUDGET * 3))
    state = run(model, branch_candidates=6)
    kinds = [(t["parent"], t["branch_step"]) for t in state["trajectories"]]
    assert kinds == [(None, None), ("t0", 1), (None, None), (None, None)]
    assert fork_searches(state) == [("c",)]
    fresh = [t for t in state["trajectories"][2:]]
    assert [parse_action(t["steps"][0]["text"]).queries for t in fresh] == [("f",), ("g",)]
    # The fresh draw is one call on the question's prompt, for rollouts from t2 on.
    assert (0, BUDGET * 3, 6) in model.calls
    assert state["counters"]["branch_candidate_calls"] == 2
    assert state["counters"]["branch_candidates_kept"] == 3


def test_independent_rollouts_start_from_distinct_first_steps() -> None:
    # rounds=0 is the independent-rollouts baseline: its first steps drawn in one call.
    firsts = ["a", "f", "a", "g", "h", "f"]
    model = Sampler(script=script(AT_FORK, firsts, first_seed=BUDGET))
    state = run(model, rounds=0, branch_candidates=6)
    starts = [parse_action(t["steps"][0]["text"]).queries for t in state["trajectories"]]
    # Four rollouts, four distinct first searches (samples 0, 1, 3, 4 of the draw).
    assert starts == [("a",), ("f",), ("g",), ("h",)]
    assert [(step, seed, n) for step, seed, n in model.calls if step == 0] == [(0, BUDGET, 6)]


def test_a_failed_draw_leaves_the_forks_to_sample_their_own_steps() -> None:
    def flaky(seed: int, step: int) -> str:
        if step == 1 and seed >= BUDGET:  # a sample of the draw (no fork has such a seed)
            raise RuntimeError("engine down")
        return script(AT_FORK)(seed, step)

    model = Sampler(script=flaky)
    state = run(model, branch_candidates=3)
    # As without the setting: each fork sampled its own step (seeds 1..3 give b).
    assert fork_searches(state) == [("b",), ("b",), ("b",)]
    assert all(t["stop_reason"] == "answered" for t in state["trajectories"])
    assert state["counters"]["branch_candidate_errors"] == 1
    assert state["counters"]["branch_candidate_calls"] == 1


def test_a_greedy_run_draws_one_sample() -> None:
    # vLLM refuses n > 1 at temperature 0, and greedy samples would all be the same anyway.
    model = Sampler(script=script(["c"], ["f"], first_seed=BUDGET * 3))
    state = run(model, branch_candidates=6, temperature=0.0)
    assert [(step, n) for step, _, n in model.calls if step == 1 and n > 1] == []
    assert (1, AT_FORK_SEED, 1) in model.calls
    assert fork_searches(state) == [("c",)]
    # One fork (c), then two fresh rollouts: one drawn (f), one sampling its own (a).
    starts = [parse_action(t["steps"][0]["text"]).queries for t in state["trajectories"][2:]]
    assert starts == [("f",), ("a",)]
    assert state["counters"]["branch_candidates"] == 1 + 1  # the fork's draw, the fresh one's


def test_a_given_step_is_used_only_on_the_prompt_it_was_drawn_on() -> None:
    prompt = [HumanMessage("Question: q")]
    reply = AIMessage("<search> x </search>", usage_metadata=None)
    config = {"configurable": given_steps_config({prompt_digest(prompt): reply})}
    ask = RunnableLambda(lambda messages: given_step(messages))
    found = ask.invoke(prompt, config)
    assert isinstance(found, AIMessage) and found.text == reply.text
    assert ask.invoke([HumanMessage("Question: other")], config) is None
    assert ask.invoke(prompt) is None


def test_deal_gives_a_points_missing_forks_to_the_others_in_turn() -> None:
    assert deal([4, 3], [9, 9]) == [4, 3]
    assert deal([4, 3], [1, 9]) == [1, 6]
    assert deal([4, 3], [5, 1]) == [5, 1]  # one fork no point can take
    assert deal([2, 2, 2], [0, 3, 3]) == [0, 3, 3]
    assert deal([3], [0]) == [0]


def test_actions_are_the_same_once_normalised() -> None:
    same = [parse_action(search("The Louvre")), parse_action(search("louvre ## louvre"))]
    assert action_key(same[0]) == action_key(same[1])
    assert action_key(parse_action(search("a ## b"))) == action_key(parse_action(search("b ## a")))
    assert action_key(parse_action(answer("Paris."))) == action_key(parse_action(answer("paris")))
    assert action_key(parse_action(search("paris"))) != action_key(parse_action(answer("paris")))
    fork = {"id": "t1", "branch_step": 1, "steps": [{}, {"origin": "t1", "text": search("B")}]}
    parent = {"id": "t0", "steps": [{}, {"origin": "t0", "text": search("b")}]}
    assert repeats_parent(fork, parent)
    inherited = {**fork, "steps": [{}, {"origin": "t0", "text": search("b")}]}
    assert not repeats_parent(inherited, parent)  # it made no step of its own there


def test_the_setting_is_a_bench_flag_and_needs_the_loop() -> None:
    assert MUSE_OPTIONS["branch_candidates"]["type"] is int
    assert "candidate steps drawn in one call" in MUSE_OPTIONS["branch_candidates"]["help"]
    with pytest.raises(ValueError, match="branch_candidates"):
        MuseContext(branch_candidates=-1)
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    agent = create_agent(Sampler(script=script(AT_FORK)), checkpointer=InMemorySaver())
    with pytest.raises(UserError, match="branch_candidates needs the agent loop"):
        create_parallel_muse_graph(agent, context=MuseContext(branch_candidates=4))
