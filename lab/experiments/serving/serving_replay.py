"""A serving level's own requests sent again without the agent: the ceiling of that workload.

The probe's ceiling (:mod:`.serving_ceiling`) prices a question's tokens at rates measured on
other text, and the latency run's replay showed the text matters: with n-gram speculation the
probe's passage continuations decode at about twice the tokens/s of the agent's steps. This
ceiling needs no rates. While a level runs, every request ``ChatVLLMServer`` sends is recorded
under the question it belongs to (:data:`QUESTION`, a context variable the level sets per
question; LangGraph runs a run's nodes in copies of its context). Then the level's questions are
sent again as chains, each question's requests one after another exactly as recorded (prompt,
grammar, stops, sampling), as many chains at once as the level had runs, on the same server with
its prefix cache emptied first. No graph, no search, no waiting between turns: what is left is
the engine, the server and HTTP on this workload. The level's throughput over that is the share
the agent loop leaves of what this server can do with these very requests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from lab.experiments.serving.serving_metrics import post_json, reset_prefix_cache

__all__ = ["QUESTION", "Recorded", "record_requests", "replay_level"]

QUESTION: ContextVar[str | None] = ContextVar("serving_question", default=None)
"""The id of the question whose run makes the requests in this context."""

Recorded = dict[str, list[tuple[str, dict[str, Any]]]]
"""Question id -> its requests in order, each ``(endpoint path, JSON body)``."""

ENDPOINTS = {"raw": "/v1/completions", "chat": "/v1/chat/completions"}


@contextmanager
def record_requests() -> Iterator[Recorded]:
    """Record every request ``ChatVLLMServer`` builds meanwhile, by :data:`QUESTION`.

    Yields:
        The recording, filled as requests are built (requests outside a question: key ``""``).
    """
    from langgraph_parallel.models.served_chat import ChatVLLMServer

    recorded: Recorded = {}
    lock = threading.Lock()
    build = ChatVLLMServer._request

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        style, request = build(self, *args, **kwargs)
        # What the OpenAI client sends: its own fields plus extra_body merged in.
        body = {k: v for k, v in request.items() if k != "extra_body"}
        body.update(request.get("extra_body") or {})
        with lock:
            recorded.setdefault(QUESTION.get() or "", []).append((ENDPOINTS[style], body))
        return style, request

    ChatVLLMServer._request = recording  # type: ignore[method-assign]
    try:
        yield recorded
    finally:
        ChatVLLMServer._request = build  # type: ignore[method-assign]


def _send(base: str, path: str, body: Mapping[str, Any]) -> int:
    """Send one request; return its completion tokens."""
    return int(post_json(base + path, body)["usage"]["completion_tokens"])


def replay_level(
    base: str, recorded: Recorded, order: Sequence[str], workers: int
) -> dict[str, Any]:
    """Send the recorded questions' requests again, ``workers`` chains at once.

    Args:
        base: The server's address (``http://host:port``, no ``/v1``).
        recorded: :func:`record_requests`' recording of the level.
        order: Question ids in the order the level started them (each one chain).
        workers: Chains at once (the level's runs at once).

    Returns:
        ``questions``, ``requests``, ``completion_tokens`` (per question), ``wall_s`` and
        ``ceiling_q_per_s`` (questions over that wall time).
    """
    chains = [recorded[q] for q in order if recorded.get(q)]

    def run(chain: list[tuple[str, dict[str, Any]]]) -> int:
        return sum(_send(base, path, body) for path, body in chain)

    reset_prefix_cache(base)
    begin = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        tokens = list(pool.map(run, chains))
    wall = time.perf_counter() - begin
    return {
        "questions": len(chains),
        "requests": sum(len(c) for c in chains),
        "completion_tokens": round(sum(tokens) / max(len(chains), 1), 1),
        "wall_s": round(wall, 1),
        "ceiling_q_per_s": round(len(chains) / wall, 3) if wall > 0 else None,
    }
