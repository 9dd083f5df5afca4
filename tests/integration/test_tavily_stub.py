"""TavilySearcher error paths against a local HTTP stub of the Tavily API (no network).

The real ``langchain_tavily.TavilySearch`` client is pointed at the stub with its
``api_base_url`` option, so the requests, status codes and error bodies go through the same
code as in production; only the far end is scripted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval.tavily import RetryPolicy, TavilyError, TavilySearcher
from tests.local_http import local_server

pytestmark = pytest.mark.integration

OK_BODY = {
    "query": "q",
    "results": [
        {"title": "Ed Wood", "url": "https://en.wikipedia.org/wiki/Ed_Wood", "content": "American"},
        {"title": "Scott Derrickson", "url": "https://x.test/sd", "content": "Also American"},
    ],
}


class Stub:
    """Answers POST /search from a script of (status, body); then 200 with OK_BODY."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.barrier: threading.Barrier | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length))
        with self.lock:
            self.requests.append({"path": handler.path, "auth": handler.headers["Authorization"]})
            self.requests[-1].update(body)
            status, reply = self.script.pop(0) if self.script else (200, OK_BODY)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.barrier is not None:
            # Requests leave in pairs: one alone (no concurrency) times out and breaks it.
            self.barrier.wait(timeout=10)
        with self.lock:
            self.in_flight -= 1
        data = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stub, str]]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            state.handle(self)

        def log_message(self, *args: Any) -> None:
            pass

    with local_server(Handler, monkeypatch) as url:
        yield state, url


def searcher(url: str, sleeps: list[float], **kwargs: Any) -> TavilySearcher:
    policy = RetryPolicy(max_attempts=3, initial_interval=0.5, backoff_factor=2.0, jitter=False)
    return TavilySearcher(
        api_key="tvly-test", api_base_url=url, retry=policy, sleep=sleeps.append, **kwargs
    )


def test_429_is_retried_with_backoff_then_results_map_to_passages(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.script = [(429, {"detail": {"error": "rate limited"}})] * 2
    sleeps: list[float] = []
    hits = searcher(url, sleeps).search("Ed Wood nationality", k=1)
    assert [(h.title, h.text, h.id) for h in hits] == [
        ("Ed Wood", "American", "https://en.wikipedia.org/wiki/Ed_Wood")
    ]
    assert sleeps == [0.5, 1.0]  # exponential
    assert len(state.requests) == 3
    assert state.requests[0]["path"] == "/search"
    assert state.requests[0]["auth"] == "Bearer tvly-test"
    assert state.requests[0]["query"] == "Ed Wood nationality"


def test_5xx_gives_up_after_max_attempts(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.script = [(500, {"detail": {"error": "boom"}})] * 5
    sleeps: list[float] = []
    with pytest.raises(TavilyError, match="after 3 attempts: Error 500: boom") as info:
        searcher(url, sleeps).search("q")
    assert info.value.status == 500 and info.value.attempts == 3
    assert len(state.requests) == 3 and sleeps == [0.5, 1.0]


def test_gateway_html_error_page_is_retried(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.script = [(502, "<html>Bad Gateway</html>")]
    assert searcher(url, []).search("q", k=2)[1].title == "Scott Derrickson"
    assert len(state.requests) == 2


def test_client_errors_are_not_retried(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.script = [(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})]
    with pytest.raises(TavilyError, match="Error 401") as info:
        searcher(url, []).search("q")
    assert info.value.status == 401 and len(state.requests) == 1


def test_no_results_is_an_empty_list_and_blank_queries_send_nothing(
    stub: tuple[Stub, str],
) -> None:
    state, url = stub
    state.script = [(200, {"query": "q", "results": []})]
    assert searcher(url, []).batch_search(["nothing here", "  "], 3) == [[], []]
    assert len(state.requests) == 1


def test_concurrency_limit_holds_across_threads(stub: tuple[Stub, str]) -> None:
    state, url = stub
    state.barrier = threading.Barrier(2)
    search = searcher(url, [], max_concurrency=2)
    queries = [f"q{i}" for i in range(6)]
    threads = [
        threading.Thread(target=search.batch_search, args=([q, q + "b"], 1)) for q in queries
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(state.requests) == 12
    assert not state.barrier.broken  # pairs were in flight together
    assert state.max_in_flight == 2  # and never more than the limit


def test_missing_key_fails_fast_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(UserError, match="TAVILY_API_KEY"):
        TavilySearcher()
