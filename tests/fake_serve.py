"""A stand-in for ``langgraph-parallel serve --background``, without an engine.

It answers ``/v1/models`` and ``/metrics`` (a vLLM-style request counter that a ``POST`` to
``/v1/completions`` moves) and uses the real record and idle watch of
:mod:`langgraph_parallel.apps.daemon`, so the daemon's start, reuse, restart and idle stop run
as in use, in seconds. ``--ready-after S`` delays the record (a slow engine start);
``--exit-before-ready`` exits with status 3 instead (a server that fails to start).
``--questions`` also serves the real question endpoint (:mod:`langgraph_parallel.apps.ask_server`)
over :class:`ScriptedAnswerer`, as ``serve --background`` does over the graphs.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langgraph_parallel.agent.run import QuestionRun
from langgraph_parallel.apps import daemon
from langgraph_parallel.apps.ask_server import AskRequest, serve_questions
from langgraph_parallel.errors import UserError


class ScriptedAnswerer:
    """Answers every question "yes" after one search step; a question may ask to fail.

    A question containing ``user-error`` is refused as one the user must fix; one containing
    ``crash`` fails as a server bug would.
    """

    def answer(self, request: AskRequest, on_event: Any) -> tuple[QuestionRun, float]:
        if "user-error" in request.question:
            raise UserError("Corpus not found: /nowhere (scripted)")
        if "crash" in request.question:
            raise RuntimeError("scripted crash")
        on_event({"event": "step", "step": 1, "action": "search", "queries": ["a", "b"]})
        on_event({"event": "step", "step": 2, "action": "answer", "answer": "yes"})
        counters = dict.fromkeys(("llm_calls", "turns"), 2)
        trace = [f"step: {request.graph} {request.index} {request.passage_sentences}"]
        run = QuestionRun("yes", "answered", counters, 0.5, trace=trace)
        return run, 0.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle-timeout", type=float, required=True)
    parser.add_argument("--ready-after", type=float, default=0.0)
    parser.add_argument("--exit-before-ready", action="store_true")
    parser.add_argument("--questions", action="store_true")
    args = parser.parse_args()
    done = [0]

    class Handler(BaseHTTPRequestHandler):
        def reply(self, body: str, kind: str = "application/json") -> None:
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self.reply(json.dumps({"data": [{"id": args.model}]}))
            else:
                self.reply(
                    f'vllm:request_success_total{{finished_reason="stop"}} {done[0]}.0\n'
                    f'vllm:num_requests_running{{model_name="{args.model}"}} 0.0\n',
                    "text/plain",
                )

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            done[0] += 1
            self.reply(json.dumps({"choices": [{"text": "ok"}]}))

        def log_message(self, *_: Any) -> None:
            pass

    if args.exit_before_ready:
        print("fake serve: failing on purpose", file=sys.stderr)
        return 3
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(args.ready_after)
    url = f"http://127.0.0.1:{args.port}/v1"
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    ask_url, token = serve_questions(ScriptedAnswerer()) if args.questions else ("", "")
    daemon.write_record(args.model, url, ask_url=ask_url, ask_token=token)
    daemon.watch_idle(url, args.idle_timeout, stop.set, poll=0.1)
    stop.wait()
    daemon.remove_record(args.model)
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
