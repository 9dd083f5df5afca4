"""Web search through Tavily (``langchain-tavily``) as a :class:`Searcher`.

Parallel ``Send`` branches would otherwise hit the API all at once, so calls pass a process-wide
semaphore (``max_concurrency`` requests in flight per searcher), and rate limits (HTTP 429) and
server or gateway failures (5xx, dropped connections, non-JSON error pages) are retried with
exponential backoff, a bounded number of times: LangGraph's ``RetryPolicy`` sets the timing,
the project's one transient-error rule (:func:`~langgraph_parallel.errors.is_transient`) what
is retried. Other errors (401 bad key, 400 bad request) are not retried: repeating them cannot
help. Error messages have the API key removed (a server may echo it back), so a
:class:`TavilyError` is safe to log and to show the model. langchain-tavily's sync client sets
no request timeout; the graph's ``search_timeout`` abandons a hung branch, but its request keeps
its slot until the connection ends.

Happy path::

    export TAVILY_API_KEY=tvly-...
    searcher = TavilySearcher(max_results=5)
    graph = create_parallel_search_graph(model, searcher)
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langgraph.types import RetryPolicy

from langgraph_parallel.errors import UserError, call_with_retry, install_hint, is_transient, redact
from langgraph_parallel.retrieval.documents import Passage

__all__ = ["DEFAULT_TAVILY_RETRY", "RetryPolicy", "TavilyError", "TavilySearcher"]

_STATUS = re.compile(r"\bError (\d{3})\b")

DEFAULT_TAVILY_RETRY = RetryPolicy(
    initial_interval=1.0,
    backoff_factor=2.0,
    max_interval=16.0,
    max_attempts=4,
    jitter=True,
    retry_on=is_transient,
)
"""Requests per query and backoff: 4 attempts, 1 s, 2 s, 4 s apart (+ up to 1 s jitter, so
branches rate-limited together do not retry together). Longer than the nodes' policy: a rate
limit needs seconds to clear."""


class TavilyError(RuntimeError):
    """A Tavily search failed for good (after retries, or with an error retrying cannot fix).

    Attributes:
        status: The HTTP status when the API answered with one, else ``None``.
        status_code: The same, under the name :func:`~langgraph_parallel.errors.is_transient`
            reads (429 and 5xx are worth another attempt).
        attempts: Requests made for this query.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = self.status_code = status
        self.attempts = attempts


def _api_error(error: object) -> TavilyError:
    """Turn the error langchain-tavily reported in a response into a :class:`TavilyError`.

    A transport failure (an exception object) becomes the cause, which
    :func:`~langgraph_parallel.errors.is_transient` follows.
    """
    match = _STATUS.search(str(error))
    failure = TavilyError(str(error), status=int(match.group(1)) if match else None)
    if isinstance(error, BaseException):
        failure.__cause__ = error
    return failure


def _passages(response: Mapping[str, Any], k: int) -> list[Passage]:
    return [
        Passage(
            id=str(hit.get("url") or ""),
            title=str(hit.get("title") or hit.get("url") or ""),
            text=str(hit.get("content") or ""),
            score=float(hit.get("score") or 0.0),
        )
        for hit in list(response.get("results") or [])[:k]
    ]


class TavilySearcher:
    """Tavily web search with a concurrency limit and retries, for any graph's ``search``.

    Args:
        tool: A ready ``langchain_tavily.TavilySearch``; by default one is built from the other
            arguments.
        api_key: Tavily key; default ``TAVILY_API_KEY`` from the environment.
        api_base_url: API address (default: Tavily's); a local stub in tests.
        max_results: Results Tavily returns per query; ``batch_search(k)`` keeps the first ``k``.
        max_concurrency: Requests in flight at once, over all threads using this searcher.
        retry: LangGraph's ``RetryPolicy`` for requests (default :data:`DEFAULT_TAVILY_RETRY`);
            which errors are retried is :func:`~langgraph_parallel.errors.is_transient`.
        sleep: Called with the delay between attempts (tests pass a recorder).
        **tool_options: More ``TavilySearch`` settings, e.g. ``search_depth="advanced"``.

    Raises:
        UserError: No key (argument or ``TAVILY_API_KEY``), or ``langchain-tavily`` missing.
    """

    def __init__(
        self,
        tool: Any = None,
        *,
        api_key: str | None = None,
        api_base_url: str | None = None,
        max_results: int = 5,
        max_concurrency: int = 4,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **tool_options: Any,
    ) -> None:
        if max_concurrency < 1:
            raise UserError(f"max_concurrency must be at least 1 (got {max_concurrency}).")
        self.tool = tool or _build_tool(api_key, api_base_url, max_results, tool_options)
        # Kept only to scrub it from error messages; never part of repr or an error.
        self._key = api_key or _tool_key(self.tool) or os.environ.get("TAVILY_API_KEY")
        self.max_concurrency = max_concurrency
        self.retry = retry or DEFAULT_TAVILY_RETRY
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """Return up to ``k`` web results for ``query``; see :meth:`batch_search`."""
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search each query (concurrently, within the limit); one list per query, in order.

        Blank queries and ``k <= 0`` give empty lists without a request; a query Tavily finds
        nothing for gives an empty list.

        Raises:
            TavilyError: A query failed after its retries or with a non-retryable error.
        """
        # One request per distinct query; repeats share its result.
        live = list(dict.fromkeys(q for q in queries if q.strip())) if k > 0 else []
        if len(live) <= 1:
            found = {q: self._search_one(q, k) for q in live}
        else:
            with ThreadPoolExecutor(min(len(live), self.max_concurrency)) as pool:
                hits = pool.map(lambda q: self._search_one(q, k), live)
                found = dict(zip(live, hits, strict=True))
        return [found.get(q, []) for q in queries]

    def _search_one(self, query: str, k: int) -> list[Passage]:
        attempts = 0

        def request() -> list[Passage]:
            nonlocal attempts
            attempts += 1
            with self._slots:  # the backoff sleep is outside it: other queries go on
                response = self.tool.invoke({"query": query})
            if isinstance(response, str):  # the tool's "No search results found ..." message
                return []
            error = response.get("error") if isinstance(response, Mapping) else None
            if error is None:
                return _passages(response, k)
            raise _api_error(error)

        try:
            return call_with_retry(request, self.retry, sleep=self._sleep)
        except TavilyError as exc:
            tries = f" after {attempts} attempts" if attempts > 1 else ""
            message = redact(f"Tavily search failed{tries}: {exc}", [self._key])
            raise TavilyError(message, status=exc.status, attempts=attempts) from None


def _tool_key(tool: Any) -> str | None:
    """Return the key inside a ``TavilySearch`` tool, if it has one where we expect it."""
    secret: Any = getattr(getattr(tool, "api_wrapper", None), "tavily_api_key", None)
    value = secret.get_secret_value() if hasattr(secret, "get_secret_value") else None
    return value if isinstance(value, str) else None


def _build_tool(
    api_key: str | None, api_base_url: str | None, max_results: int, options: dict[str, Any]
) -> Any:
    key = api_key or os.environ.get("TAVILY_API_KEY")
    if not key:
        raise UserError(
            "Tavily web search needs an API key: set TAVILY_API_KEY (get one at "
            "https://app.tavily.com), or use the local corpus (unset LANGGRAPH_PARALLEL_SEARCH)."
        )
    try:
        from langchain_tavily import TavilySearch
    except ImportError as exc:
        raise UserError(f"Tavily search needs langchain-tavily: {install_hint('tavily')}.") from exc
    if api_base_url:
        options["api_base_url"] = api_base_url
    return TavilySearch(tavily_api_key=key, max_results=max_results, **options)
