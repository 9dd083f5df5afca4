"""Retrying until a deadline: the policy's arithmetic, the errors it retries, graphs under it.

A model server that restarts refuses connections for a while; under
:func:`~langgraph_parallel.retry.deadline_retry_policy` the questions in flight wait for it
instead of ending with ``model_error``, and end with it only once the deadline is spent.
"""

from __future__ import annotations

import math
import time
from typing import Any

import httpx
import openai
import pytest
from langchain_core.exceptions import (
    ContextOverflowError,
    ModelConnectionError,
    ModelInvalidRequestError,
    ModelTimeoutError,
)
from langchain_openai.chat_models.base import OpenAIConnectionError
from pydantic import PrivateAttr

from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.apps.cli import build_parser
from langgraph_parallel.apps.registry import build_graph
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY, describe_error, is_transient
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.retry import JITTER_S, deadline_retry_policy, retry_waits
from tests.fakes import CountingSearcher, ScriptedChatModel, ToolCallingChatModel
from tests.servers import free_port

REQUEST = httpx.Request("POST", "http://127.0.0.1:8000/v1/completions")
ANSWER = "<answer> x </answer>"


def response(status: int) -> httpx.Response:
    return httpx.Response(status, request=REQUEST)


def ask(model: Any, policy: Any) -> dict[str, Any]:
    graph = create_parallel_search_graph(model, CountingSearcher(), retry_policy=policy)
    return graph.invoke({"question": "Q?"})


@pytest.mark.parametrize("jitter", [True, False])
@pytest.mark.parametrize("deadline", [0.0, 0.4, 1.5, 3.0, 10.0, 60.0, 600.0])
def test_the_waits_fit_the_deadline_and_one_more_retry_would_not(
    deadline: float, jitter: bool
) -> None:
    policy = deadline_retry_policy(deadline, jitter=jitter)
    least, most = retry_waits(policy)
    assert least <= most <= deadline  # jitter counted at its full second
    longer = policy._replace(max_attempts=policy.max_attempts + 1)
    assert retry_waits(longer)[1] > deadline
    # What that means for an outage: the last attempt comes at most one wait before the end.
    retries = policy.max_attempts - 1
    assert least > deadline - policy.max_interval - (retries + 1) * JITTER_S * jitter
    assert policy.retry_on is is_transient and policy.jitter is jitter


def test_the_schedule_with_the_defaults() -> None:
    policy = deadline_retry_policy(60)
    assert (policy.max_attempts, retry_waits(policy)) == (13, (47.5, 59.5))
    steady = deadline_retry_policy(60, jitter=False)
    assert (steady.max_attempts, retry_waits(steady)) == (15, (57.5, 57.5))
    # It starts as the default policy does: a deadline of 3.5 s is the default's 3 attempts.
    short = deadline_retry_policy(3.5)
    assert short.max_attempts == DEFAULT_RETRY_POLICY.max_attempts
    assert retry_waits(short) == retry_waits(DEFAULT_RETRY_POLICY) == (1.5, 3.5)
    assert deadline_retry_policy(0).max_attempts == 1  # no waiting: no retry


@pytest.mark.parametrize(
    ("deadline", "options", "says"),
    [
        (-1.0, {}, "deadline_s must be"),
        (math.nan, {}, "deadline_s must be"),
        (math.inf, {}, "deadline_s must be"),
        (60.0, {"initial_interval": 0.0}, "initial_interval must be"),
        (60.0, {"max_interval": -1.0}, "max_interval must be"),
        (60.0, {"backoff_factor": 0.5}, "backoff_factor must be"),
        (1e6, {}, "needs more than 1000 retries; raise max_interval"),
        # backoff_factor ** 2 is past the float range: LangGraph could not compute that wait
        (
            100.0,
            {"initial_interval": 1e-300, "backoff_factor": 1e200, "max_interval": 1.0},
            "needs more than 2 retries",
        ),
    ],
)
def test_bad_settings_are_refused_saying_what_to_change(
    deadline: float, options: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        deadline_retry_policy(deadline, **options)


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionRefusedError(111, "Connection refused"), True),
        (ConnectionResetError(104, "Connection reset by peer"), True),
        (httpx.ConnectError("refused", request=REQUEST), True),
        (httpx.ConnectTimeout("timed out", request=REQUEST), True),
        (httpx.ReadError("reset", request=REQUEST), True),
        (httpx.RemoteProtocolError("Server disconnected", request=REQUEST), True),
        (httpx.HTTPStatusError("502", request=REQUEST, response=response(502)), True),
        (openai.APIConnectionError(request=REQUEST), True),
        (openai.APITimeoutError(request=REQUEST), True),
        (OpenAIConnectionError(message="Connection error.", request=REQUEST), True),
        (openai.InternalServerError("Bad Gateway", response=response(502), body=None), True),
        (openai.InternalServerError("starting", response=response(503), body=None), True),
        (ModelConnectionError("unreachable"), True),
        (ModelTimeoutError("timed out"), True),
        (openai.NotFoundError("model not served", response=response(404), body=None), False),
        (ModelInvalidRequestError("bad request"), False),
        (ContextOverflowError("prompt too long"), False),
    ],
)
def test_an_unreachable_server_is_transient(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_what_the_openai_client_raises_at_a_closed_port_is_transient() -> None:
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="x")
    with pytest.raises(openai.APIConnectionError) as caught:
        client.with_options(max_retries=0).completions.create(model="m", prompt="Q")
    # The cause is httpx's ConnectError, or httpx2's under openai 3 (hence the rule by name).
    assert type(caught.value.__cause__).__name__ == "ConnectError"
    assert is_transient(caught.value) and is_transient(caught.value.__cause__)


# Small waits (10 ms doubling to 40 ms): the attempt count is what the tests look at.
SMALL: dict[str, Any] = {"initial_interval": 0.01, "max_interval": 0.04, "jitter": False}


@pytest.mark.parametrize(
    "error",
    [openai.APIConnectionError(request=REQUEST), httpx.ConnectError("refused", request=REQUEST)],
    ids=["openai", "httpx"],
)
def test_failures_within_the_deadline_cost_time_and_beyond_it_the_answer(
    error: Exception,
) -> None:
    policy = deadline_retry_policy(0.3, **SMALL)
    attempts = policy.max_attempts
    assert attempts > DEFAULT_RETRY_POLICY.max_attempts
    model = ScriptedChatModel(script=[error] * (attempts - 1) + [ANSWER])
    answered = ask(model, policy)
    assert answered["answer"] == "x" and answered["stop_reason"] == "answered"
    assert len(model.calls) == attempts and answered["counters"]["llm_calls"] == 1
    model = ScriptedChatModel(script=[error] * attempts + [ANSWER])
    lost = ask(model, policy)
    assert lost["answer"] is None and len(model.calls) == attempts
    assert lost["stop_reason"] == f"model_error: {describe_error(error)}"


class OutageModel(ScriptedChatModel):
    """Refuses connections for ``down_s`` seconds from its first call, then replays ``script``."""

    down_s: float
    _since: float | None = PrivateAttr(default=None)
    _refused: int = PrivateAttr(default=0)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> Any:
        now = time.monotonic()
        self._since = now if self._since is None else self._since
        if now - self._since < self.down_s:
            self._refused += 1
            raise openai.APIConnectionError(request=REQUEST)
        return super()._generate(messages, stop, **kwargs)


def test_an_outage_shorter_than_the_waits_is_ridden_out() -> None:
    policy = deadline_retry_policy(0.5, **SMALL)
    least, _ = retry_waits(policy)
    # time.sleep never returns early, so the last attempt comes >= least s after the first.
    model = OutageModel(script=[ANSWER], down_s=0.8 * least)
    state = ask(model, policy)
    assert state["answer"] == "x" and model._refused >= 1
    never = OutageModel(script=[ANSWER], down_s=3600.0)
    state = ask(never, policy)
    assert state["stop_reason"] == "model_error: APIConnectionError: Connection error."
    assert never._refused == policy.max_attempts


@pytest.mark.parametrize("jitter", [False, True])
def test_langgraph_waits_as_retry_waits_says(monkeypatch: pytest.MonkeyPatch, jitter: bool) -> None:
    # LangGraph's own node retry loop, its sleeps recorded instead of slept.
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    policy = deadline_retry_policy(30.0, jitter=jitter)
    model = ScriptedChatModel(script=[httpx.ConnectError("refused", request=REQUEST)])
    state = ask(model, policy)
    assert state["stop_reason"] == "model_error: ConnectError: refused"
    assert len(model.calls) == policy.max_attempts == len(sleeps) + 1
    least, most = retry_waits(policy)
    intervals = [min(5.0, 0.5 * 2**n) for n in range(len(sleeps))]
    if jitter:
        assert all(i <= s <= i + JITTER_S for i, s in zip(intervals, sleeps, strict=True))
        assert least <= sum(sleeps) <= most <= 30.0
    else:
        assert sleeps == intervals and sum(sleeps) == least


def test_ask_and_bench_take_a_retry_deadline(capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph_parallel.apps.arguments import retry_options

    parser = build_parser()
    asked = parser.parse_args(["ask", "Q?", "--retry-deadline", "60"])
    assert retry_options(asked.retry_deadline) == {"retry_policy": deadline_retry_policy(60)}
    assert "a server back within 47.5 s is waited for" in capsys.readouterr().err
    unset = parser.parse_args(["ask", "Q?"]).retry_deadline
    assert retry_options(unset) == {}  # the factories' default
    bench = ["bench", "--dataset", "d", "--graphs", "parallel-search", "--out", "o"]
    served = parser.parse_args([*bench, "--server", "http://h:8000", "--retry-deadline", "60"])
    assert (
        BenchSpec.from_args(served)
        .command()
        .endswith("--index hybrid --server http://h:8000 --retry-deadline 60")
    )
    assert "--retry-deadline" not in BenchSpec.from_args(parser.parse_args(bench)).command()
    for bad in ["-1", "soon", "inf", "1e9"]:
        with pytest.raises(SystemExit):
            parser.parse_args(["ask", "Q?", "--retry-deadline", bad])
        assert "argument --retry-deadline: expected seconds from 0 to 5987.5, got" in (
            capsys.readouterr().err
        )


@pytest.mark.parametrize(
    "graph",
    ["parallel-search", "direct", "parallel-muse", "rollouts-majority", "parallel-muse-agent"],
)
def test_every_named_graph_retries_under_the_policy_it_is_given(graph: str) -> None:
    policy = deadline_retry_policy(60)
    built = build_graph(
        graph, ToolCallingChatModel(script=[ANSWER]), CountingSearcher(), retry_policy=policy
    )
    policies = [node.retry_policy for node in built.nodes.values()]
    assert (policy,) in policies and set(policies) <= {None, (policy,)}
