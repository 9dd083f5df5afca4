"""A stand-in for ``langgraph-parallel serve --background``, without an engine.

It answers ``/v1/models`` and ``/metrics`` (a vLLM-style request counter that a ``POST`` to
``/v1/completions`` moves) and uses the real record and idle watch of
:mod:`langgraph_parallel.apps.daemon`, so the daemon's start, reuse, restart and idle stop run
as in use, in seconds. ``--ready-after S`` delays the record (a slow engine start);
``--exit-before-ready`` exits with status 3 instead (a server that fails to start).
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

from langgraph_parallel.apps import daemon


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle-timeout", type=float, required=True)
    parser.add_argument("--ready-after", type=float, default=0.0)
    parser.add_argument("--exit-before-ready", action="store_true")
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
    daemon.write_record(args.model, url)
    daemon.watch_idle(url, args.idle_timeout, stop.set, poll=0.1)
    stop.wait()
    daemon.remove_record(args.model)
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
