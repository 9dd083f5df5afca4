"""The ``Searcher`` contract the graphs call, and adapters for LangChain retrievers and stores."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Protocol, cast, runtime_checkable

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval.documents import Passage

__all__ = [
    "LimitedSearcher",
    "PASSAGE_CONTRACT",
    "RetrieverSearcher",
    "SearchSource",
    "Searcher",
    "VectorStoreSearcher",
    "as_searcher",
    "checked_results",
]


@runtime_checkable
class Searcher(Protocol):
    """Anything that answers several queries at once; ``CorpusIndex`` is one.

    The graphs check what ``batch_search`` returns (:func:`checked_results`): anything but one
    list of :class:`~langgraph_parallel.retrieval.documents.Passage` per query fails the run at
    its first search with a :class:`~langgraph_parallel.errors.UserError`.
    """

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        """Return up to ``k`` passages per query, one list per query in query order."""
        ...


PASSAGE_CONTRACT = (
    "batch_search(queries, k) must return one list of Passage per query, in query order: "
    "build each with `from langgraph_parallel import Passage; Passage(id=..., title=..., "
    "text=..., score=...)`, or pass a LangChain retriever or vector store, which the graphs "
    "wrap themselves."
)
"""What a :class:`Searcher` returns, and how to build it (quoted by :func:`checked_results`)."""


def checked_results(
    results: object, queries: int, searcher: object = None, *, kept: bool = False
) -> Sequence[Sequence[Passage]]:
    """Return ``results`` when they keep the :class:`Searcher` contract, else fail naming it.

    A searcher returning dicts, strings or LangChain ``Document`` objects is a set-up problem,
    not a failing query: reported per sub-query, every search of every run would read as an
    error and the runs would still end ``answered``. So a searcher that has never kept the
    contract is refused with a :class:`~langgraph_parallel.errors.UserError` (the run ends at
    its first search). One that has (``kept``) and then returns junk is a failing service,
    like one that raises: a ``TypeError``, which the graphs report as that sub-query's search
    error, count (``search_errors``) and log, and the run goes on.

    Args:
        results: What ``batch_search`` returned.
        queries: How many queries it was given.
        searcher: The searcher, named in the error.
        kept: Whether this searcher returned passages the right way before.

    Raises:
        UserError: ``results`` is not one sequence of passages per query, or holds something
            other than a :class:`~langgraph_parallel.retrieval.documents.Passage` (``kept`` is
            false).
        TypeError: The same, ``kept`` being true.
    """
    broken = _broken(results, queries)
    if broken is None:
        return cast(Sequence[Sequence[Passage]], results)
    what, example = broken
    who = f"{type(searcher).__name__}.batch_search" if searcher is not None else "batch_search"
    if kept:
        raise TypeError(f"{who} returned {what}")
    raise UserError(f"{who} returned {what}{example}. {PASSAGE_CONTRACT}")


def _broken(results: object, queries: int) -> tuple[str, str] | None:
    """Say how ``results`` break the contract, and show an example; ``None`` when they don't."""
    if not _is_list_like(results):
        return f"a {type(results).__name__} for {queries} queries", ""
    found = cast(Sequence[object], results)
    if len(found) != queries:
        return f"{len(found)} result lists for {queries} queries", ""
    for i, passages in enumerate(found):
        if not _is_list_like(passages):
            kind = type(passages).__name__
            return f"a {kind} for query {i} where a list of passages was expected", ""
        for passage in cast(Sequence[object], passages):
            if not isinstance(passage, Passage):
                hint = (
                    " (a LangChain Document: return the retriever itself, or map each with "
                    "Passage(id=doc.id or '', title=..., text=doc.page_content))"
                    if isinstance(passage, Document)
                    else ""
                )
                what = f"a {type(passage).__name__}{hint} where a Passage was expected"
                return what, f" (query {i}: {_preview(passage)})"
    return None


def _is_list_like(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


SearchSource = Searcher | BaseRetriever | VectorStore
"""What the graph factories accept as ``search``: a :class:`Searcher`, any LangChain retriever or
any LangChain vector store."""


class LimitedSearcher:
    """A searcher that runs at most ``max_in_flight`` searches at once, however many call it.

    One instance shared by every graph (and thread) of a process caps the requests a
    rate-limited tool sees from it: fan-out branches and concurrent runs beyond the cap wait for
    a slot. A run's own ``max_concurrency`` (a top-level key of the run config, not inside
    ``configurable``) caps its branches; this caps the process. Model calls have LangChain's
    ``rate_limiter=`` for requests per second.

    Args:
        searcher: Any :class:`Searcher`.
        max_in_flight: Searches running at once, at least 1.

    Raises:
        UserError: ``max_in_flight`` below 1.
    """

    def __init__(self, searcher: Searcher, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise UserError(f"max_in_flight must be at least 1 (got {max_in_flight}).")
        self.searcher = searcher
        self.max_in_flight = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight)

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search ``queries`` with the wrapped searcher once a slot is free."""
        with self._slots:
            return self.searcher.batch_search(queries, k)


def document_to_passage(doc: Document) -> Passage:
    """Map a LangChain ``Document`` to a :class:`Passage`.

    The title is ``metadata["title"]`` when present, else the first line of the content (and the
    text is then the remaining lines, or the whole content if it has one line). The id is
    ``doc.id`` or ``metadata["id"]``; the score is ``metadata["score"]`` if numeric, else 0.
    """
    content = doc.page_content or ""
    title = doc.metadata.get("title")
    if isinstance(title, str) and title:
        text = content
    else:
        first, _, rest = content.strip().partition("\n")
        title, text = first.strip(), (rest.strip() or first.strip())
    doc_id = doc.id or doc.metadata.get("id") or ""
    score = doc.metadata.get("score")
    return Passage(
        id=str(doc_id),
        title=title,
        text=text,
        score=float(score) if isinstance(score, (int, float)) else 0.0,
    )


class RetrieverSearcher:
    """Adapt a LangChain ``BaseRetriever`` to :class:`Searcher`.

    All queries go through one ``retriever.batch`` call, so retrievers that batch (or run
    concurrently) keep doing so. A vector store's retriever (``as_retriever()``) is asked for
    exactly ``k`` documents (its ``search_kwargs["k"]`` set to the graph's ``top_k``); any other
    retriever decides how many it returns, and ``k`` only truncates them, so keep its own limit
    at least as large.

    Args:
        retriever: Any LangChain retriever, e.g. ``vector_store.as_retriever()``.

    """

    def __init__(self, retriever: BaseRetriever) -> None:
        self.retriever = retriever

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Return up to ``k`` passages per query; blank queries and ``k <= 0`` give ``[]``."""
        results: list[list[Passage]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]
        if k <= 0 or not live:
            return results
        retriever = self.retriever
        if isinstance(retriever, VectorStoreRetriever):
            kwargs = {**retriever.search_kwargs, "k": k}
            retriever = retriever.model_copy(update={"search_kwargs": kwargs})
        batches = retriever.batch([queries[i] for i in live])
        for qi, docs in zip(live, batches, strict=True):
            results[qi] = [document_to_passage(d) for d in docs[:k]]
        return results

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """Return up to ``k`` passages for one query."""
        return self.batch_search([query], k)[0]


class VectorStoreSearcher:
    """Adapt a LangChain ``VectorStore`` to :class:`Searcher`: ``k`` nearest documents a query.

    Each query is one ``similarity_search_with_score(query, k=k)``, or ``similarity_search``
    for a store without scores. A store has no batch search of its own, so the queries of one
    call (a ParallelSearch turn's sub-queries) are sent at once, each on a thread of its own,
    up to ``max_concurrency``: against a store behind a network a turn then waits for its
    slowest query, not for the sum of them (issue 80). The passages keep the store's order;
    their scores are the store's own (for some stores a distance, lower being closer).

    Args:
        store: Any LangChain vector store (Chroma, PGVector, FAISS, ``InMemoryVectorStore``...).
        max_concurrency: Queries of one call in flight at once (1: one after another).
    """

    def __init__(self, store: VectorStore, max_concurrency: int = 8) -> None:
        if max_concurrency < 1:
            raise UserError(f"max_concurrency must be at least 1 (got {max_concurrency}).")
        self.store = store
        self.max_concurrency = max_concurrency

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Return up to ``k`` passages per query; blank queries and ``k <= 0`` give ``[]``."""
        live = [i for i, q in enumerate(queries) if q.strip()] if k > 0 else []
        results: list[list[Passage]] = [[] for _ in queries]
        if len(live) <= 1 or self.max_concurrency == 1:
            for i in live:
                results[i] = self._search(queries[i], k)
            return results
        with ThreadPoolExecutor(min(len(live), self.max_concurrency)) as pool:
            found = pool.map(lambda i: self._search(queries[i], k), live)
            for i, passages in zip(live, found, strict=True):
                results[i] = passages
        return results

    def _search(self, query: str, k: int) -> list[Passage]:
        try:
            scored = self.store.similarity_search_with_score(query, k=k)
        except NotImplementedError:
            return [document_to_passage(d) for d in self.store.similarity_search(query, k=k)]
        return [replace(document_to_passage(d), score=float(score)) for d, score in scored]


def as_searcher(obj: object) -> Searcher:
    """Return ``obj`` as a :class:`Searcher`.

    Args:
        obj: An object with ``batch_search(queries, k)`` (such as ``CorpusIndex``), returned
            unchanged; a LangChain ``BaseRetriever``, wrapped in :class:`RetrieverSearcher`; or
            a LangChain ``VectorStore``, wrapped in :class:`VectorStoreSearcher`.

    Raises:
        UserError: ``obj`` is neither.

    """
    if isinstance(obj, BaseRetriever):
        return RetrieverSearcher(obj)
    if isinstance(obj, VectorStore):
        return VectorStoreSearcher(obj)
    if callable(getattr(obj, "batch_search", None)):
        return cast(Searcher, obj)  # duck-typed: Searcher is a structural protocol
    raise UserError(
        f"Cannot search with a {type(obj).__name__}; pass a CorpusIndex (or any object with "
        "batch_search(queries, k)), a LangChain BaseRetriever or a LangChain VectorStore."
    )
