"""The ``search`` node: one ``Send`` branch runs one sub-query against the searcher."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import SearchContext, run_context
from langgraph_parallel.agent.events import emit
from langgraph_parallel.agent.nodes import Body, DualNode, Wait
from langgraph_parallel.agent.state import SearchResult, SubQuery
from langgraph_parallel.errors import clean_text, reported_error
from langgraph_parallel.retrieval.batching import SearchBatcher
from langgraph_parallel.retrieval.documents import format_passages
from langgraph_parallel.retrieval.search import Searcher

SEARCH_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="lgp-search")
"""Where searches run (the graph's ``search`` node and the ``create_agent`` tool), so a hung
searcher can be abandoned after its timeout without blocking the graph."""


def error_observation(error: str) -> str:
    """Return what the model reads for a sub-query whose search failed (``error`` says how)."""
    return f"Search error ({error}); no documents."


class SearchNode(DualNode):
    """Run one sub-query; failures and timeouts become an observation, never an exception.

    The sub-queries of one fan-out are searched in one ``batch_search`` call (one encoder pass
    for all of them) through a :class:`~langgraph_parallel.retrieval.batching.SearchBatcher`.

    A transient error (connection, HTTP 429/5xx) is re-raised while ``retry`` has attempts left,
    so LangGraph re-runs this branch alone; the last attempt reports it. A timeout is reported at
    once: ``timeout`` is the caller's bound on the wait, and retrying would multiply it.

    Args:
        searcher: Any :class:`~langgraph_parallel.retrieval.search.Searcher`.
        top_k: Documents per sub-query.
        timeout: Seconds before the search is reported as timed out.
        retry: The retry policy the node is added with (``None``: report every error at once).
        passage_sentences: Show each passage's title and first N sentences (``None``: whole);
            a run's context overrides it.
    """

    def __init__(
        self,
        searcher: Searcher,
        *,
        top_k: int = 3,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        passage_sentences: int | None = None,
    ) -> None:
        self.searcher = searcher
        self.batcher = SearchBatcher(searcher, SEARCH_POOL)
        self.top_k = top_k
        self.timeout = timeout
        self.defaults = SearchContext(
            top_k=top_k, search_timeout=timeout, passage_sentences=passage_sentences
        )
        self.retry = retry

    def body(self, payload: SubQuery, runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Search ``payload["query"]`` and return its keyed result.

        On both paths the search itself runs in the batcher's thread pool (the index is
        CPU-bound numpy, and a LangChain retriever is called through ``batch``); an
        ``ainvoke`` run awaits it without holding a thread.
        """
        context = run_context(runtime, self.defaults)
        top_k, timeout = context.top_k, context.search_timeout
        result = SearchResult(
            turn=payload["turn"], index=payload["index"], query=payload["query"], text="", titles=[]
        )
        ident = f"{payload['turn']}.{payload['index']}"
        emit(runtime, "search_start", id=ident, query=payload["query"])
        future = self.batcher.submit(
            payload["query"], top_k, group=payload.get("group"), size=payload.get("size", 1)
        )
        try:
            passages = yield Wait(future, timeout)
            # Formatting is inside the try: a searcher returning the wrong shape is a failing tool.
            text = format_passages(passages, passage_sentences=context.passage_sentences)
            result["text"] = clean_text(text)
            result["titles"] = [clean_text(str(p.title)) for p in passages]
        except TimeoutError:
            result["error"] = f"search timed out after {timeout:g} s"
        except Exception as exc:  # a failing tool is reported to the model, and the run goes on
            result["error"] = f"search failed: {reported_error(exc, runtime, self.retry)}"
        error = result.get("error")
        if error:
            result["titles"] = []
            result["text"] = error_observation(error)
        emit(
            runtime,
            "search_end",
            id=ident,
            query=payload["query"],
            titles=result["titles"],
            error=result.get("error"),
        )
        return {"search_results": [result]}
