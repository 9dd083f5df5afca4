"""Reading a vLLM server's state while the serving experiment loads it: ``/metrics``, its cache."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from langgraph_parallel.models.served import open_url

__all__ = [
    "CpuMeter",
    "MetricsSampler",
    "cache_counters",
    "free_port",
    "metric",
    "post_json",
    "reset_prefix_cache",
]


def free_port() -> int:
    """Return a TCP port free on this machine now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def metric(text: str, name: str) -> float:
    """Sum of a Prometheus metric's samples (all label sets) in a ``/metrics`` page."""
    pattern = rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.eE+-]+)$"
    return sum(float(m.group(1)) for m in re.finditer(pattern, text, re.M))


class MetricsSampler:
    """Polls the server's ``/metrics``: the most requests running at once, cache counters."""

    def __init__(self, base: str) -> None:
        self.url = base + "/metrics"
        self.max_running = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def read(self) -> str:
        """Return the ``/metrics`` page, or nothing while the server is down."""
        try:
            with open_url(self.url, timeout=2) as reply:
                return str(reply.read().decode())
        except OSError:  # the server is down (fault run)
            return ""

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            running = metric(self.read(), "vllm:num_requests_running")
            self.max_running = max(self.max_running, running)

    def __enter__(self) -> MetricsSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cache_counters(sampler: MetricsSampler) -> tuple[float, float]:
    """Return the server's prefix-cache hits and queries so far."""
    text = sampler.read()
    return metric(text, "vllm:prefix_cache_hits_total"), metric(
        text, "vllm:prefix_cache_queries_total"
    )


def post_json(url: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """POST ``body`` as JSON to an OpenAI-compatible server; return the JSON reply.

    The key is ``OPENAI_API_KEY`` (``EMPTY`` without one), as the OpenAI client sends it.
    """
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'EMPTY')}",
        },
        method="POST",
    )
    with open_url(request, timeout=600) as reply:
        return dict(json.loads(reply.read()))


def reset_prefix_cache(base: str) -> None:
    """Empty the server's prefix cache (vLLM's dev-mode ``/reset_prefix_cache``)."""
    request = urllib.request.Request(base + "/reset_prefix_cache", data=b"", method="POST")
    with open_url(request, timeout=30):
        pass


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and its live descendants so far."""
    import psutil  # vLLM's own dependency: there wherever this experiment can run

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:  # exited meanwhile
            continue
        total += times.user + times.system
    return total


class CpuMeter:
    """CPU seconds this process and a server's process tree spend inside a ``with`` block.

    On 2 cores, both sides' seconds over the block's wall time say how much of the machine the
    client (graph, retrieval, HTTP client) took from the engine and its server.

    Attributes:
        client_s: This process's CPU seconds, all threads (``time.process_time``).
        server_s: The server's and its children's (engine core) CPU seconds.
    """

    def __init__(self, server_pid: int) -> None:
        """Meter the server whose process (group leader) is ``server_pid``."""
        self.server_pid = server_pid
        self.client_s = self.server_s = 0.0

    def __enter__(self) -> CpuMeter:
        self._client0, self._server0 = time.process_time(), _tree_cpu_s(self.server_pid)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.client_s = round(time.process_time() - self._client0, 3)
        self.server_s = round(_tree_cpu_s(self.server_pid) - self._server0, 3)

    def record(self) -> dict[str, float]:
        """Return ``client_cpu_s`` and ``server_cpu_s``, the figures a level keeps."""
        return {"client_cpu_s": self.client_s, "server_cpu_s": self.server_s}
