"""Tool and engine faults: reported per question or per trajectory, retried when transient."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.types import RetryPolicy

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.overflow import LEFT_OUT
from langgraph_parallel.errors import (
    DEFAULT_RETRY_POLICY,
    call_with_retry,
    is_transient,
    retry_now,
)
from tests.fakes import (
    CountingSearcher,
    FlakySearcher,
    FuzzChatModel,
    ScriptedChatModel,
    muse_graph,
    rollouts_graph,
)

FAST = RetryPolicy(initial_interval=0.001, max_attempts=3, jitter=False, retry_on=is_transient)
TOO_LONG = ValueError("This model's maximum context length is 2048 tokens")


def observation(state: dict[str, Any]) -> str:
    return [m.content for m in state["transcript"] if isinstance(m, HumanMessage)][1]


def ask(model: Any, searcher: Any, **options: Any) -> dict[str, Any]:
    options.setdefault("retry_policy", FAST)
    graph = create_parallel_search_graph(model, searcher, **options)
    return graph.invoke({"question": "Q?"})


def response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", "http://test/v1/chat"))


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionError("reset"), True),
        (TimeoutError(), True),
        (httpx.ConnectError("refused"), True),
        (httpx.HTTPStatusError("503", request=response(503).request, response=response(503)), True),
        (openai.RateLimitError("slow down", response=response(429), body=None), True),
        (openai.InternalServerError("oops", response=response(500), body=None), True),
        (openai.APIConnectionError(request=response(200).request), True),
        (openai.BadRequestError("context length", response=response(400), body=None), False),
        (openai.AuthenticationError("bad key", response=response(401), body=None), False),
        (TOO_LONG, False),
        (RuntimeError("bug"), False),
    ],
)
def test_only_transient_errors_are_retried(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_retry_now_needs_attempts_left_and_a_known_attempt_number() -> None:
    def runtime(attempt: int | None) -> Any:
        return SimpleNamespace(execution_info=SimpleNamespace(node_attempt=attempt))

    error = ConnectionError("x")
    assert retry_now(error, runtime(1), FAST) and retry_now(error, runtime(2), FAST)
    assert not retry_now(error, runtime(3), FAST)  # the last attempt reports
    assert not retry_now(error, runtime(None), FAST)  # older LangGraph: report at once
    assert not retry_now(error, runtime(1), None)
    assert not retry_now(TOO_LONG, runtime(1), FAST)
    assert DEFAULT_RETRY_POLICY.max_attempts == 3


def test_an_error_the_policy_itself_does_not_retry_is_reported_not_raised() -> None:
    # LangGraph's default retry_on skips OSError (TimeoutError among them): re-raising it for a
    # retry that never comes would end the run with the exception instead of a stop reason.
    policy = RetryPolicy(initial_interval=0.001, max_attempts=3)
    model = ScriptedChatModel(script=[TimeoutError("slow"), "<answer> x </answer>"])
    state = ask(model, CountingSearcher(), retry_policy=policy)
    assert state["stop_reason"] == "model_error: TimeoutError: slow" and len(model.calls) == 1
    # A policy that does retry it still gets the retry.
    model = ScriptedChatModel(script=[TimeoutError("slow"), "<answer> x </answer>"])
    by_class = policy._replace(retry_on=(TimeoutError,))
    assert ask(model, CountingSearcher(), retry_policy=by_class)["answer"] == "x"


def fails_twice() -> Callable[[], str]:
    """A call that drops its connection twice, then answers "ok"."""
    outcomes = iter([ConnectionError("a"), ConnectionError("b"), "ok"])

    def call() -> str:
        item = next(outcomes)
        if isinstance(item, Exception):
            raise item
        return item

    return call


def test_call_with_retry_backs_off_then_gives_up() -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(initial_interval=0.5, backoff_factor=2.0, max_attempts=3, jitter=False)
    assert call_with_retry(fails_twice(), policy, sleep=sleeps.append) == "ok"
    assert sleeps == [0.5, 1.0]
    with pytest.raises(ConnectionError):
        call_with_retry(
            lambda: (_ for _ in ()).throw(ConnectionError("c")), policy, sleep=sleeps.append
        )
    with pytest.raises(ValueError):  # not transient: one attempt
        call_with_retry(lambda: (_ for _ in ()).throw(TOO_LONG), policy, sleep=sleeps.append)
    assert len(sleeps) == 4


def test_call_with_retry_adds_jitter_like_langgraph_node_retries() -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(initial_interval=0.5, backoff_factor=2.0, max_attempts=3, jitter=True)
    assert call_with_retry(fails_twice(), policy, sleep=sleeps.append) == "ok"
    assert 0.5 <= sleeps[0] <= 1.5 and 1.0 <= sleeps[1] <= 2.0
    assert sleeps != [0.5, 1.0]  # a zero draw twice has probability zero


def test_one_transient_rule_covers_http_status_transport_names_and_causes() -> None:
    from langgraph_parallel.retrieval.tavily import TavilyError

    class Timeout(OSError):  # requests' name; the client stays an optional import
        pass

    assert is_transient(TavilyError("Error 429: slow down", status=429))
    assert is_transient(TavilyError("Error 503", status=503))
    assert not is_transient(TavilyError("Error 401: bad key", status=401))
    assert is_transient(Timeout("read timed out"))
    wrapped = TavilyError("gateway")
    wrapped.__cause__ = Timeout("read timed out")
    assert is_transient(wrapped)
    assert not is_transient(TOO_LONG)
    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first  # a loop ends the walk, not the run
    assert not is_transient(first)


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("fatal", "search failed: RuntimeError: injected search bug"),
        ("transient", "search failed: ConnectionError: injected search fault"),
        ("empty", "No results."),
        ("slow", "search timed out after 0.05 s"),
        # ``garbage`` at a searcher's first call is a wrong searcher, refused; after passages,
        # a failing search like these (tests/unit/test_bad_input.py).
    ],
)
def test_a_failing_tool_is_an_observation_and_the_run_goes_on(mode: str, says: str) -> None:
    # Only the slow mode may time out: it sleeps 40x the timeout; the others get 10 s, so a
    # loaded machine cannot turn their fault into a timeout.
    searcher = FlakySearcher(1.0, modes=[mode], delay=2.0)
    model = ScriptedChatModel(script=["<search> a </search>", "<answer> b </answer>"])
    state = ask(model, searcher, search_timeout=0.05 if mode == "slow" else 10.0)
    assert says in observation(state)
    assert state["answer"] == "b" and state["stop_reason"] == "answered"
    expected_calls = FAST.max_attempts if mode == "transient" else 1
    assert searcher.calls == expected_calls


def test_a_transient_search_fault_is_retried_by_the_node_retry_policy() -> None:
    failures = iter([ConnectionError("blip")])
    searcher = CountingSearcher(fail=lambda q: next(failures, None))
    model = ScriptedChatModel(script=["<search> a </search>", "<answer> c </answer>"])
    state = ask(model, searcher)
    assert [r.get("error") for r in state["search_results"]] == [None]
    assert searcher.queries == ["a", "a"]  # the branch ran again
    assert state["counters"]["sub_queries"] == 1  # the retried branch is not counted twice


def test_a_fault_in_a_joined_fan_out_search_falls_back_to_one_search_per_sub_query() -> None:
    failures = iter([ConnectionError("blip")])
    searcher = CountingSearcher(fail=lambda q: next(failures, None))
    model = ScriptedChatModel(script=["<search> a ## b </search>", "<answer> c </answer>"])
    state = ask(model, searcher)
    assert [r.get("error") for r in state["search_results"]] == [None, None]
    # the joined call (both queries), then each alone
    assert sorted(searcher.queries) == ["a", "a", "b", "b"]
    assert state["counters"]["sub_queries"] == 2


def test_a_transient_model_fault_is_retried_then_answered() -> None:
    model = ScriptedChatModel(script=[ConnectionError("reset"), "<answer> x </answer>"])
    state = ask(model, CountingSearcher())
    assert state["answer"] == "x" and len(model.calls) == 2
    assert state["counters"]["llm_calls"] == 1


def test_context_too_long_is_not_retried_but_tried_once_trimmed_then_reported() -> None:
    model = ScriptedChatModel(script=["<search> a </search>", TOO_LONG])
    state = ask(model, CountingSearcher())
    # No transient retry; one answer-only call with the passages left out, refused too.
    assert state["answer"] is None and len(model.calls) == 3
    assert model.calls[-1][-1].text == LEFT_OUT
    assert state["stop_reason"] == f"model_error: ValueError: {TOO_LONG}"


def test_a_transient_fault_on_every_attempt_is_reported() -> None:
    model = ScriptedChatModel(script=[ConnectionError("down")])
    state = ask(model, CountingSearcher())
    assert state["stop_reason"] == "model_error: ConnectionError: down"
    assert len(model.calls) == FAST.max_attempts


@pytest.mark.parametrize("decompose", [True, False])
def test_thirty_percent_injected_faults_every_run_still_finishes(decompose: bool) -> None:
    model = FuzzChatModel(
        outputs=["<search> a ## b </search>", "<search> c </search>", "<answer> d </answer>"],
        fail_rate=0.3,
        seed=1,
    )
    searcher = FlakySearcher(0.3, modes=["transient", "fatal", "empty"], seed=2)
    graph = create_parallel_search_graph(model, searcher, decompose=decompose, retry_policy=FAST)
    states = []
    for _ in range(60):
        model.reset(model.outputs)
        states.append(graph.invoke({"question": "Q?"}))
    assert model.failures > 20 and sum(searcher.failures.values()) > 20
    reasons = [s["stop_reason"] for s in states]
    assert all(r == "answered" or r.startswith("model_error: ConnectionError") for r in reasons)
    # three attempts turn a 30% fault rate into about 3% failed calls
    assert reasons.count("answered") >= 50


def fails_on_seed(bad_seeds: set[int], error: Exception = TOO_LONG) -> Any:
    class Model(FuzzChatModel):
        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> Any:
            if kwargs.get("seed") in bad_seeds:
                raise error
            return super()._generate(messages, stop, **kwargs)

    return Model(outputs=["<search> q </search>", "<answer> x </answer>"])


def test_a_failing_muse_branch_is_reported_and_the_others_still_aggregate() -> None:
    graph = rollouts_graph(fails_on_seed({1}), CountingSearcher(), budget=3)
    state = graph.invoke({"question": "Q?"})
    by_id = {t["id"]: t for t in state["trajectories"]}
    assert by_id["t1"]["stop_reason"] == f"model_error: ValueError: {TOO_LONG}"
    assert by_id["t1"]["answer"] is None
    assert state["answer"] == "x" and state["stop_reason"] == "answered"
    assert state["aggregation"]["excluded"] == ["t1"]
    assert len(state["reports"]) == 3


def test_every_muse_branch_failing_is_a_stated_no_answer() -> None:
    graph = muse_graph(fails_on_seed({0, 1, 2}), CountingSearcher(), budget=3)
    state = graph.invoke({"question": "Q?"})
    assert state["answer"] is None and state["stop_reason"].startswith("no_answer: ")
    assert all(t["stop_reason"].startswith("model_error: ") for t in state["trajectories"])


def test_transient_muse_faults_are_retried_by_the_rollout_nodes() -> None:
    model = FuzzChatModel(
        outputs=["<search> q </search>", "<answer> x </answer>"], fail_rate=0.3, seed=3
    )
    searcher = FlakySearcher(0.3, seed=4)
    graph = rollouts_graph(model, searcher, budget=4, retry_policy=FAST)
    for _ in range(10):
        model.reset(model.outputs)
        state = graph.invoke({"question": "Q?"})
        assert state["stop_reason"] == "answered"
    assert model.failures > 5 and sum(searcher.failures.values()) > 5


def flaky_first_calls(failures_per_seed: int) -> tuple[Any, dict[int, int]]:
    """A model whose first ``failures_per_seed`` steps per seed (branch) drop the connection.

    Returns the model and the number of calls it failed, per seed.
    """
    failed: dict[int, int] = {}
    lock = threading.Lock()

    class Model(FuzzChatModel):
        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> Any:
            if "seed" not in kwargs:  # reports and the analyst: not a rollout step
                return super()._generate(messages, stop, **kwargs)
            seed = int(kwargs["seed"])
            with lock:
                fail = failed.get(seed, 0) < failures_per_seed
                failed[seed] = failed.get(seed, 0) + int(fail)
            if fail:
                raise ConnectionError(f"dropped (seed {seed})")
            return super()._generate(messages, stop, **kwargs)

    return Model(outputs=["<answer> x </answer>"]), failed


def test_a_rollouts_model_call_is_retried_by_the_think_node_retry_policy() -> None:
    # Two attempts: the node's RetryPolicy re-runs think after the first dropped connection.
    two = RetryPolicy(initial_interval=0.001, max_attempts=2, jitter=False, retry_on=is_transient)
    model, failed = flaky_first_calls(1)
    graph = rollouts_graph(model, CountingSearcher(), budget=2, retry_policy=two)
    steps, final = set(), {}
    for mode, chunk in graph.stream({"question": "Q?"}, stream_mode=["custom", "values"]):
        if mode == "values":
            final = chunk
        elif chunk["event"] == "step":  # each rollout's own steps stream, with its id
            steps.add((chunk["rollout"], chunk["action"]))
    assert steps == {("t0", "answer"), ("t1", "answer")}
    assert final["answer"] == "x"
    assert [t["stop_reason"] for t in final["trajectories"]] == ["answered", "answered"]
    assert failed == {0: 1, 1: 1} and final["counters"]["llm_calls"] == 2  # a retry is no step
    # Without retries, or with fewer attempts than faults, each trajectory ends instead.
    for policy, faults in ((None, 1), (two, 2)):
        model, failed = flaky_first_calls(faults)
        graph = rollouts_graph(model, CountingSearcher(), budget=2, retry_policy=policy)
        state = graph.invoke({"question": "Q?"})
        assert state["answer"] is None
        assert [t["stop_reason"] for t in state["trajectories"]] == [
            f"model_error: ConnectionError: dropped (seed {seed})" for seed in (0, 1)
        ]
        assert failed == {0: faults, 1: faults}


def test_failed_report_and_analyst_calls_fall_back() -> None:
    class Model(FuzzChatModel):
        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> Any:
            prompt = str(messages[0].content)
            if "Compress the" in prompt or "numbered reports" in prompt:
                raise TOO_LONG
            # Each rollout's answer from its own seed; no shared script (the three rollouts
            # call at once, and a script set per call raced between them).
            answer = AIMessage(content=f"<answer> a{kwargs.get('seed', 0) % 2} </answer>")
            return ChatResult(generations=[ChatGeneration(message=answer)])

    graph = rollouts_graph(Model(), CountingSearcher(), budget=3, join="select")
    state = graph.invoke({"question": "Q?"})
    assert all(r["error"] == f"ValueError: {TOO_LONG}" for r in state["reports"])
    assert state["aggregation"]["method"] == "majority"
    assert state["aggregation"]["analyst"].startswith("analyst call failed: ValueError")
    assert state["answer"] == "a0"


class Killed(BaseException):
    """Stands in for the process dying: no node catches a BaseException."""


def test_a_run_killed_inside_the_fan_out_resumes_without_repeating_finished_branches() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    a_saved = threading.Event()

    class Saver(InMemorySaver):
        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            super().put_writes(config, writes, task_id, task_path)
            if any(channel == "search_results" for channel, _ in writes):
                a_saved.set()  # only branch "a" ever writes results in the first run

    def dies_on_b(query: str) -> BaseException | None:
        if query != "b":
            return None
        # Die once branch "a" has finished and its write is saved (LangGraph saves each
        # finished branch's writes at once); a branch still running when the process dies
        # would simply run again.
        assert a_saved.wait(10)
        return Killed()

    class Searcher(CountingSearcher):
        def batch_search(self, queries: Any, k: int = 3) -> Any:
            if len(queries) > 1:  # the fan-out's joined call fails: each branch searches alone
                raise ConnectionError("joined search down")
            if self.fail and (error := self.fail(queries[0])):
                raise error  # a BaseException passes the node's `except Exception`
            return super().batch_search(queries, k)

    saver, config = Saver(), {"configurable": {"thread_id": "fan-out"}}
    script = ["<search> a ## b </search>", "<answer> c </answer>"]
    first = Searcher(fail=dies_on_b)  # type: ignore[arg-type]
    graph = create_parallel_search_graph(
        ScriptedChatModel(script=script), first, checkpointer=saver
    )
    with pytest.raises(Killed):
        graph.invoke({"question": "Q?"}, config, durability="sync")
    assert first.queries == ["a"]
    second = CountingSearcher()
    model = ScriptedChatModel(script=script[1:])
    graph = create_parallel_search_graph(model, second, checkpointer=saver)
    final = graph.invoke(None, config)
    assert second.queries == ["b"]  # only the branch that died runs again
    assert [r["query"] for r in final["search_results"]] == ["a", "b"]
    assert final["counters"]["sub_queries"] == 2 and final["answer"] == "c"


def test_reported_error_is_the_one_failure_rule_of_the_nodes() -> None:
    from langgraph_parallel.errors import UserError, reported_error

    policy = RetryPolicy(max_attempts=3, retry_on=is_transient)
    first, last = (SimpleNamespace(execution_info=SimpleNamespace(node_attempt=n)) for n in (1, 3))
    with pytest.raises(UserError):  # a set-up problem is never swallowed
        reported_error(UserError("fix the corpus path"), last, policy)
    transient = ConnectionError("reset by peer")
    with pytest.raises(ConnectionError):  # re-raised for the node's RetryPolicy
        reported_error(transient, first, policy)
    assert reported_error(transient, last, policy) == "ConnectionError: reset by peer"
    assert reported_error(TOO_LONG, first, policy).startswith("ValueError: ")  # not retried
