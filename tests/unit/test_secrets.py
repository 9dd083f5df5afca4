"""API keys never appear in logs, error text, reprs, final states, traces or results files.

A local HTTP stub plays Tavily and an OpenAI-compatible server that answer every request with an
error *echoing the caller's key*, the worst case; the real clients (``langchain-tavily``,
``langchain-openai``) talk to it. Every place the key could surface is then searched for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.run import run_question
from langgraph_parallel.apps.studio import model_from_env, search_from_env
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.harness import run_graphs
from langgraph_parallel.models.served_chat import ChatVLLMServer
from langgraph_parallel.models.server import chat_openai_for_server
from langgraph_parallel.retrieval.tavily import RetryPolicy, TavilySearcher
from tests.fakes import CountingSearcher, ScriptedChatModel
from tests.local_http import local_server

TAVILY_KEY = "tvly-SENTINEL-7c1e9a2b4d"
OPENAI_KEY = "sk-SENTINEL-5f3a8e0c6b"
SENTINELS = (TAVILY_KEY, OPENAI_KEY, "SENTINEL")


@pytest.fixture
def echo_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Answer any POST with a 401 (Tavily) or 500 (chat) whose message repeats the key."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            echoed = f"invalid key {self.headers.get('Authorization')}"
            if self.path.endswith("/search"):
                status, body = 401, {"detail": {"error": echoed}}
            else:
                status, body = 400, {"error": {"message": echoed, "type": "invalid_request"}}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    with local_server(Handler, monkeypatch) as url:
        yield url


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


def assert_clean(*texts: Any) -> None:
    for text in texts:
        for secret in SENTINELS:
            assert secret not in str(text), f"{secret!r} leaked in: {str(text)[:300]}"


def tavily(url: str) -> TavilySearcher:
    policy = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)
    return TavilySearcher(api_base_url=url, retry=policy, sleep=lambda s: None)


def test_tavily_errors_never_carry_the_key(
    keys: None, echo_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    searcher = tavily(echo_server)
    with pytest.raises(Exception) as info:
        searcher.search("who?")
    assert "401" in str(info.value)
    assert_clean(str(info.value), repr(info.value), info.value.args, repr(searcher))
    model = ScriptedChatModel(script=["<search> who? ## what? </search>", "<answer> a </answer>"])
    run = run_question(create_parallel_search_graph(model, searcher), "Q?")
    assert "Search error" in str(run.state["transcript"][2].content)
    assert_clean(json.dumps(run.state, default=str), run.trace, caplog.text)


@pytest.mark.parametrize("client", ["ChatOpenAI", "ChatVLLMServer"])
def test_chat_model_errors_never_carry_the_key(
    keys: None, echo_server: str, caplog: pytest.LogCaptureFixture, client: str
) -> None:
    caplog.set_level(logging.DEBUG)
    if client == "ChatOpenAI":
        model: Any = chat_openai_for_server(f"{echo_server}/v1", max_retries=0)
    else:
        model = ChatVLLMServer(base_url=f"{echo_server}/v1", max_retries=0)
    env = {"OPENAI_BASE_URL": f"{echo_server}/v1", "OPENAI_API_KEY": OPENAI_KEY}
    assert_clean(repr(model), repr(model_from_env(env)), str(model.model_dump()))
    run = run_question(create_parallel_search_graph(model, CountingSearcher()), "Q?")
    assert run.stop_reason.startswith("model_error: ") and "400" in run.stop_reason
    assert_clean(run.stop_reason, json.dumps(run.state, default=str), run.trace, caplog.text)


def test_results_files_never_carry_the_key(
    keys: None, echo_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = chat_openai_for_server(f"{echo_server}/v1", max_retries=0)
    graph = create_parallel_search_graph(model, tavily(echo_server))
    question = Question(
        id="q1", question="Q?", answer="a", answers=("a",), type="bridge", dataset="hotpotqa"
    )
    run_graphs([question], {"ps": graph}, tmp_path, progress=False)
    written = "".join(p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file())
    assert "model_error" in written
    assert_clean(written, caplog.text)


def test_studio_search_from_env_keeps_the_key_out_of_reprs(keys: None) -> None:
    searcher = search_from_env(
        {"LANGGRAPH_PARALLEL_SEARCH": "tavily", "TAVILY_API_KEY": TAVILY_KEY}
    )
    assert_clean(repr(searcher), repr(getattr(searcher, "tool", "")))
