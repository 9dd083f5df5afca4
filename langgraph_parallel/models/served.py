"""A running vLLM server seen from a client: find it, check what it serves, warm it up.

``ask`` looks for a ``langgraph-parallel serve`` (:func:`find_server`); ``serve`` and
``start_server(warm=True)`` send :func:`warm_up`'s requests before the first user question.
A server started with an API key wants it from every client:
:func:`~langgraph_parallel.models.served_chat.client_api_key`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.served_chat import ChatVLLMServer, client_api_key

__all__ = ["DEFAULT_SERVER", "api_url", "find_server", "served_models", "warm_up"]


DEFAULT_SERVER = "http://127.0.0.1:8000/v1"
"""Where ``langgraph-parallel serve`` listens by default; ``ask`` looks there first."""


def api_url(url: str) -> str:
    """Return a server address as its OpenAI base URL: ``http://host:port`` gains ``/v1``."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def served_models(base_url: str, *, timeout: float = 2.0) -> list[str] | None:
    """Return the model names a server serves, or ``None`` when nothing answers there."""
    request = urllib.request.Request(
        api_url(base_url) + "/models", headers={"Authorization": f"Bearer {client_api_key()}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
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


WARM_UP_QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def warm_up(base_url: str, model: str, *, api_key: str | None = None) -> float:
    """Send the requests whose first use is slow on a new server; return the seconds taken.

    On the 2-core CPU a fresh server took 1.3 s for its first request, 2.2 s more for the first
    with the action grammar (compiling it) and 2.0 s more for the first with top-16 logprobs;
    then 0.2-0.6 s for the same requests. One step of each action grammar with logprobs, as
    the agents send it (the model's dialect says which: ``warm_up_calls``), pays all three
    before the first user question does. ``api_key``: the
    server's (default :func:`client_api_key`).
    """
    from pydantic import SecretStr

    from langgraph_parallel.models.dialect import tool_dialect

    begin = time.perf_counter()
    key = SecretStr(api_key or client_api_key())
    client = ChatVLLMServer(base_url=base_url, model=model, max_tokens=16, api_key=key)
    if client.style == "raw":
        for prompt, options in tool_dialect(client.dialect).warm_up_calls(
            WARM_UP_QUESTION, client.prompt_kind
        ):
            client.invoke(prompt, **options)
    else:
        client.invoke(WARM_UP_QUESTION)
    return time.perf_counter() - begin
