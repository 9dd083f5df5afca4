"""A throwaway HTTP server on 127.0.0.1 for tests that talk to stubbed services."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@contextmanager
def local_server(
    handler: type[BaseHTTPRequestHandler], monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Serve ``handler`` on a free port; yield its base URL; shut down on exit."""
    # A proxy configured in CI must not see requests to the stub.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
