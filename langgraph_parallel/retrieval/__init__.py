"""Closed-corpus retrieval: BM25, exact dense (MiniLM) search, their hybrid, LangChain retrievers.

Heavy dependencies (torch, transformers, bm25s) are imported only when an encoder or index is
actually built, so importing this package stays cheap.
"""

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
