"""A throwaway HTTP server on 127.0.0.1 for tests that talk to stubbed services."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.servers import free_port


class JsonHandler(BaseHTTPRequestHandler):
    """A stub service's request handler that answers with JSON bodies."""

    def send_json(self, body: Any) -> None:
        """Answer 200 with ``body`` as JSON."""
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def local_server(
    handler: type[BaseHTTPRequestHandler],
    monkeypatch: pytest.MonkeyPatch,
    *,
    start_after: float = 0.0,
) -> Iterator[str]:
    """Serve ``handler`` on a free port; yield its base URL; shut down on exit.

    With ``start_after`` the URL is yielded at once but the port refuses connections for that
    many seconds first, as a server that is restarting does.
    """
    # A proxy configured in CI must not see requests to the stub.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    port = free_port() if start_after else 0
    stop, lock = threading.Event(), threading.Lock()
    servers: list[ThreadingHTTPServer] = []

    def start() -> ThreadingHTTPServer | None:
        with lock:  # a server bound after the block ended would never be shut down
            if stop.is_set():
                return None
            servers.append(ThreadingHTTPServer(("127.0.0.1", port), handler))
            return servers[-1]

    def serve_later() -> None:
        if not stop.wait(start_after) and (server := start()) is not None:
            server.serve_forever()

    if start_after:
        threading.Thread(target=serve_later, daemon=True).start()
    else:
        server = start()
        assert server is not None
        port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with lock:
            stop.set()
        for server in servers:
            server.shutdown()  # also when serve_forever has yet to start: it returns at once
            server.server_close()
