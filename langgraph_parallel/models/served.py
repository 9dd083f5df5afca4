"""A running vLLM server seen from a client: find it, check what it serves, send it the key.

``ask`` looks for a ``langgraph-parallel serve`` (:func:`find_server`). A server started with an
API key wants it from every client: :func:`client_api_key`. Light on purpose (the standard
library only): the command line probes for a server before it imports any model client. Warming
a new server up is :func:`~langgraph_parallel.models.served_chat.warm_up`.
"""

from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import IO

from langgraph_parallel.errors import UserError

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_SERVER",
    "api_url",
    "client_api_key",
    "find_server",
    "is_local_host",
    "is_loopback",
    "open_url",
    "served_models",
]

API_KEY_ENV = "LANGGRAPH_PARALLEL_API_KEY"
"""The environment variable holding the key of ``langgraph-parallel serve --api-key``."""


def client_api_key() -> str:
    """Return the key a client sends: :data:`API_KEY_ENV`, else ``OPENAI_API_KEY``, else a dummy.

    vLLM checks it only when the server was started with a key.
    """
    return os.environ.get(API_KEY_ENV) or os.environ.get("OPENAI_API_KEY") or "EMPTY"


DEFAULT_SERVER = "http://127.0.0.1:8000/v1"
"""Where ``langgraph-parallel serve`` listens by default; ``ask`` looks there first."""


def api_url(url: str) -> str:
    """Return a server address as its OpenAI base URL: ``http://host:port`` gains ``/v1``."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def is_loopback(url: str) -> bool:
    """Return whether ``url`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    return is_local_host(urllib.parse.urlsplit(url).hostname or "")


def is_local_host(host: str) -> bool:
    """Return whether a server bound to ``host`` is reachable from this machine only.

    ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``) are; ``""`` (every
    interface, what vLLM binds without ``--host``), ``0.0.0.0``, ``::``, a LAN address and any
    other name are not.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def open_url(request: urllib.request.Request | str, *, timeout: float) -> IO[bytes]:
    """``urllib.request.urlopen``, but never through a proxy for an address on this machine.

    urllib (like httpx) sends ``127.0.0.1`` through ``http_proxy`` unless ``no_proxy`` names
    it; behind such a proxy, ``ask`` would never find its own background server.
    """
    url = request.full_url if isinstance(request, urllib.request.Request) else request
    response: IO[bytes] = (
        _DIRECT.open(request, timeout=timeout)
        if is_loopback(url)
        else urllib.request.urlopen(request, timeout=timeout)
    )
    return response


def served_models(base_url: str, *, timeout: float = 2.0) -> list[str] | None:
    """Return the model names a server serves, or ``None`` when nothing answers there."""
    request = urllib.request.Request(
        api_url(base_url) + "/models", headers={"Authorization": f"Bearer {client_api_key()}"}
    )
    try:
        with open_url(request, timeout=timeout) as response:
            listing = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    data = listing.get("data") if isinstance(listing, dict) else None
    return [str(item.get("id")) for item in data or [] if isinstance(item, dict)]


def find_server(model: str, server: str | None) -> str | None:
    """Return the server ``ask`` should use for ``model``, or ``None`` to run it in process.

    Args:
        model: The model name asked for (``serve --model NAME`` serves it under ``NAME``).
        server: ``None``/``"auto"``: :data:`DEFAULT_SERVER` if it is up and serves ``model``
            (a quick local probe); ``"none"``: in process; else a server address that must
            answer and serve ``model``.

    Raises:
        UserError: A given server does not answer or serves other models.
    """
    if server == "none":
        return None
    if server in (None, "auto"):
        names = served_models(DEFAULT_SERVER, timeout=0.5)
        return DEFAULT_SERVER if names and model in names else None
    url = api_url(server)
    names = served_models(url)
    if names is None:
        raise UserError(
            f"No model server answers at {url}; start one with "
            f"`langgraph-parallel serve --model {model}`, or drop --server to run in process."
        )
    if model not in names:
        raise UserError(
            f"The server at {url} serves {', '.join(names) or 'no model'}, not {model!r}; "
            f"pass --model {names[0] if names else 'NAME'} or start "
            f"`langgraph-parallel serve --model {model}`."
        )
    return url
