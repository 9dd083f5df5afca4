"""The serving experiment without vLLM: the ceiling arithmetic, the engine probe, the fault
run's accounting and driver, and the docs block, on fake rows, stub servers and fake processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from lab.base import resolve_settings
from lab.catalog import EXPERIMENTS
from lab.experiments.serving.serving_ceiling import (
    ceiling_q_per_s,
    engine_rates,
    level_ceiling,
    question_tokens,
)
from lab.experiments.serving.serving_fault import (
    Restart,
    account,
    fault_graph,
    restart_latency,
    retry_record,
    run_fault,
)
from lab.experiments.serving.serving_probe import measure_engine, probe_prompts
from lab.experiments.serving.serving_render import render_serving
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.models.server import stop_server
from langgraph_parallel.retry import deadline_retry_policy
from tests.fakes import CountingSearcher, ScriptedChatModel
from tests.local_http import local_server

REPO = Path(__file__).resolve().parents[2]


# --- the ceiling ------------------------------------------------------------------------------


def test_the_ceiling_is_one_over_the_engine_seconds_of_a_question() -> None:
    # 850 uncached prompt tokens at 850 tok/s (1 s) + 130 completion tokens at 130 tok/s (1 s)
    assert ceiling_q_per_s(850, 130, 850.0, 130.0) == pytest.approx(0.5)
    assert ceiling_q_per_s(0, 100, 700.0, 50.0) == pytest.approx(0.5)  # all cached: decode only
    assert ceiling_q_per_s(700, 0, 700.0, 50.0) == pytest.approx(1.0)
    for rates in ((0.0, 50.0), (700.0, -1.0)):
        with pytest.raises(ValueError, match="rates must be positive"):
            ceiling_q_per_s(850, 130, *rates)
    with pytest.raises(ValueError, match="negative"):
        ceiling_q_per_s(-1, 130, 700.0, 50.0)
    with pytest.raises(ValueError, match="no tokens"):
        ceiling_q_per_s(0, 0, 700.0, 50.0)


def test_tokens_per_question_come_from_the_rows() -> None:
    keys = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "llm_calls")
    rows = [dict(zip(keys, row, strict=True)) for row in ((1500, 600, 120, 3), (500, 400, 40, 1))]
    assert question_tokens(rows) == {
        "prompt_tokens": 1000.0,
        "cached_prompt_tokens": 500.0,
        "uncached_prompt_tokens": 500.0,
        "completion_tokens": 80.0,
        "prompt_tokens_per_call": 500.0,  # 2000 prompt tokens over 4 calls
    }


def test_engine_rates_take_the_decode_from_the_difference_of_the_two_batches() -> None:
    prefill = {
        "prompt_tokens": 4100,
        "cached_prompt_tokens": 100,
        "completion_tokens": 8,
        "wall_s": 5.0,
    }
    decode = {
        "prompt_tokens": 4100,
        "cached_prompt_tokens": 100,
        "completion_tokens": 8 + 1024,
        "wall_s": 13.0,
    }
    assert engine_rates(prefill, decode) == {"prefill_tok_per_s": 800.0, "decode_tok_per_s": 128.0}
    # A decode batch no slower than the prefill one (noise) gives no decode rate, not a wild one.
    assert engine_rates(prefill, {**decode, "wall_s": 5.0})["decode_tok_per_s"] is None


def test_a_level_is_reported_as_a_share_of_its_ceiling() -> None:
    level = {"throughput_q_per_s": 0.4, "uncached_prompt_tokens": 850.0, "completion_tokens": 130.0}
    rates = {"prefill_tok_per_s": 850.0, "decode_tok_per_s": 130.0}
    assert level_ceiling(level, rates) == {"ceiling_q_per_s": 0.5, "of_ceiling": 0.8}
    missing = {"ceiling_q_per_s": None, "of_ceiling": None}
    assert level_ceiling(level, {**rates, "decode_tok_per_s": None}) == missing
    assert level_ceiling({"throughput_q_per_s": 0.4}, rates) == missing  # an old level


# --- the engine probe -------------------------------------------------------------------------


class _Engine:
    """A stub of the server's probe endpoints: usage as vLLM gives it, requests recorded."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.resets = 0
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # /metrics
                self._send(b"vllm:num_requests_running 1\n", "text/plain")

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                if self.path == "/reset_prefix_cache":
                    with engine.lock:
                        engine.resets += 1
                    self._send(b"", "text/plain")
                    return
                body = json.loads(raw)
                with engine.lock:
                    engine.bodies.append(body)
                usage = {
                    "prompt_tokens": len(body["prompt"]) // 4,
                    "completion_tokens": body["max_tokens"],
                    "prompt_tokens_details": {"cached_tokens": 0},
                }
                self._send(json.dumps({"choices": [], "usage": usage}).encode(), "application/json")

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_Engine, str]]:
    state = _Engine()
    with local_server(state.handler(), monkeypatch) as url:
        yield state, url


def test_probe_prompts_differ_from_their_first_token_and_have_the_length_asked() -> None:
    prompts = probe_prompts(3, 50, passages=["Doc 1(Title: A) alpha.", "Doc 1(Title: B) beta."])
    assert len(set(prompts)) == 3 and all(len(p) == 200 for p in prompts)
    assert [p.split("\n")[0] for p in prompts] == ["Request 0.", "Request 1.", "Request 2."]


def test_the_probe_sends_a_prefill_batch_and_a_decode_batch_of_the_same_prompts(
    engine: tuple[_Engine, str],
) -> None:
    state, url = engine
    probe = measure_engine(url, "smollm2-parallel", 4, prompt_tokens=100, decode_tokens=32)
    assert state.resets == 2  # before each batch: the second prefills the prompts again
    first, second = state.bodies[:8], state.bodies[8:]
    assert len(first) == len(second) == 8  # at least 8 requests, 4 at a time
    assert sorted(b["prompt"] for b in first) == sorted(b["prompt"] for b in second)
    assert len({b["prompt"] for b in first}) == 8
    assert {b["max_tokens"] for b in first} == {1} and {b["max_tokens"] for b in second} == {33}
    # Greedy, and like a parallel-search step: each token's logprob, no alternatives.
    assert all(b["ignore_eos"] and b["logprobs"] == 0 and b["temperature"] == 0 for b in first)
    assert probe["concurrency"] == 4 and probe["prompt_tokens_target"] == 100
    assert probe["prefill"]["requests"] == 8 and probe["prefill"]["prompt_tokens"] == 8 * 100
    assert probe["decode"]["completion_tokens"] == 8 * 33
    assert {"prefill_tok_per_s", "decode_tok_per_s"} <= probe.keys()


# --- the fault run ----------------------------------------------------------------------------


def _row(qid: str, reason: str, answer: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "answer": answer, "stop_reason": reason, **extra}


def test_the_fault_accounting_splits_the_endings_and_names_missing_and_repeated_ids() -> None:
    rows = [
        _row("q1", "answered", "yes"),
        _row("q2", "max_turns: 4 model steps used without an answer"),
        _row("q3", "model_error: APIConnectionError: Connection error."),
        _row("q3", "answered", "no"),  # q3 ran twice
        _row("q5", "error"),  # the graph raised
        _row("q9", "answered", "x"),  # not asked
        _row("q6", ""),
    ]
    found = account(rows, ["q1", "q2", "q3", "q4", "q5", "q6"])
    assert found["answered"] == 3
    assert found["stop_reasons"] == {
        "answered": 3,
        "error": 1,
        "max_turns": 1,
        "model_error": 1,
        "none": 1,
    }
    assert found["missing"] == ["q4"] and found["duplicates"] == ["q3"]
    assert found["unexpected"] == ["q9"] and found["every_question_once"] is False
    assert found["lost"] == 3  # q3's model_error, q5's exception, q4 never ran

    clean = account([_row("a", "answered", "1"), _row("b", "max_turns")], ["a", "b"])
    assert clean["every_question_once"] is True and clean["lost"] == 0
    assert clean["missing"] == clean["duplicates"] == clean["unexpected"] == []


def test_the_questions_in_flight_during_the_restart_are_timed_apart() -> None:
    rows = [
        _row("before", "answered", "a", start_s=0.0, end_s=4.0, wall_s=4.0),
        _row("across", "answered", "b", start_s=8.0, end_s=45.0, wall_s=37.0),
        _row("during", "answered", "c", start_s=20.0, end_s=41.0, wall_s=21.0),
        _row("lost", "model_error: x", start_s=9.0, end_s=12.0, wall_s=3.0),
        _row("after", "answered", "d", start_s=41.0, end_s=44.0, wall_s=3.0),
    ]
    split = restart_latency(rows, killed_at_s=10.0, back_at_s=40.0)
    assert split["in_flight"] == {"questions": 3, "answered": 2, "p50_s": 21.0, "max_s": 37.0}
    assert split["others"] == {"questions": 2, "answered": 2, "p50_s": 3.5, "max_s": 4.0}
    empty = restart_latency(rows[:1], killed_at_s=10.0, back_at_s=40.0)["in_flight"]
    assert empty == {"questions": 0, "answered": 0, "p50_s": None, "max_s": None}


def test_the_fault_run_graph_retries_until_the_deadline_unless_it_is_zero() -> None:
    model = ScriptedChatModel(script=["<answer> yes </answer>"])
    graph = fault_graph(model, CountingSearcher(), 90.0)
    policy = deadline_retry_policy(90.0)
    assert graph.nodes["think"].retry_policy == (policy,)
    assert graph.nodes["search"].retry_policy == (policy,)
    before = fault_graph(model, CountingSearcher(), 0.0)  # the comparison: the default policy
    assert before.nodes["think"].retry_policy == (DEFAULT_RETRY_POLICY,)
    assert retry_record(90.0) == {"deadline_s": 90.0, "max_attempts": 18, "waits_s": [72.5, 89.5]}
    assert retry_record(0.0)["deadline_s"] is None
    assert retry_record(0.0)["max_attempts"] == DEFAULT_RETRY_POLICY.max_attempts


def test_the_experiment_runs_its_fault_run_under_a_90_s_deadline_by_default() -> None:
    serving = EXPERIMENTS["serving"]
    assert serving.settings["retry_deadline"] == 90.0 and serving.settings["ceiling"] is True
    assert resolve_settings(serving, ["retry_deadline=0"])["retry_deadline"] == 0.0


class _SlowGraph:
    """Answers every question after a short wait, so some are running when the kill comes."""

    def invoke(self, inputs: dict[str, Any], **_: Any) -> dict[str, Any]:
        threading.Event().wait(0.05)
        return {"answer": "yes", "stop_reason": "answered", "counters": {"llm_calls": 1}}


def _sleeper() -> subprocess.Popen[bytes]:
    """A stand-in server process in a session (process group) of its own, as servers start."""
    code = "import time; time.sleep(120)"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_the_fault_run_kills_the_server_restarts_it_and_accounts_for_every_question(
    engine: tuple[_Engine, str],
) -> None:
    _, url = engine
    questions = [
        Question(
            id=f"q{i}",
            question=f"Question {i}?",
            answer="yes",
            answers=("yes",),
            type="comparison",
            dataset="hotpotqa",
        )
        for i in range(16)
    ]
    first = _sleeper()

    def start() -> subprocess.Popen[bytes]:
        threading.Event().wait(0.3)  # a server takes a while to come back
        return _sleeper()

    restart = Restart(first, start)
    try:
        fault = run_fault(_SlowGraph(), questions, 4, url, kill_after=4, restart=restart)
    finally:
        stop_server(first)
        stop_server(restart.proc)
    assert first.returncode == -9  # SIGKILL, a crash
    assert restart.proc is not first
    assert fault["every_question_once"] is True and fault["answered"] == 16
    assert fault["lost"] == 0 and fault["missing"] == fault["duplicates"] == []
    assert fault["kill_after"] == 4
    assert fault["back_at_s"] > fault["killed_at_s"] and fault["server_down_s"] > 0
    flight, others = fault["in_flight"], fault["others"]
    assert flight["questions"] >= 1 and flight["questions"] + others["questions"] == 16


# --- the docs block ---------------------------------------------------------------------------


def _level(n: int, qps: float, **extra: Any) -> dict[str, Any]:
    return {
        "concurrency": n,
        "questions": 64,
        "throughput_q_per_s": qps,
        "p50_s": 2.0,
        "p95_s": 3.0,
        "max_running_requests": float(n),
        "prefix_cache_hit_rate": 0.44,
        "answered": 60,
        "errors": 0,
        **extra,
    }


def test_the_block_shows_the_share_of_the_ceiling_and_the_fault_split(tmp_path: Path) -> None:
    new = {
        "commit": "abcdef1234",
        "command": "langgraph-parallel bench run serving",
        "engine": {},
        "levels": [
            _level(1, 0.4, ceiling_q_per_s=0.5, of_ceiling=0.8),
            _level(16, 0.6, ceiling_q_per_s=0.75, of_ceiling=0.8),
        ],
        "engine_throughput": [
            {"concurrency": 1, "prefill_tok_per_s": 715.2, "decode_tok_per_s": 60.0},
            {"concurrency": 16, "prefill_tok_per_s": 719.0, "decode_tok_per_s": None},
        ],
        "fault": {
            **_level(16, 0.5),
            "kill_after": 16,
            "server_down_s": 28.6,
            "stop_reasons": {"answered": 60, "max_turns": 3, "no_answer": 1},
            "retry": {"deadline_s": 90.0, "max_attempts": 18, "waits_s": [72.5, 89.5]},
            "lost": 0,
            "missing": [],
            "duplicates": [],
            "in_flight": {"questions": 16, "answered": 15, "p50_s": 41.0, "max_s": 50.0},
            "others": {"questions": 48, "answered": 45, "p50_s": 20.0, "max_s": 30.0},
        },
    }
    (tmp_path / "ngram").mkdir()
    (tmp_path / "ngram" / "serving.json").write_text(json.dumps(new))
    block = render_serving(tmp_path)
    assert "| n-gram speculation (default) | 1 | 0.400 | 1.00x |" in block
    assert "| 60/64 | 0 | 715 / 60 | 0.500 | 80% |" in block
    assert "| 60/64 | 0 | 719 / – | 0.750 | 80% |" in block
    assert (
        "| n-gram speculation (default) | 90 s deadline (18 attempts) | 29 | 60 | 3 | 0 "
        "| 1 no_answer | 0 | 0 | 0 | 15/16, p50 41.0 s | 20.0 |"
    ) in block


def test_serving_files_from_before_the_ceiling_and_the_retry_render_with_dashes(
    tmp_path: Path,
) -> None:
    # A file as the first runs wrote it (a56e613): no engine probe, no ceiling, a fault run
    # without the retry policy, the ids check or the in-flight split.
    old = {
        "commit": "a56e613",
        "command": "tools/bench_serving.py --out /tmp/serving/ngram",
        "engine": {},
        "speedup": 1.42,
        "levels": [{**_level(1, 0.383), "speedup": 1.0}, {**_level(16, 0.544), "speedup": 1.42}],
        "fault": {
            **_level(16, 0.4),
            "kill_after": 16,
            "server_down_s": 28.9,
            "stop_reasons": {"answered": 17, "max_turns": 2, "model_error": 45},
        },
    }
    (tmp_path / "ngram").mkdir()
    (tmp_path / "ngram" / "serving.json").write_text(json.dumps(old))
    block = render_serving(tmp_path)
    assert "| – | – | – |" in block  # engine alone, ceiling, share of it: not measured
    fault = "| n-gram speculation (default) | – | 29 | 17 | 2 | 45 | 0 | – | – | – | – | – |"
    assert fault in block
