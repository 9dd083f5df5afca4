"""Dense (cosine) search over a passage corpus, with cached embedding matrices.

The search is an exact scan, or FAISS's approximate IVF index for large corpora
(:mod:`.ivf`, chosen by size: ``scan="auto"``). Embedding the 20k-paragraph HotpotQA corpus
takes minutes on a CPU, so the matrix is looked up, in order, (a) next to the corpus or in the
repo's ``data/`` (shipped by ``tools/build_index.py``), (b) in the cache directory, and only
then (c) computed and saved to the cache. A stored matrix is used only if its JSON sidecar
names the same corpus bytes (SHA-256) and encoder and has at least the rows needed; anything
else, including an unreadable file, is ignored and rebuilt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import cache_dir as default_cache_dir
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.retrieval import matrix_store
from langgraph_parallel.retrieval.corpus import corpus_sha256, load_corpus
from langgraph_parallel.retrieval.documents import Passage, Ranking, ranked_passages
from langgraph_parallel.retrieval.ivf import (
    DEFAULT_NPROBE,
    INSTALL,
    IVF_FROM,
    IvfSearch,
    faiss_or_none,
)

__all__ = [
    "CorpusIndex",
    "Scan",
    "embed_passages",
    "embed_texts",
    "encoder_id",
    "passage_text",
]

logger = logging.getLogger(__name__)
_CHUNK = 512

Scan = Literal["auto", "exact", "ivf"]
"""How a dense index searches: ``exact`` scans every vector; ``ivf`` probes FAISS's inverted
lists (:mod:`.ivf`); ``auto`` is ``ivf`` from :data:`~.ivf.IVF_FROM` passages when FAISS is
installed, else ``exact``."""


def passage_text(passage: Passage) -> str:
    """Return the text embedded for a passage: title and body, as Search-R1 indexes them."""
    return f"{passage.title}\n{passage.text}"


def encoder_id(embeddings: Embeddings) -> str:
    """Identify an encoder for cache keys: its ``identifier`` attribute, else class and model."""
    ident = getattr(embeddings, "identifier", None)
    if isinstance(ident, str) and ident:
        return ident
    model = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    return f"{type(embeddings).__module__}.{type(embeddings).__qualname__}:{model}"


def embed_texts(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """Embed texts with one encoder call into a float32 ``(len(texts), dim)`` array."""
    embed_array = getattr(embeddings, "embed_array", None)
    if callable(embed_array):
        return np.asarray(embed_array(list(texts)), dtype=np.float32)
    return np.asarray(embeddings.embed_documents(list(texts)), dtype=np.float32)


def embed_passages(
    passages: Sequence[Passage], embeddings: Embeddings, *, progress: bool = True
) -> np.ndarray:
    """Embed passages in chunks behind a tqdm progress bar; float32, one row per passage."""
    from tqdm.auto import tqdm

    parts = []
    with tqdm(
        total=len(passages), unit="para", desc="Embedding corpus", disable=not progress
    ) as bar:
        for start in range(0, len(passages), _CHUNK):
            chunk = passages[start : start + _CHUNK]
            parts.append(embed_texts(embeddings, [passage_text(p) for p in chunk]))
            bar.update(len(chunk))
    return np.concatenate(parts, axis=0)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to length 1 (zero rows stay zero), in float32."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)


class CorpusIndex:
    """A corpus as unit vectors, searched by inner product (cosine), exactly or approximately.

    The exact scan is one numpy matrix product for all queries of a call, then a partial sort.
    Written with numpy rather than FAISS because of what was measured on the 2-core CPU
    (scratch runs, hybrid-free dense search of the bundled corpus): the query encoder is numpy
    (OpenBLAS threads), and FAISS's OpenMP pool spins against them after every call, so a query
    took 13.2 ms with ``faiss.IndexFlatIP`` and 8.3 ms with the numpy product (four queries:
    14.7 vs 13.6 ms); a torch product, with torch's own OpenMP pool, was worse again (10.1 and
    21.1 ms). Both are exact; rankings agree up to the order of tied scores.

    That holds up to a few hundred thousand passages; from :data:`~.ivf.IVF_FROM` the index
    searches FAISS's IVF lists instead (``scan``), trading a little recall for reading a
    fraction of the vectors (``benchmarks/large_corpus/``).

    Build it with :meth:`build`. Searching is thread-safe: the scan is read-only and the encoder
    is expected to serialise its own calls (``MiniLMEmbeddings`` does).

    Args:
        passages: The corpus.
        vectors: One embedding per passage.
        embeddings: The query encoder (the one the vectors were made with).
        scan: ``auto``, ``exact`` or ``ivf`` (:data:`Scan`).
        nprobe: IVF lists searched a query.
        ivf_path: Where the IVF index is kept between processes (:meth:`build` sets it).

    Raises:
        UserError: ``scan="ivf"`` without FAISS installed.
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        vectors: np.ndarray,
        embeddings: Embeddings,
        *,
        scan: Scan = "auto",
        nprobe: int = DEFAULT_NPROBE,
        ivf_path: Path | None = None,
    ) -> None:
        if vectors.ndim != 2 or vectors.shape[0] != len(passages):
            raise ValueError(
                f"need one vector per passage, got {vectors.shape} for {len(passages)}"
            )
        self.passages = list(passages)
        self.embeddings = embeddings
        # float16 storage rounds the norms; re-normalising keeps inner product == cosine.
        self._matrix = _unit_rows(vectors)
        self._dimension = int(self._matrix.shape[1])
        self.scan: Literal["exact", "ivf"] = _chosen(scan, len(self.passages))
        self._ivf = None
        if self.scan == "ivf":
            self._ivf = IvfSearch(self._matrix, path=ivf_path, nprobe=nprobe)
            self._matrix = self._matrix[:0]  # FAISS holds its own copy: keep one, not two
        self._runner = ThreadPoolExecutor(1, thread_name_prefix="dense-search")

    @classmethod
    def build(
        cls,
        corpus_path: str | Path,
        embeddings: Embeddings,
        *,
        limit: int | None = None,
        cache_dir: str | Path | None = None,
        passages: Sequence[Passage] | None = None,
        scan: Scan = "auto",
        nprobe: int = DEFAULT_NPROBE,
    ) -> CorpusIndex:
        """Load a corpus and its embedding matrix (prebuilt, cached, or computed) into an index.

        Args:
            corpus_path: A corpus file or folder (see :func:`load_corpus`).
            embeddings: Any LangChain ``Embeddings``; give it an ``identifier`` string attribute
                if its class and model name do not pin down its vectors.
            limit: Index only the first ``limit`` rows.
            cache_dir: Where computed matrices are kept; defaults to ``<cache_dir()>/embeddings``.
            passages: The corpus as ``load_corpus(corpus_path, limit=limit)`` returns it, when
                the caller has it already (a hybrid index loads it once for both halves).
            scan: Exact scan or FAISS IVF (:data:`Scan`); a built IVF index is cached beside
                the computed matrices.
            nprobe: IVF lists searched a query.

        Returns:
            The ready index.

        Raises:
            UserError: The corpus is missing or malformed, or ``scan="ivf"`` without FAISS.

        """
        corpus_path = Path(corpus_path).expanduser()
        if passages is None:
            passages = load_corpus(corpus_path, limit=limit)
        key = matrix_store.MatrixKey(
            corpus_sha256=corpus_sha256(corpus_path),
            encoder=encoder_id(embeddings),
            rows=len(passages),
            limit=limit,
        )
        cache = Path(cache_dir) if cache_dir else default_cache_dir() / "embeddings"
        prebuilt_dirs = dict.fromkeys([corpus_path.parent, repo_data_dir()])
        candidates = [matrix_store.prebuilt_path(corpus_path, d) for d in prebuilt_dirs]
        cached = cache / f"{matrix_store.stem(corpus_path)}.{key.fingerprint[:16]}.f16.npy"
        others = [p for p in matrix_store.cached_paths(cache, corpus_path) if p != cached]
        ivf_path = cached.with_name(cached.name.replace(".f16.npy", ".ivf.faiss"))
        for path in dict.fromkeys([*candidates, cached, *others]):
            vectors = matrix_store.load(path, key)
            if vectors is not None:
                logger.info("Using embeddings from %s", path)
                return cls(
                    passages, vectors, embeddings, scan=scan, nprobe=nprobe, ivf_path=ivf_path
                )
        vectors = embed_passages(passages, embeddings)
        matrix_store.save(cached, vectors, key)
        return cls(passages, vectors, embeddings, scan=scan, nprobe=nprobe, ivf_path=ivf_path)

    def __len__(self) -> int:
        return len(self.passages)

    @property
    def dimension(self) -> int:
        """Length of the indexed vectors."""
        return self._dimension

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """Return the ``k`` passages closest to ``query``, best first (see :meth:`batch_search`)."""
        return self.batch_search([query], k)[0]

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        """Return the ``depth`` closest passages per query as ``(position, cosine)``, best first.

        One encoder call and one scan for all queries; blank queries rank nothing without being
        embedded. The work runs on this index's own thread: each thread that calls into torch
        gets its own OpenMP worker team, and the graph's branches arrive on many threads.
        """
        return self._runner.submit(self._ranked, list(queries), depth).result()

    def _ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        results: list[Ranking] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]
        depth = min(depth, len(self.passages))
        if depth <= 0 or not live:
            return results
        vectors = np.ascontiguousarray(
            embed_texts(self.embeddings, [queries[i] for i in live]), dtype=np.float32
        )
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise UserError(
                f"The query encoder gives {vectors.shape[-1]}-dim vectors but the index holds "
                f"{self.dimension}-dim ones; search with the encoder the index was built with."
            )
        units = _unit_rows(vectors)
        scores, ids = self._ivf.search(units, depth) if self._ivf else self._scan(units, depth)
        for row, qi in enumerate(live):
            pairs = zip(ids[row], scores[row], strict=True)
            results[qi] = [(int(j), float(score)) for j, score in pairs if j >= 0]
        return results

    def _scan(self, vectors: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(scores, positions)``, ``(len(vectors), depth)`` each, best first per row.

        ``depth`` is at most the corpus size. Equal scores go by position, at the cut too
        (duplicate passages have equal vectors).
        """
        # matrix @ queries.T reads the matrix once for all queries.
        product = self._matrix @ vectors.T  # (passages, queries)
        n = product.shape[0]
        scores, positions = [], []
        for column in product.T:
            if depth < n:
                kth = np.partition(column, n - depth)[n - depth]
                candidates = np.flatnonzero(column >= kth)  # every passage tied at the cut
            else:
                candidates = np.arange(n)
            best = candidates[np.lexsort((candidates, -column[candidates]))][:depth]
            scores.append(column[best])
            positions.append(best)
        return np.stack(scores), np.stack(positions)

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search several queries with one encoder call and one scan.

        Args:
            queries: Query strings; blank ones get an empty result without being embedded.
            k: Passages per query (capped at the corpus size); ``k <= 0`` returns empty lists.

        Returns:
            One list per query, in query order, each best first with ``score`` = cosine.

        """
        return ranked_passages(self.passages, self.ranked(queries, k))


def _chosen(scan: Scan, rows: int) -> Literal["exact", "ivf"]:
    """Resolve ``scan`` for a corpus of ``rows`` passages (see :data:`Scan`)."""
    if scan not in ("auto", "exact", "ivf"):
        raise UserError(f"Unknown scan {scan!r}; choose auto, exact or ivf.")
    if scan != "auto":
        return scan
    if rows < IVF_FROM:
        return "exact"
    if faiss_or_none() is None:
        logger.warning(
            "%s passages are searched by an exact scan of every vector; an approximate index "
            "is faster at this size: %s.",
            f"{rows:,}",
            INSTALL,
        )
        return "exact"
    return "ivf"
