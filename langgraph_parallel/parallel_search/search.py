"""The ``search`` node: one ``Send`` branch runs one sub-query against the searcher."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.chat import branch_result
from langgraph_parallel.agent.events import emit
from langgraph_parallel.agent.nodes import Body, DualNode, Wait
from langgraph_parallel.errors import reported_error
from langgraph_parallel.parallel_search.context import SearchContext, search_settings
from langgraph_parallel.parallel_search.state import SearchResult, SubQuery
from langgraph_parallel.parallel_search.turn import SEARCH_POOL, SearchTurn, failed
from langgraph_parallel.retrieval.batching import SearchBatcher
from langgraph_parallel.retrieval.search import Searcher


class SearchNode(DualNode):
    """Run one sub-query; failures and timeouts become an observation, never an exception.

    The sub-queries of one fan-out are searched in one ``batch_search`` call (one encoder pass
    for all of them) through a :class:`~langgraph_parallel.retrieval.batching.SearchBatcher`.

    A transient error (connection, HTTP 429/5xx) is re-raised while ``retry`` has attempts left,
    so LangGraph re-runs this branch alone; the last attempt reports it. A timeout is reported at
    once: ``search_timeout`` is the caller's bound on the wait, and retrying would multiply it.
    The outcome is read by the turn (:meth:`~.turn.SearchTurn.read`: a failure is logged as a
    warning) and counted by ``observe`` (``counters["search_errors"]``). A searcher returning
    anything but passages raises :class:`~langgraph_parallel.errors.UserError` at the first
    search: a broken searcher, not a failing query.

    Args:
        searcher: Any :class:`~langgraph_parallel.retrieval.search.Searcher`.
        settings: The turn's build-time settings (``top_k``, ``search_timeout``,
            ``passage_sentences``, ``dedupe_passages``); a run's context overrides them.
        retry: The retry policy the node is added with (``None``: report every error at once).
    """

    def __init__(
        self, searcher: Searcher, settings: SearchContext, *, retry: RetryPolicy | None = None
    ) -> None:
        self.searcher = searcher
        self.batcher = SearchBatcher(searcher, SEARCH_POOL)
        self.settings = settings
        self.retry = retry

    def body(self, payload: SubQuery, runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Search ``payload["query"]``; return its keyed result (with a ``call_id``, its message).

        On both paths the search itself runs in the batcher's thread pool (the index is
        CPU-bound numpy, and a LangChain retriever is called through ``batch``); an
        ``ainvoke`` run awaits it without holding a thread.
        """
        settings = search_settings(runtime, self.settings)
        turn = SearchTurn(settings)
        top_k, timeout = settings.top_k, settings.search_timeout
        result = SearchResult(
            turn=payload["turn"], index=payload["index"], query=payload["query"], text="", titles=[]
        )
        ident = f"{payload['turn']}.{payload['index']}"
        emit(runtime, "search_start", id=ident, query=payload["query"])
        future = self.batcher.submit(
            payload["query"],
            top_k,
            group=payload.get("group"),
            size=payload.get("size", 1),
            order=payload["index"],
        )
        try:
            outcome = yield Wait(future, timeout)
        except TimeoutError:
            outcome = turn.timed_out()
        except Exception as exc:  # a failing tool is reported to the model, and the run goes on
            outcome = failed(reported_error(exc, runtime, self.retry))
        shown = turn.read(payload["query"], outcome)
        result["text"], result["titles"] = shown.text, shown.titles
        if shown.error:
            result["error"] = shown.error
        elif settings.dedupe_passages and not isinstance(outcome, str):
            # observe lists each passage once across the turn: it needs them all.
            result["passages"] = [
                {
                    "id": p.id,
                    "title": p.title,
                    "text": p.text,
                    "sentence_ends": list(p.sentence_ends),
                }
                for p in outcome
            ]
        emit(
            runtime,
            "search_end",
            id=ident,
            query=payload["query"],
            titles=result["titles"],
            error=result.get("error"),
        )
        update: dict[str, Any] = {"search_results": [result]}
        if "call_id" in payload:  # the agent loop's chat: this result, as soon as it is found
            update["messages"] = [
                branch_result(
                    payload["call_id"],
                    payload["query"],
                    result["text"],
                    result["titles"],
                    turn=payload["turn"],
                    index=payload["index"],
                    error=result.get("error"),
                )
            ]
        return update
