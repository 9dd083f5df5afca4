"""ParallelMuse with a judge of your choice: reports and join by another model than the policy.

The rollouts are our loop over a scripted policy; the judge is a real provider class
(``ChatOpenAI``, ``ChatAnthropic``, ``chat_openai_for_server``'s ``ChatOpenAI``) talking HTTP to a
local stub that records each request body and answers in the provider's own shape, so the whole
run goes through the classes' real payload building and response parsing, offline.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from langgraph_parallel import MuseContext, create_parallel_muse_graph, parallel_search_rollouts
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.parallel_muse.accounting import muse_costs
from langgraph_parallel.prompts import ANALYST_RAW_PRIMER, REPORT_RAW_PRIMER
from tests.fakes import CountingSearcher
from tests.local_http import JsonHandler, local_server

QUESTION = "Which city hosts the Louvre?"
ANSWERS = {0: "Paris", 1: "London", 2: "London"}  # the vote says London
JUDGE_USAGE = {"prompt": 1000, "completion": 40}


class Policy(OneReplyChatModel):
    """The rollouts' model: step 0 searches ``q<seed>``, step 1 answers ``ANSWERS[seed]``."""

    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        with self._lock:
            self._calls.append(list(messages))
            self._kwargs.append(kwargs)
        if "Compress the" in str(messages[0].content):  # its own report call
            text = "## Solution Planning\nown report"
        elif "numbered reports" in str(messages[0].content):
            text = "<choice>1</choice>"
        elif any(isinstance(m, AIMessage) for m in messages):
            text = f"<think> found it </think>\n<answer> {ANSWERS[kwargs['seed']]} </answer>"
        else:
            text = f"<think> look it up </think>\n<search> q{kwargs['seed']} </search>"
        usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
        return AIMessage(content=text, usage_metadata=usage)


class Judge:
    """What the stub judge server saw; it names report 1 (the minority answer, Paris)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def text(self, prompt: str) -> str:
        if "numbered reports" in prompt:
            return "Report 1 cites the passage.\n<choice>1</choice>\n<answer>Paris</answer>"
        # A report naming the search it saw, so the analyst's prompt shows whose report it is.
        query = re.search(r"<search> (q\d) </search>", prompt)
        return f"## Solution Planning\nreport-of-{query.group(1) if query else 'none'}"

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append((path, body))
        if path == "/v1/messages":  # Anthropic's Messages API
            prompt = json.dumps(body["messages"])
            return {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": self.text(prompt)}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": JUDGE_USAGE["prompt"],
                    "output_tokens": JUDGE_USAGE["completion"],
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            }
        prompt = json.dumps(body["messages"])  # OpenAI's (and vLLM's) chat completions
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.text(prompt)},
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": JUDGE_USAGE["prompt"],
                "completion_tokens": JUDGE_USAGE["completion"],
                "total_tokens": sum(JUDGE_USAGE.values()),
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }

    def prompts(self) -> list[str]:
        return [json.dumps(body["messages"]) for _, body in self.requests]


def judge_handler(judge: Judge) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": "judge-7b", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_json(judge.reply(self.path, body))

        def log_message(self, *_: Any) -> None:
            pass

    return Handler


@pytest.fixture
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Judge, str]]:
    judge = Judge()
    with local_server(judge_handler(judge), monkeypatch) as root:
        yield judge, root


def run(analyst: Any, **settings: Any) -> tuple[dict[str, Any], Policy]:
    policy = Policy()
    rollouts = parallel_search_rollouts(policy, CountingSearcher())
    context = MuseContext(**{"budget": 3, "max_turns": 2, **settings})
    graph = create_parallel_muse_graph(rollouts, context=context, model=analyst)
    return graph.invoke({"question": QUESTION}), policy


def check_the_judge_decided(judge: Judge, name: str, state: dict[str, Any], policy: Policy) -> None:
    """The judge wrote every report and the join; the policy ran every agent step."""
    assert [t["answer"] for t in state["trajectories"]] == ["Paris", "London", "London"]
    # Three distinct trajectories (different searches): three reports, then one analyst call.
    assert len(judge.requests) == 4
    assert {body["model"] for _, body in judge.requests} == {name}
    *reports, analyst = judge.prompts()
    few_shot = str(policy.calls[0][0].content)  # the policy's opening prompt: rules and demos
    for seed, prompt in enumerate(sorted(reports, key=lambda p: re.findall(r"q\d", p)[0])):
        assert QUESTION in prompt and f"<search> q{seed} </search>" in prompt
        assert f"Text about q{seed}." in prompt  # the passages it read
        assert few_shot[:200] not in prompt  # the trajectory, not the policy's raw transcript
    # The analyst reads the judge's own reports, numbered, not the transcripts.
    for k, query in enumerate(("q0", "q1", "q2"), start=1):
        assert f"Report {k}:\\n## Solution Planning\\nreport-of-{query}" in analyst
    assert "Text about" not in analyst and few_shot[:200] not in analyst
    # The answer is the judge's pick (report 1, Paris), not the vote's (London).
    assert state["answer"] == "Paris"
    assert state["aggregation"]["method"] == "analyst"
    assert state["aggregation"]["votes"] == {"paris": 1.0, "london": 2.0}
    # The policy ran the agent steps only, and its tokens are the agent's; the judge's apart.
    assert all("Compress" not in str(m[0].content) for m in policy.calls)
    counters = state["counters"]
    assert counters["llm_calls"] == len(policy.calls) == 6
    assert counters["prompt_tokens"] == 100 * len(policy.calls)
    assert counters["report_calls"] == 3 and counters["aggregate_calls"] == 1
    assert counters["report_prompt_tokens"] == 3 * JUDGE_USAGE["prompt"]
    assert counters["aggregate_completion_tokens"] == JUDGE_USAGE["completion"]
    costs = muse_costs(state)
    assert costs["agent_prompt_tokens"] == 600 and costs["agent_generated"] == 60
    assert costs["reduction_calls"] == 4
    assert costs["reduction_prompt_tokens"] == 4 * JUDGE_USAGE["prompt"]
    assert costs["reduction_cost"] == 4 * sum(JUDGE_USAGE.values())


def test_chatopenai_judges_the_policys_rollouts(judge_url: tuple[Judge, str]) -> None:
    import httpx
    from langchain_openai import ChatOpenAI

    judge, root = judge_url
    analyst = ChatOpenAI(
        model="gpt-judge",
        api_key="not-used",
        base_url=root + "/v1",
        max_retries=0,
        http_client=httpx.Client(trust_env=False),
    )
    state, policy = run(analyst)
    check_the_judge_decided(judge, "gpt-judge", state, policy)
    paths = {path for path, _ in judge.requests}
    assert paths == {"/v1/chat/completions"}
    for _, body in judge.requests:
        # Bounded by report_max_tokens; sampled as the judge was built (no temperature forced).
        assert body["max_completion_tokens"] == 256 and "temperature" not in body
        assert "logprobs" not in body  # the join needs none from the judge


def test_chatanthropic_judges_the_policys_rollouts(judge_url: tuple[Judge, str]) -> None:
    from langchain_anthropic import ChatAnthropic

    judge, root = judge_url
    analyst = ChatAnthropic(model="claude-judge", api_key="not-used", base_url=root, max_retries=0)
    state, policy = run(analyst)
    check_the_judge_decided(judge, "claude-judge", state, policy)
    assert {path for path, _ in judge.requests} == {"/v1/messages"}
    for _, body in judge.requests:
        assert body["max_tokens"] == 256 and "temperature" not in body
        (message,) = body["messages"]
        assert message["role"] == "user"


def test_a_served_judge_reads_in_its_own_style(judge_url: tuple[Judge, str]) -> None:
    from langgraph_parallel.models.server import chat_openai_for_server

    judge, root = judge_url
    # A larger model served on this machine, OpenAI-compatible (vLLM's shape): the rollouts'
    # prompt_style is raw, the judge is a chat model and reads chat prompts, with no primers.
    analyst = chat_openai_for_server(root + "/v1", "judge-7b", max_retries=0)
    state, policy = run(analyst, prompt_style="chat")
    check_the_judge_decided(judge, "judge-7b", state, policy)
    for _, body in judge.requests:
        # The sampling it was built with (greedy, logprobs on) is what it is called with.
        assert body["temperature"] == 0.0 and body["logprobs"] is True
    # The rollouts' raw prompt style is theirs: a chat judge still gets chat prompts.
    judge.requests.clear()
    state, policy = run(analyst, prompt_style="raw", report_style="model")
    assert state["answer"] == "Paris" and len(judge.requests) == 4
    assert all(
        REPORT_RAW_PRIMER.strip() not in p and ANALYST_RAW_PRIMER.strip() not in p
        for p in judge.prompts()
    )


def test_the_policy_as_its_own_analyst_stays_greedy() -> None:
    policy = Policy()
    rollouts = parallel_search_rollouts(policy, CountingSearcher())
    graph = create_parallel_muse_graph(
        rollouts, context=MuseContext(budget=3, max_turns=2, join="select"), model=policy
    )
    state = graph.invoke({"question": QUESTION})
    assert state["answer"] == "Paris" and state["aggregation"]["method"] == "analyst"
    # Its own reduction calls (3 reports, 1 join, after the 6 agent steps) are greedy; its agent
    # steps sample at the run's temperature.
    own = [k for m, k in zip(policy.calls, policy._kwargs, strict=True) if "seed" not in k]
    assert len(policy.calls) == 10 and len(own) == 4
    assert {(k["temperature"], k["max_tokens"]) for k in own} == {(0.0, 256)}


def test_a_judge_cannot_continue_the_policys_transcript(judge_url: tuple[Judge, str]) -> None:
    from langchain_openai import ChatOpenAI

    _, root = judge_url
    analyst = ChatOpenAI(model="gpt-judge", api_key="not-used", base_url=root + "/v1")
    with pytest.raises(UserError, match="report_style='model'"):
        run(analyst, report_style="continue")
