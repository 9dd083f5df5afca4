"""ParallelMuse's ``reports`` setting: one report call per distinct trajectory, or none.

The fake chat model answers agent steps as a function of the call's seed (not of call order),
so the concurrent rollouts of one run are deterministic; report and analyst calls are told
apart by their prompts and counted.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.parallel_muse.agent_nodes import AgentInput
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.plan import plan_reports
from langgraph_parallel.parallel_muse.router import RouterNode
from tests.fakes import CountingSearcher, muse_graph, rollouts_graph

REPORT_MARK = "Compress the"
FOLLOWUP_MARK = "Compress your work"  # report_style="continue": the last turn asks
ANALYST_MARK = "numbered reports"


class SeededChat(OneReplyChatModel):
    """Agent step ``k`` of the rollout sampled with seed ``s`` answers ``answers[s]``.

    ``None`` searches instead (the trajectory runs out of turns unanswered). With
    ``search_first``, step 0 searches a query naming the seed, so equal answers come after
    different steps; without it equal answers mean equal trajectories. ``fail_reports`` makes
    every report call raise.
    """

    answers: dict[int, str | None]
    analyst: str = "<choice>2</choice>"
    search_first: bool = False
    fail_reports: bool = False
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def count(self, mark: str) -> int:
        return sum(mark in prompt for prompt in self._prompts)

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        first, last = str(messages[0].content), str(messages[-1].content)
        with self._lock:
            self._prompts.append(first if len(messages) == 1 else first + last)
        if REPORT_MARK in first or FOLLOWUP_MARK in last:
            if self.fail_reports:
                raise ValueError("report prompt too long")
            text = f"## Solution Planning\nreport of {len(str(messages[0].content))} chars"
        elif ANALYST_MARK in first:
            text = self.analyst
        else:
            seed, answer = kwargs["seed"], self.answers[kwargs["seed"]]
            first_step = not any(isinstance(m, AIMessage) for m in messages)
            if answer is None:
                text = "<search> q </search>"
            elif self.search_first and first_step:
                text = f"<search> q{seed} </search>"
            else:
                text = f"<answer> {answer} </answer>"
        usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
        return AIMessage(content=text, usage_metadata=usage)


def run(answers: dict[int, str | None], **options: Any) -> tuple[dict[str, Any], SeededChat]:
    model = SeededChat(
        answers=answers,
        **{k: options.pop(k) for k in ("analyst", "search_first", "fail_reports") if k in options},
    )
    options.setdefault("max_turns", 1)
    graph = rollouts_graph(model, CountingSearcher(), budget=len(answers), **options)
    return graph.invoke({"question": "Q?"}), model


def test_identical_trajectories_share_one_report_call():
    state, model = run({0: "Paris", 1: "Paris"})
    assert model.count(REPORT_MARK) == 1
    first, copy = state["reports"]
    assert (first["trajectory"], first["reused_from"]) == ("t0", None)
    assert (copy["trajectory"], copy["index"], copy["reused_from"]) == ("t1", 1, "t0")
    assert copy["text"] == first["text"] and copy["answer"] == "Paris"
    assert state["counters"]["report_calls"] == 1 and state["counters"]["reports_reused"] == 1
    assert state["counters"]["report_prompt_tokens"] == 100  # the one call, counted once
    assert state["answer"] == "Paris"


def test_differing_trajectories_get_a_call_each():
    state, model = run({0: "Paris", 1: "London", 2: "Paris"})
    # t0 and t2 have the same steps and answer: two calls for three trajectories.
    assert model.count(REPORT_MARK) == 2 == state["counters"]["report_calls"]
    assert [r["reused_from"] for r in state["reports"]] == [None, None, "t0"]
    # Different steps with the same answer are different reports.
    state, model = run({0: "Paris", 1: "Paris"}, search_first=True, max_turns=2)
    assert [t["answer"] for t in state["trajectories"]] == ["Paris", "Paris"]
    assert model.count(REPORT_MARK) == 2 and "reports_reused" not in state["counters"]


def test_all_asks_for_every_report():
    state, model = run({0: "Paris", 1: "Paris"}, reports="all")
    assert model.count(REPORT_MARK) == 2 == state["counters"]["report_calls"]
    assert [r["reused_from"] for r in state["reports"]] == [None, None]
    assert "reports_reused" not in state["counters"]


@pytest.mark.parametrize("join", ["select", "majority"])
def test_contested_makes_no_report_when_the_answers_agree(join):
    state, model = run({0: "Paris", 1: "paris.", 2: None}, reports="contested", join=join)
    assert model.count(REPORT_MARK) == 0 and model.count(ANALYST_MARK) == 0
    assert state["reports"] == [] and "report_calls" not in state["counters"]
    assert state["answer"] == "Paris" and state["stop_reason"] == "answered"
    assert state["aggregation"]["method"] == ("unanimous" if join == "select" else "majority")
    assert "limit" not in state["aggregation"]


def test_contested_reports_answered_trajectories_for_the_analyst():
    answers = {0: "Paris", 1: "London", 2: None, 3: "Paris"}
    state, model = run(answers, reports="contested", join="select", analyst="<choice>2</choice>")
    assert [r["trajectory"] for r in state["reports"]] == ["t0", "t1", "t3"]
    assert [r["reused_from"] for r in state["reports"]] == [None, None, "t0"]
    assert model.count(REPORT_MARK) == 2 and state["counters"]["reports_reused"] == 1
    assert model.count(ANALYST_MARK) == 1 and state["counters"]["aggregate_calls"] == 1
    assert state["aggregation"]["method"] == "analyst" and state["answer"] == "London"
    assert state["aggregation"]["excluded"] == ["t2"]


def test_contested_without_the_analyst_reports_nothing():
    state, model = run({0: "Paris", 1: "London"}, reports="contested", join="majority")
    assert model.count(REPORT_MARK) == 0 and state["reports"] == []
    assert state["answer"] == "Paris"


def test_a_failed_report_call_is_shared_by_its_copies():
    state, model = run({0: "Paris", 1: "Paris"}, fail_reports=True, retry_policy=None)
    assert model.count(REPORT_MARK) == 1
    first, copy = state["reports"]
    assert first["error"] == copy["error"] == "ValueError: report prompt too long"
    assert copy["text"] == first["text"] and "Answer: Paris" in copy["text"]
    assert copy["reused_from"] == "t0"
    assert "report_calls" not in state["counters"] and state["counters"]["reports_reused"] == 1
    assert state["answer"] == "Paris"


def test_invalid_reports_value_names_the_valid_ones():
    with pytest.raises(ValueError, match="reports must be one of all, distinct, contested"):
        muse_graph(SeededChat(answers={}), CountingSearcher(), reports="some")
    with pytest.raises(ValueError, match="all, distinct, contested"):
        MuseContext(reports="every")


def trajectory(index: int, step: str, answer: str | None) -> dict[str, Any]:
    """A finished trajectory with the fields the router reads (steps shown to the report)."""
    messages = [
        {"role": "user", "content": f"prompt {index}"},
        {"role": "assistant", "content": step},
    ]
    return {"id": f"t{index}", "index": index, "messages": messages, "answer": answer, "steps": []}


@pytest.mark.parametrize(("reports", "goto"), [("contested", "aggregate"), ("distinct", "__end__")])
def test_router_goes_straight_to_aggregate_when_only_it_fits(reports, goto):
    """Two steps left: room for ``aggregate`` alone, not for ``report`` before it."""
    ctx = MuseContext(budget=2, rounds=0, reports=reports)
    found = [trajectory(0, "a", "Paris"), trajectory(1, "b", "paris")]
    state = {"question": "Q?", "trajectories": found, "dispatched": 2, "remaining_steps": 2}
    command = RouterNode(ctx, AgentInput(None)).route(state, None)
    assert command.goto == goto
    if goto == "__end__":  # the router's own vote, as before this setting existed
        assert command.update["aggregation"]["fallback"].startswith("recursion_limit")
    else:
        assert "limit" not in command.update


def test_plan_reports_groups_by_steps_and_answer():
    found: list[Any] = [trajectory(2, "a", "x"), trajectory(0, "a", "x"), trajectory(1, "b", "x")]
    tasks = plan_reports("Q", found, MuseContext())
    assert [t["trajectory"]["id"] for t in tasks] == ["t0", "t1"]
    assert tasks[0]["copies"] == [{"trajectory": "t2", "index": 2, "answer": "x"}]
    assert tasks[1]["copies"] == []
    # The same steps with another answer (a different stop) are not merged.
    found = [trajectory(0, "a", "x"), trajectory(1, "a", None)]
    assert len(plan_reports("Q", found, MuseContext())) == 2


def test_extracted_reports_need_no_model_call_and_still_feed_the_analyst():
    state, model = run(
        {0: "Paris", 1: "London"},
        search_first=True,
        max_turns=2,
        report_style="extract",
        join="select",
        analyst="<choice>2</choice>",
    )
    assert model.count(REPORT_MARK) == 0 and "report_calls" not in state["counters"]
    first = state["reports"][0]["text"]
    assert first.startswith("## Solution Planning")
    assert "- searched q0: found Title q0" in first and first.endswith("Answer: Paris")
    # The analyst read the extracted reports and its choice decided the answer.
    assert model.count(ANALYST_MARK) == 1 and state["answer"] == "London"
    with pytest.raises(ValueError, match="report_style must be one of auto, model, continue, ext"):
        MuseContext(report_style="short")  # type: ignore[arg-type]


def test_auto_reports_extract_for_raw_prompted_models_and_ask_chat_models():
    raw, raw_model = run({0: "Paris", 1: "London"}, prompt_style="raw", join="select")
    assert raw_model.count(REPORT_MARK) == 0 and "report_calls" not in raw["counters"]
    assert [r["text"].rsplit("Answer: ", 1)[1] for r in raw["reports"]] == ["Paris", "London"]
    assert raw_model.count(ANALYST_MARK) == 1 and raw["answer"] == "London"
    chat, chat_model = run({0: "Paris", 1: "London"}, join="select")
    assert MuseContext().report_style == "auto"
    assert chat_model.count(REPORT_MARK) == 2 and chat["counters"]["report_calls"] == 2


def test_extracted_report_of_a_trajectory_that_never_searched_nor_answered():
    from langgraph_parallel.parallel_muse.extract import extract_report

    messages = [{"role": "user", "content": "PROMPT"}, {"role": "assistant", "content": "hmm"}]
    text = extract_report({"messages": messages, "answer": None})
    assert "- no search" in text and "(no plan stated)" in text and text.endswith("unknown")


def test_a_continued_report_extends_the_agents_last_prompt():
    """report_style="continue": the trajectory's messages, then the instruction as a new turn."""
    from langchain_core.messages import HumanMessage, convert_to_messages

    from langgraph_parallel.models.replies import chat_turns, raw_text
    from langgraph_parallel.parallel_muse.report import report_messages
    from langgraph_parallel.prompts import REPORT_FOLLOWUP_PROMPT, REPORT_RAW_PRIMER

    stored = [
        {"role": "user", "content": "RULES\nQuestion: Q?\n"},
        {"role": "assistant", "content": "<think>t</think>\n<search> a ## b </search>"},
        {"role": "user", "content": "\n<information>(Title: A) a</information>\n"},
        {"role": "assistant", "content": "<answer> Paris </answer>"},
    ]
    trajectory = {"messages": stored, "answer": "Paris"}
    ctx = MuseContext(report_style="continue")
    raw = raw_text(report_messages("Q?", trajectory, ctx, raw=True))  # type: ignore[arg-type]
    # The agent's last prompt and its own output, byte for byte: the engine has them cached.
    last_prompt = raw_text(convert_to_messages(stored[:-1]))
    assert raw.startswith(last_prompt + stored[-1]["content"] + "\n\n")
    assert raw.endswith(REPORT_FOLLOWUP_PROMPT.strip() + REPORT_RAW_PRIMER)
    chat = report_messages("Q?", trajectory, ctx, raw=False)  # type: ignore[arg-type]
    assert chat_turns(chat[:-1]) == stored
    assert isinstance(chat[-1], HumanMessage) and chat[-1].content == REPORT_FOLLOWUP_PROMPT
    # The other style puts the steps into a new prompt: nothing of it is the agent's prefix.
    separate = raw_text(report_messages("Q?", trajectory, MuseContext(), raw=True))  # type: ignore[arg-type]
    assert not separate.startswith(stored[0]["content"]) and "<answer> Paris </answer>" in separate


def test_continued_reports_feed_the_analyst_and_are_shared_like_the_others():
    state, model = run(
        {0: "Paris", 1: "London", 2: "Paris"},
        report_style="continue",
        join="select",
        analyst="<choice>2</choice>",
    )
    # One call per distinct trajectory, each on the trajectory's messages plus the instruction.
    assert model.count(REPORT_MARK) == 0 and model.count(FOLLOWUP_MARK) == 2
    assert state["counters"]["report_calls"] == 2
    assert state["counters"]["reports_reused"] == 1
    assert all(r["text"].startswith("## Solution Planning") for r in state["reports"])
    assert model.count(ANALYST_MARK) == 1 and state["answer"] == "London"
