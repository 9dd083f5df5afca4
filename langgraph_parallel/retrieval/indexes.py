"""Named index kinds over a corpus file: the one way every graph, command and tool gets one.

``hybrid`` (the default) fuses BM25 and dense MiniLM rankings; ``bm25`` and ``dense`` are its
halves. The ``retrieval`` experiment (``bench run retrieval``, ``benchmarks/retrieval/``) measured
the choice: the hybrid index finds more gold pages in its top 3 than either half on HotpotQA and
2Wiki.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval.corpus import bundled_corpus_path, corpus_version, load_corpus
from langgraph_parallel.retrieval.documents import Passage

if TYPE_CHECKING:  # the indexes import the encoder or bm25s: only when one is built
    from langgraph_parallel.retrieval.dense import CorpusIndex
    from langgraph_parallel.retrieval.hybrid import HybridIndex
    from langgraph_parallel.retrieval.lexical import BM25Index

__all__ = ["DEFAULT_INDEX", "INDEX_KINDS", "Index", "IndexKind", "corpus_index", "default_index"]

IndexKind = Literal["hybrid", "bm25", "dense"]
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)
DEFAULT_INDEX: IndexKind = "hybrid"
Index: TypeAlias = "HybridIndex | BM25Index | CorpusIndex"

_CACHE: dict[tuple[str, float, int, int | None, str], Index] = {}
_LOCK = threading.Lock()


def corpus_index(
    corpus: str | None = None, *, limit: int | None = None, kind: str = DEFAULT_INDEX
) -> Index:
    """Return an index of ``kind`` over ``corpus`` (a file or folder; ``None``: the bundled one).

    Indexes are built once per process and corpus, limit and kind (the dense half of a hybrid
    index is shared with a ``dense`` one); the files behind them are cached on disk.

    Args:
        corpus: Corpus file or folder (see :func:`~.corpus.load_corpus`), or ``None`` for the
            bundled HotpotQA corpus.
        limit: Index only the first ``limit`` passages (a quick start).
        kind: ``hybrid``, ``bm25`` or ``dense``.

    Raises:
        UserError: An unknown kind, or a missing or malformed corpus.
    """
    if kind not in INDEX_KINDS:
        raise UserError(f"Unknown index kind {kind!r}; choose one of {', '.join(INDEX_KINDS)}.")
    path = str(corpus) if corpus is not None else str(bundled_corpus_path())
    # An edited corpus is a new corpus: re-index it rather than serve the old one.
    version = corpus_version(path)
    with _LOCK:
        return _get((path, *version, limit, kind))


def _get(key: tuple[str, float, int, int | None, str]) -> Index:
    """Return the cached index for ``key``, building it (and a hybrid's halves) if needed."""
    if key not in _CACHE:
        _CACHE[key] = _build(key)
    return _CACHE[key]


def _build(
    key: tuple[str, float, int, int | None, str], passages: list[Passage] | None = None
) -> Index:
    path, limit, kind = key[0], key[3], key[4]
    if kind == "bm25":
        from langgraph_parallel.retrieval.lexical import BM25Index

        return BM25Index.build(path, limit=limit, passages=passages)
    if kind == "dense":
        from langgraph_parallel.retrieval.dense import CorpusIndex
        from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings

        return CorpusIndex.build(path, MiniLMEmbeddings(), limit=limit, passages=passages)
    from langgraph_parallel.retrieval.hybrid import HybridIndex

    # The halves are cached under their own keys, so a ``dense`` index shares the encoder's work;
    # the corpus is read once for both (a third of a cold start on the bundled corpus).
    halves = [(*key[:4], half) for half in ("bm25", "dense")]
    missing = [half for half in halves if half not in _CACHE]
    if missing:
        passages = load_corpus(path, limit=limit)
        for half in missing:
            _CACHE[half] = _build(half, passages)
    return HybridIndex(_CACHE[halves[0]], _CACHE[halves[1]])


def default_index(limit: int | None = None, kind: str = DEFAULT_INDEX) -> Index:
    """Return the process-wide index of ``kind`` over the bundled HotpotQA corpus."""
    return corpus_index(None, limit=limit, kind=kind)
