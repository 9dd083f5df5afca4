"""The background server's question endpoint, both sides: later ``ask``s run their question there.

An ``ask`` that sends only its model calls to the background server still imports LangGraph,
LangChain and the OpenAI client and loads the index itself: about 3.5 s of a 12.5 s later
``ask`` on a 2-core AVX2 CPU, paid again by every question. So ``serve --background``
(:mod:`.daemon`) also holds them, warm: it loads the model's client and the default index once,
and answers ``POST /ask`` by running the question's graph against its own engine, streaming
each progress event and then the result back as JSON lines. The ``ask`` that sent it imports
none of that.

Protocol (one request a question, 127.0.0.1 only, ``Authorization: Bearer TOKEN`` with the
token of the server's record, which only its user can read): the body is an
:class:`AskRequest` as JSON; the answer is ``application/x-ndjson``, a line ``{"event": ...}``
per progress event (:mod:`~langgraph_parallel.agent.events`), then one ``{"result": ...}``
(:func:`result_of`), ``{"error": "..."}`` for a question the user must fix (a
:class:`~langgraph_parallel.errors.UserError`: a missing corpus, an unknown option), or
``{"failure": "..."}`` when the server could not run it (the ``ask`` then answers it itself).

Written on the standard library's ``http.server``: the endpoint is one POST on the loopback
address, and a web framework would add its imports to the server's start for nothing.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langgraph_parallel.errors import UserError, describe_error
from langgraph_parallel.models.served import open_url

__all__ = [
    "ASK_PATH",
    "AskRequest",
    "AskServer",
    "post_question",
    "prepare_answerer",
    "result_of",
    "serve_questions",
]

ASK_PATH = "/ask"
"""The endpoint's path."""


@dataclass(frozen=True)
class AskRequest:
    """One question and the ``ask`` options that shape its run.

    Attributes:
        question: The question.
        graph: A graph name of :data:`~langgraph_parallel.apps.registry.GRAPH_NAMES`.
        model: The model asked for; it must be the one the server serves.
        corpus: Corpus path (on this machine), or ``None`` for the bundled one.
        index: Index kind.
        max_turns: Search turns at most.
        top_k: Passages per sub-query.
        passage_sentences: ``ask --passage-sentences`` as parsed (``"auto"``: the model's own,
            ``None``: whole passages, or a number of sentences).
    """

    question: str
    graph: str
    model: str
    corpus: str | None = None
    index: str = "hybrid"
    max_turns: int = 4
    top_k: int = 3
    passage_sentences: int | str | None = "auto"

    @classmethod
    def from_json(cls, body: bytes) -> AskRequest:
        """Read a request body; a malformed one raises ``UserError``."""
        try:
            data = json.loads(body)
            names = {f.name for f in fields(cls)}
            if not isinstance(data, dict) or not names.issuperset(data):
                raise TypeError(f"expected an object with keys among {sorted(names)}")
            return cls(**data)
        except (ValueError, TypeError) as exc:
            raise UserError(f"Malformed question request: {exc}") from exc


def result_of(run: Any, index_s: float) -> dict[str, Any]:
    """Return what ``ask`` prints of a :class:`~langgraph_parallel.agent.run.QuestionRun`."""
    return {
        "answer": run.answer,
        "stop_reason": run.stop_reason,
        "summary": run.summary(),
        "trace": run.trace,
        "search_errors": int(run.extra_counters.get("search_errors", 0)),
        "index_s": round(index_s, 3),
    }


class AskServer:
    """Answers questions with the graphs of one served model, the model client and index warm.

    Args:
        model: The model name the background server serves.
        model_url: Its OpenAI base address (the engine of this same server).
    """

    def __init__(self, model: str, model_url: str) -> None:
        # The run and the default graph's modules (LangGraph with them) are imported here,
        # before the first question; the other graphs' on their first use.
        import langgraph_parallel.agent.run
        import langgraph_parallel.parallel_search.graph  # noqa: F401
        from langgraph_parallel.apps.registry import load_model

        self.model_name = model
        self.model = load_model(model, base_url=model_url, check=True)

    def index(self, request: AskRequest) -> tuple[Any, float]:
        """Return the request's index (built on its first use here) and the seconds it took."""
        from langgraph_parallel.retrieval.indexes import corpus_index

        t0 = time.perf_counter()
        index = corpus_index(request.corpus, kind=request.index)
        return index, time.perf_counter() - t0

    def answer(self, request: AskRequest, on_event: Callable[[dict[str, Any]], None]) -> Any:
        """Run ``request``'s question; return the run and the index's seconds.

        Raises:
            UserError: Another model than the served one, or options the graph refuses.
        """
        from langgraph_parallel.agent.run import run_question
        from langgraph_parallel.apps.registry import build_graph

        if request.model != self.model_name:
            raise UserError(
                f"This background server serves {self.model_name!r}, not {request.model!r}."
            )
        index, index_s = self.index(request)
        options = {
            "max_turns": request.max_turns,
            "top_k": request.top_k,
            "passage_sentences": request.passage_sentences,
        }
        graph = build_graph(request.graph, self.model, index, **options)
        return run_question(graph, request.question, on_event=on_event), index_s


def prepare_answerer(model: str, model_url: str) -> AskServer:
    """Return an :class:`AskServer` with the default graph's imports and index loaded.

    It does not call the model, so it may run while the model's server is still starting
    (``serve --background`` does, in a thread: 3.9 s of imports and index off the first
    ``ask``'s wait on a 2-core machine).
    """
    from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX

    answerer = AskServer(model, model_url)
    answerer.index(AskRequest(question="", graph="", model=model, index=DEFAULT_INDEX))
    return answerer


def serve_questions(answerer: Any) -> tuple[str, str]:
    """Serve ``answerer`` (an :class:`AskServer`, or anything with its ``answer``) on 127.0.0.1.

    Returns:
        The endpoint's address (a free port) and a new random bearer token.
    """
    token = secrets.token_urlsafe(24)
    handler = type("Handler", (_Handler,), {"answerer": answerer, "token": token})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="ask-server", daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}{ASK_PATH}", token


class _Handler(BaseHTTPRequestHandler):
    answerer: AskServer
    token: str

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass  # the server's log is vLLM's; one line a question would only bury it

    def do_POST(self) -> None:
        given = self.headers.get("Authorization", "")
        if self.path != ASK_PATH or not hmac.compare_digest(given, f"Bearer {self.token}"):
            self.send_error(404 if self.path != ASK_PATH else 401)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        lock = threading.Lock()  # events come from the graph's worker threads

        def send(line: dict[str, Any]) -> None:
            data = (json.dumps(line, default=str) + "\n").encode()
            with lock:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the asker went away; the question still finishes
                    pass

        try:
            request = AskRequest.from_json(body)
            run, index_s = self.answerer.answer(request, lambda event: send({"event": event}))
        except UserError as exc:
            send({"error": str(exc)})
            return
        except Exception as exc:  # noqa: BLE001 (reported to the asker, who falls back)
            send({"failure": describe_error(exc)})
            return
        send({"result": result_of(run, index_s)})


def post_question(
    url: str, token: str, request: AskRequest, on_event: Callable[[dict[str, Any]], None]
) -> dict[str, Any] | None:
    """Send ``request`` to a question endpoint, pass on its events; return its result.

    Returns ``None`` when the server went away before the result (no answer, no error).

    Raises:
        UserError: The server's ``{"error": ...}`` line.
    """
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    post = urllib.request.Request(
        url, data=json.dumps(asdict(request)).encode(), headers=headers, method="POST"
    )
    lines = []
    try:
        # The timeout bounds each wait for a line; a question may take longer in all.
        with open_url(post, timeout=600) as response:
            for raw in response:
                line = json.loads(raw)
                if "event" in line:
                    on_event(line["event"])
                else:
                    lines.append(line)
    except (urllib.error.URLError, OSError, ValueError):
        pass  # cut off: whatever came before the cut is all there is
    last = lines[-1] if lines else {}
    if "error" in last:
        raise UserError(str(last["error"]))
    return dict(last["result"]) if "result" in last else None  # else gone, or a "failure"
