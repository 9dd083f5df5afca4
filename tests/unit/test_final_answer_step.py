"""The final answer-only step: a search at the last allowed turn is run, then read by one more step.

Search-R1 ends its turn loop with one more generation, search disabled; the agent loop does the
same when a run's step ``max_turns`` is a search (``SearchContext.final_answer_step``, on by
default), in ParallelSearch, its sequential baseline and every ParallelMuse rollout.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.context import loop_settings
from langgraph_parallel.agent.events import render_event
from langgraph_parallel.agent.limits import recursion_limit_for
from langgraph_parallel.agent.nodes import run_body
from langgraph_parallel.agent.run import run_question
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.parallel_muse.accounting import muse_costs
from langgraph_parallel.parallel_muse.agent_thread import read_rollout, rollout_body, thread_config
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.plan import fork
from langgraph_parallel.parallel_muse.state import Branch, ForkSource, RolloutInput
from langgraph_parallel.parallel_search.loop import parallel_search_rollouts
from langgraph_parallel.protocol import action_regex, answer_regex
from tests.fakes import CountingSearcher, rollouts_graph

SEARCH = "<think> look it up </think>\n<search> q{n} </search>"
ANSWER = "<think> found </think>\n<answer> Paris </answer>"


class StepChat(OneReplyChatModel):
    """Replies by step: the n-th model step of a transcript (n = its AI messages) gets ``steps[n]``.

    So concurrent rollouts each follow the script. ``regex`` marks it as a model with structured
    outputs (as ``ChatVLLM``): the graph then sends the grammar it constrains a step to, which
    this fake records and ignores, like a model without grammar support would.
    """

    steps: list[str]
    style: str = "chat"
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        return self._kwargs

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        n = sum(isinstance(m, AIMessage) for m in messages)
        with self._lock:
            self._kwargs.append({"step": n, **kwargs})
        text = self.steps[min(n, len(self.steps) - 1)].format(n=n)
        usage = {"input_tokens": 100 + n, "output_tokens": 10, "total_tokens": 110 + n}
        return AIMessage(content=text, usage_metadata=usage)  # type: ignore[arg-type]


class GrammarChat(StepChat):
    """A :class:`StepChat` prompted raw, with a ``regex`` setting (constrained as ``ChatVLLM``)."""

    style: str = "raw"
    regex: str | None = None


def run(steps: list[str], model: type[StepChat] = StepChat, **options: Any) -> tuple[Any, ...]:
    chat, searcher = model(steps=steps), CountingSearcher()
    graph = create_parallel_search_graph(chat, searcher, **options)
    events: list[dict[str, Any]] = []
    result = run_question(graph, "Q?", on_event=events.append)
    return result, chat, searcher, [e for e in events if e["event"] == "step"]


@pytest.mark.parametrize("decompose", [True, False])
@pytest.mark.parametrize("max_turns", [1, 3])
def test_a_search_at_the_last_turn_runs_and_one_answer_only_step_reads_it(
    max_turns: int, decompose: bool
) -> None:
    steps = [SEARCH] * max_turns + [ANSWER]
    result, chat, searcher, events = run(steps, max_turns=max_turns, decompose=decompose)
    assert searcher.queries == [f"q{n}" for n in range(max_turns)]  # every search ran
    assert result.answer == "Paris" and result.stop_reason == "answered"
    counters = result.counters
    assert counters["llm_calls"] == max_turns + 1 == len(chat.call_kwargs)
    assert counters["turns"] == max_turns
    # The final step's tokens count like any step's (prompt 100 + n per call here).
    assert counters["prompt_tokens"] == sum(100 + n for n in range(max_turns + 1))
    assert counters["completion_tokens"] == 10 * (max_turns + 1)
    assert result.extra_counters["final_answer_steps"] == 1
    # It read the last search's observation: the same transcript, one model step longer.
    messages = result.state["transcript"]
    assert isinstance(messages[-2], HumanMessage) and "[q" in str(messages[-2].content)
    assert [e["final_answer_step"] for e in events] == [False] * max_turns + [True]
    assert events[-1]["step"] == max_turns + 1 and events[-1]["answer"] == "Paris"
    assert result.trace[max_turns] == "final step (answer only): " + " ".join(ANSWER.split())
    assert render_event(events[-1]) == f"step {max_turns + 1} (final, answer only): answer Paris"


def test_an_answer_before_the_last_turn_needs_no_final_step() -> None:
    result, chat, _, events = run([SEARCH, ANSWER], max_turns=2)
    assert result.answer == "Paris" and result.counters["llm_calls"] == 2
    assert "final_answer_steps" not in result.extra_counters
    assert not any(e["final_answer_step"] for e in events)
    assert all(line.startswith("step: ") for line in result.trace[:2])


@pytest.mark.parametrize("where", ["graph", "context"])
def test_switched_off_the_last_search_is_not_run_as_before(where: str) -> None:
    chat, searcher = StepChat(steps=[SEARCH] * 4 + [ANSWER]), CountingSearcher()
    if where == "graph":
        graph = create_parallel_search_graph(chat, searcher, max_turns=3, final_answer_step=False)
        state = graph.invoke({"question": "Q?"})
    else:  # a per-run override of a graph built with the step on
        graph = create_parallel_search_graph(chat, searcher, max_turns=3)
        state = graph.invoke({"question": "Q?"}, context={"final_answer_step": False})
    assert state["answer"] is None
    assert state["stop_reason"] == "max_turns: 3 model steps used without an answer"
    assert state["counters"]["llm_calls"] == 3 and state["counters"]["turns"] == 2
    assert searcher.queries == ["q0", "q1"]
    assert "final_answer_steps" not in state["counters"]


def test_the_answer_only_step_is_constrained_to_the_answer_grammar() -> None:
    result, chat, _, _ = run([SEARCH, SEARCH, ANSWER], GrammarChat, max_turns=2)
    assert result.answer == "Paris"
    regexes = [kwargs["regex"] for kwargs in chat.call_kwargs]
    assert regexes == [action_regex(True), action_regex(True), answer_regex()]
    # Same stop sequences and token bound as any step: only the grammar differs.
    first, final = chat.call_kwargs[0], chat.call_kwargs[-1]
    assert {k: v for k, v in first.items() if k not in ("regex", "step")} == {
        k: v for k, v in final.items() if k not in ("regex", "step")
    }
    # The run's think bound applies to the final step too.
    _, chat, _, _ = run([SEARCH, ANSWER], GrammarChat, max_turns=1, think_max_chars=40)
    assert chat.call_kwargs[-1]["regex"] == answer_regex(40)


def test_a_model_without_grammar_support_gets_no_regex_and_its_answer_is_parsed() -> None:
    result, chat, _, _ = run([SEARCH, ANSWER], max_turns=1)
    assert result.answer == "Paris"
    assert all("regex" not in kwargs for kwargs in chat.call_kwargs)


def test_the_answer_grammar_admits_answers_only() -> None:
    final = re.compile(answer_regex())
    full = re.compile(action_regex(True))
    for text in [ANSWER, "<answer> 42 </answer>", "<think> a </think> <answer>b</answer>"]:
        assert final.fullmatch(text) and full.fullmatch(text)
    for text in [SEARCH.format(n=1), "<search> a ## b </search>", "no tags", "<answer> </answer>"]:
        assert not final.fullmatch(text)


@pytest.mark.parametrize(
    ("final", "reason", "invalid"),
    [
        (SEARCH, "the final answer-only step searched again", 0),
        ("I would rather keep looking.", "the final answer-only step wrote no valid answer", 1),
    ],
)
def test_a_final_step_that_does_not_answer_ends_with_a_stated_reason(
    final: str, reason: str, invalid: int
) -> None:
    result, chat, searcher, _ = run([SEARCH, SEARCH, final], GrammarChat, max_turns=2)
    assert result.answer is None
    assert result.stop_reason == f"max_turns: 2 model steps used without an answer; {reason}"
    assert searcher.queries == ["q0", "q1"]  # the final step's search is not run
    assert result.counters["llm_calls"] == 3 and result.counters["turns"] == 2
    assert result.extra_counters["final_answer_steps"] == 1
    assert result.extra_counters.get("invalid_steps", 0) == invalid


def test_an_invalid_last_turn_gets_no_final_step() -> None:
    # No new evidence to read: the run ends at max_turns as it always did.
    result, _, searcher, _ = run([SEARCH, "no action here", ANSWER], max_turns=2)
    assert result.answer is None and result.stop_reason.startswith("max_turns: 2 ")
    assert result.counters["llm_calls"] == 2 and searcher.queries == ["q0"]


@pytest.mark.parametrize("max_turns", [3, 30])
def test_the_default_recursion_limit_has_room_for_the_final_step(max_turns: int) -> None:
    # 30 turns need more than the floor of 100 super-steps: recursion_limit_for's own figure.
    result, *_ = run([SEARCH] * max_turns + [ANSWER], max_turns=max_turns)
    assert result.answer == "Paris" and result.counters["llm_calls"] == max_turns + 1
    least = 4 * max_turns + 3  # measured: the last search turn, the final step and answer
    assert recursion_limit_for(max_turns) >= least


@pytest.mark.parametrize("limit", range(2, 20))
def test_a_small_recursion_limit_still_ends_with_a_reason(limit: int) -> None:
    chat = StepChat(steps=[SEARCH] * 3 + [ANSWER])
    graph = create_parallel_search_graph(chat, CountingSearcher(), max_turns=3)
    state = run_question(graph, "Q?", config={"recursion_limit": limit})
    if state.answer is None:
        assert state.stop_reason.startswith("recursion_limit: ")
    else:  # only a limit with room for every turn and the final step gets there
        assert limit >= 4 * 3 + 3 and state.extra_counters["final_answer_steps"] == 1
    assert state.counters["llm_calls"] <= 4


@pytest.mark.parametrize("final_answer_step", [True, False])
def test_rollouts_count_the_final_step_like_any_other(final_answer_step: bool) -> None:
    chat = StepChat(steps=[SEARCH, SEARCH, ANSWER])
    graph = rollouts_graph(
        chat, CountingSearcher(), budget=2, max_turns=2, final_answer_step=final_answer_step
    )
    state = graph.invoke({"question": "Q?"})
    calls = 3 if final_answer_step else 2
    for trajectory in state["trajectories"]:
        assert len(trajectory["steps"]) == calls == trajectory["counters"]["llm_calls"]
        assert trajectory["counters"]["turns"] == calls - 1
        assert trajectory["answer"] == ("Paris" if final_answer_step else None)
    counters = state["counters"]
    agent_calls = [kwargs for kwargs in chat.call_kwargs if "seed" in kwargs]  # not the report's
    assert counters["llm_calls"] == 2 * calls == len(agent_calls)
    assert counters.get("final_answer_steps", 0) == (2 if final_answer_step else 0)
    assert state["answer"] == ("Paris" if final_answer_step else None)
    costs = muse_costs(state)
    assert costs["steps_per_trajectory"] == calls
    # Every call's usage, the final step's included, is in the agent's figures.
    assert costs["agent_prompt_tokens"] == 2 * sum(100 + n for n in range(calls))
    assert costs["agent_generated"] == 2 * 10 * calls


def test_a_fork_of_the_final_step_is_again_the_answer_only_step() -> None:
    ctx = MuseContext(max_turns=2)
    chat = GrammarChat(steps=[SEARCH, SEARCH, ANSWER])
    rollouts = parallel_search_rollouts(chat, CountingSearcher())
    agent = rollouts.graph(ctx, None, checkpointer=InMemorySaver())
    agent.invoke({"question": "Q?"}, thread_config("parent"))
    first = Branch(
        question="Q?",
        id="t0",
        index=0,
        parent=None,
        branch_step=None,
        round=0,
        seed=0,
        messages=[],
        steps=[],
    )
    trajectory = read_rollout(agent, RolloutInput(branch=first, thread_id="parent"), None)
    assert [s["action"] for s in trajectory["steps"]] == ["search", "search", "answer"]
    branch = fork(trajectory, 2, 1, ctx, 1)
    assert len(branch["steps"]) == 2 and branch["messages"][-1]["role"] == "user"
    point = trajectory["steps"][2]["fork"]
    task = RolloutInput(
        branch=branch, thread_id="child", fork=ForkSource(thread_id="parent", **point)
    )
    chat.call_kwargs.clear()
    run_body(rollout_body(agent, task, thread_config("child"), loop_settings(ctx)))
    forked = read_rollout(agent, task, None)
    assert forked["answer"] == "Paris" and forked["stop_reason"] == "answered"
    assert [kwargs["regex"] for kwargs in chat.call_kwargs] == [answer_regex()]
    assert forked["counters"]["llm_calls"] == 1
    assert forked["counters"]["final_answer_steps"] == 1
