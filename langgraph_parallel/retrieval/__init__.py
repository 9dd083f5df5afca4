"""Closed-corpus retrieval: passages, the MiniLM encoder, a FAISS index, any LangChain retriever.

Heavy dependencies (torch, transformers, faiss) are imported only when an encoder or index is
actually built, so importing this package stays cheap.
"""

from langgraph_parallel.retrieval.documents import Passage, format_passages
from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings
from langgraph_parallel.retrieval.faiss_index import CorpusIndex, default_index
from langgraph_parallel.retrieval.search import RetrieverSearcher, Searcher, as_searcher

__all__ = [
    "CorpusIndex",
    "MiniLMEmbeddings",
    "Passage",
    "RetrieverSearcher",
    "Searcher",
    "as_searcher",
    "default_index",
    "format_passages",
]
