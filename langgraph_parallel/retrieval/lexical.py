"""BM25 over a paragraph corpus with ``bm25s``, cached on disk like the embedding matrices.

Dense MiniLM retrieval misses entity names that BM25 matches exactly (on HotpotQA, BM25 is the
baseline dense retrievers are measured against); :mod:`~.hybrid` fuses the two. Each passage is
indexed as its title and text (as the dense index embeds it), tokenised by ``bm25s`` with English
stop words removed and the Snowball English stemmer (PyStemmer).

Building the index over the bundled 20k paragraphs takes a few seconds; it is still cached under
``<cache_dir()>/bm25/``, keyed like the embedding matrices by the corpus bytes (SHA-256), the
row limit and the BM25 settings, so a process starts in milliseconds. A cached index that does
not match, or cannot be read, is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.paths import cache_dir as default_cache_dir
from langgraph_parallel.retrieval.corpus import corpus_sha256, load_corpus
from langgraph_parallel.retrieval.documents import Passage, Ranking, ranked_passages
from langgraph_parallel.retrieval.matrix_store import stem

__all__ = ["BM25Index"]

logger = logging.getLogger(__name__)
FORMAT_VERSION = 1


def _bm25s() -> tuple[Any, Any]:
    """Import bm25s (on its numpy backend) and PyStemmer.

    bm25s imports numba when it is installed, and numba loads llvmlite, whose ``ffi.lib`` object
    breaks vLLM's CPU engine start (0.32's Triton kernel override scan calls ``vars()`` on every
    module attribute and fails on it). We use bm25s's numpy backend, so numba is hidden while
    bm25s is first imported; a numba someone else already imported is left alone.
    """
    hide = "bm25s" not in sys.modules and "numba" not in sys.modules
    try:
        if hide:
            sys.modules["numba"] = None  # type: ignore[assignment]  # import numba -> ImportError
        import bm25s
        import Stemmer
    except ImportError as exc:
        raise UserError(
            "BM25 search needs bm25s and PyStemmer; install them with "
            f"`pip install bm25s PyStemmer`, or the extra: {install_hint('retrieval')}."
        ) from exc
    finally:
        if hide:
            del sys.modules["numba"]
    return bm25s, Stemmer


def _document(passage: Passage) -> str:
    return f"{passage.title}\n{passage.text}"


class BM25Index:
    """A BM25 index (a :class:`~langgraph_parallel.retrieval.search.Searcher`).

    Build it with :meth:`build` (a corpus file, cached) or :meth:`from_passages`. Searching is
    read-only, so concurrent searches (the fan-out's branches) are safe.

    Args:
        passages: The indexed passages, in corpus order.
        retriever: A ``bm25s.BM25`` indexed over ``passages``.
    """

    def __init__(self, passages: Sequence[Passage], retriever: Any) -> None:
        bm25s, stemmer = _bm25s()
        self.passages = list(passages)
        self._bm25s = bm25s
        self._retriever = retriever
        self._stemmer = stemmer.Stemmer("english")

    @classmethod
    def from_passages(
        cls, passages: Sequence[Passage], *, k1: float = 1.2, b: float = 0.75
    ) -> BM25Index:
        """Index ``passages`` in memory (``k1``, ``b``: the BM25 parameters)."""
        bm25s, stemmer = _bm25s()
        tokens = bm25s.tokenize(
            [_document(p) for p in passages],
            stopwords="en",
            stemmer=stemmer.Stemmer("english"),
            show_progress=False,
        )
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        return cls(passages, retriever)

    @classmethod
    def build(
        cls,
        corpus_path: str | Path,
        *,
        limit: int | None = None,
        cache_dir: str | Path | None = None,
        passages: Sequence[Passage] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> BM25Index:
        """Load a corpus file and its BM25 index (cached, or built and cached).

        Args:
            corpus_path: A corpus file or folder (see ``load_corpus``).
            limit: Index only the first ``limit`` rows.
            cache_dir: Where indexes are kept; defaults to ``<cache_dir()>/bm25``.
            passages: The corpus as ``load_corpus(corpus_path, limit=limit)`` returns it, when
                the caller has it already (a hybrid index loads it once for both halves).
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation.

        Raises:
            UserError: The corpus is missing or malformed, or bm25s is not installed.
        """
        bm25s, _ = _bm25s()
        corpus_path = Path(corpus_path).expanduser()
        if passages is None:
            passages = load_corpus(corpus_path, limit=limit)
        meta = {
            "format": FORMAT_VERSION,
            "corpus_sha256": corpus_sha256(corpus_path),
            "limit": limit,
            "rows": len(passages),
            "k1": k1,
            "b": b,
            "tokenizer": "bm25s stopwords=en stemmer=snowball-english, title+text",
            "bm25s": getattr(bm25s, "__version__", "unknown"),
        }
        fingerprint = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()
        root = Path(cache_dir) if cache_dir else default_cache_dir() / "bm25"
        folder = root / f"{stem(corpus_path)}.{fingerprint[:16]}"
        retriever = _load(folder, meta)
        if retriever is not None:
            return cls(passages, retriever)
        index = cls.from_passages(passages, k1=k1, b=b)
        _save(folder, index._retriever, meta)
        return index

    def __len__(self) -> int:
        return len(self.passages)

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        """Return the ``depth`` best passages per query as ``(position, score)``, best first.

        Queries with no indexed term (blank, only stop words, unknown words) rank nothing.
        """
        depth = min(depth, len(self.passages))
        out: list[Ranking] = [[] for _ in queries]
        if depth <= 0 or not queries:
            return out
        tokens = self._bm25s.tokenize(
            list(queries),
            stopwords="en",
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        vocab = self._retriever.vocab_dict
        for i, words in enumerate(tokens):
            known = [w for w in words if w in vocab]
            if known:
                out[i] = _top(self._retriever.get_scores(known), depth)
        return out

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search several queries; one list per query, best first, ``score`` = BM25 score."""
        return ranked_passages(self.passages, self.ranked(queries, k))


def _top(scores: np.ndarray, depth: int) -> Ranking:
    """Return the ``depth`` best positive scores as ``(position, score)``, ties by position.

    Written here rather than calling ``bm25s``'s ``retrieve``: its top-k runs ``argpartition``
    over every document's score, which takes ~2.5 ms on 20k mostly-zero scores (ties are numpy's
    slow case) and made BM25 cost as much per query as the dense half; a query matches only the
    few documents that contain one of its terms, so ranking those is ~0.05 ms.
    """
    hits = np.flatnonzero(scores > 0)
    if len(hits) > depth:
        # Keep every hit tied with the depth-th best score, so the cut is by position.
        kth = -np.partition(-scores[hits], depth - 1)[depth - 1]
        hits = hits[scores[hits] >= kth]
    order = hits[np.lexsort((hits, -scores[hits]))][:depth]
    return [(int(j), float(scores[j])) for j in order]


def _load(folder: Path, meta: dict[str, Any]) -> Any:
    bm25s, _ = _bm25s()
    try:
        stored = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if stored != meta:
            return None
        return bm25s.BM25.load(str(folder))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("Ignoring unreadable BM25 index %s (%s); rebuilding.", folder, exc)
        return None


def _save(folder: Path, retriever: Any, meta: dict[str, Any]) -> None:
    """Write the index into a temporary folder, then move it in place in one rename."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        retriever.save(str(tmp))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError as exc:  # a read-only cache only costs the next process a rebuild
        logger.warning("Could not cache the BM25 index in %s (%s).", folder, exc)
        shutil.rmtree(tmp, ignore_errors=True)
