"""Closed-corpus retrieval: BM25, exact dense (MiniLM) search, their hybrid, LangChain retrievers.

Heavy dependencies (torch, transformers, bm25s) are imported only when an encoder or index is
actually built, so importing this package stays cheap.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_parallel.retrieval.dense import CorpusIndex
    from langgraph_parallel.retrieval.documents import Passage, format_passages
    from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings
    from langgraph_parallel.retrieval.hybrid import HybridIndex
    from langgraph_parallel.retrieval.indexes import corpus_index, default_index
    from langgraph_parallel.retrieval.lexical import BM25Index
    from langgraph_parallel.retrieval.search import (
        LimitedSearcher,
        RetrieverSearcher,
        Searcher,
        VectorStoreSearcher,
        as_searcher,
    )

# Where each name lives; imported on first use (PEP 562), so that ``retrieval.indexes`` (which
# the command line imports for its choices) does not pull in LangChain's retrievers and numpy.
_HOMES = {
    "BM25Index": "lexical",
    "CorpusIndex": "dense",
    "HybridIndex": "hybrid",
    "LimitedSearcher": "search",
    "MiniLMEmbeddings": "embeddings",
    "Passage": "documents",
    "RetrieverSearcher": "search",
    "Searcher": "search",
    "VectorStoreSearcher": "search",
    "as_searcher": "search",
    "corpus_index": "indexes",
    "default_index": "indexes",
    "format_passages": "documents",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


__all__ = [
    "BM25Index",
    "CorpusIndex",
    "HybridIndex",
    "LimitedSearcher",
    "MiniLMEmbeddings",
    "Passage",
    "RetrieverSearcher",
    "Searcher",
    "VectorStoreSearcher",
    "as_searcher",
    "corpus_index",
    "default_index",
    "format_passages",
]
