"""An approximate inner-product index for large corpora: FAISS's inverted file (IVF), cached.

The dense index scans every vector exactly, which is the right choice up to a few hundred
thousand passages; past that a query's scan reads the whole matrix (1.5 GB at a million
MiniLM vectors) and the approximate index reads ``nprobe`` of its ``nlist`` lists instead.
FAISS builds and searches it (``IndexIVFFlat``, inner product over unit vectors, so scores stay
cosines); this module only chooses its sizes, shows a progress bar while it builds, and keeps
the built index on disk next to the embedding matrix it was made from. The sizes and the
threshold were measured (``benchmarks/large_corpus/``).
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_parallel.errors import UserError, install_hint

__all__ = ["DEFAULT_NPROBE", "IVF_FROM", "IvfSearch", "faiss_or_none", "list_count"]

logger = logging.getLogger(__name__)

IVF_FROM = 250_000
"""Corpus size (passages) from which ``scan="auto"`` uses the IVF index (when FAISS is there).

Measured on 2 cores (``benchmarks/large_corpus/``): the exact scan of a fan-out's four
queries took 39 ms at 147k passages and 204 ms at 1M, linear in between (~65 ms here), where
the IVF index took 5-11 ms and kept 0.96-0.97 of the exact top 10. Below it the exact scan
costs a question little and loses nothing."""

DEFAULT_NPROBE = 128
"""Lists searched a query: recall@10 against the exact scan 0.965 at 147k passages (1,532
lists) and 0.968 at 1M (4,000 lists); 64 lists gave 0.93-0.94."""

_ADD_CHUNK = 65_536
_TRAIN_PER_LIST = 39  # FAISS's own minimum of training points a centroid
_TRAIN_MAX = 256 * 1024
INSTALL = f"pip install faiss-cpu, or the extra: {install_hint('faiss')}"


def faiss_or_none() -> Any | None:
    """Return the ``faiss`` module, or ``None`` when it is not installed."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


def list_count(rows: int) -> int:
    """Return ``nlist`` for ``rows`` vectors: 4 sqrt(n), with 39 training points a list."""
    return max(1, min(int(4 * math.sqrt(rows)), rows // _TRAIN_PER_LIST))


class IvfSearch:
    """Unit vectors in a FAISS IVF index, searched for the top ``depth`` by inner product.

    Args:
        matrix: ``(passages, dim)`` float32 unit rows (the dense index's matrix).
        path: Where the built index is kept (read if present and of this matrix's shape,
            written after a build); ``None`` keeps it in memory only.
        nprobe: Lists searched a query (more: slower, closer to the exact scan).
        progress: Show a progress bar while building.

    Raises:
        UserError: FAISS is not installed (the message names the install).
    """

    def __init__(
        self,
        matrix: np.ndarray,
        *,
        path: Path | None = None,
        nprobe: int = DEFAULT_NPROBE,
        progress: bool = True,
    ) -> None:
        faiss = faiss_or_none()
        if faiss is None:
            raise UserError(f"An approximate (IVF) index needs FAISS: {INSTALL}.")
        self._faiss = faiss
        rows, dim = matrix.shape
        self.nlist = list_count(rows)
        loaded = self._load(path, rows, dim)
        self.index: Any = loaded if loaded is not None else self._build(matrix, progress)
        if loaded is None and path is not None:
            self._save(path)
        self.index.nprobe = min(nprobe, self.nlist)

    def _load(self, path: Path | None, rows: int, dim: int) -> Any | None:
        if path is None or not path.exists():
            return None
        try:
            index = self._faiss.read_index(str(path))
        except RuntimeError as err:  # a truncated or foreign file: build again
            logger.warning("Ignoring unreadable IVF index %s (%s)", path, err)
            return None
        if index.ntotal != rows or index.d != dim or getattr(index, "nlist", 0) != self.nlist:
            return None
        logger.info("Using the IVF index in %s", path)
        return index

    def _build(self, matrix: np.ndarray, progress: bool) -> Any:
        from tqdm.auto import tqdm

        faiss = self._faiss
        rows, dim = matrix.shape
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, self.nlist, faiss.METRIC_INNER_PRODUCT)
        sample = min(rows, max(self.nlist * _TRAIN_PER_LIST, min(rows, _TRAIN_MAX)))
        picked = np.random.default_rng(0).choice(rows, size=sample, replace=False)
        with tqdm(
            total=rows, unit="vec", desc=f"IVF index ({self.nlist} lists)", disable=not progress
        ) as bar:
            bar.set_postfix_str(f"k-means on {sample:,}")
            index.train(np.ascontiguousarray(matrix[np.sort(picked)]))
            bar.set_postfix_str("adding")
            for start in range(0, rows, _ADD_CHUNK):
                chunk = matrix[start : start + _ADD_CHUNK]
                index.add(np.ascontiguousarray(chunk))
                bar.update(len(chunk))
        return index

    def _save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self._faiss.write_index(self.index, str(partial))
        os.replace(partial, path)  # readers never see a half-written index

    def search(self, vectors: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(scores, positions)``, ``(len(vectors), depth)`` each, best first per row.

        The probed lists may hold fewer than ``depth`` vectors in all: FAISS fills the
        missing slots with position ``-1``, which callers drop.
        """
        scores, ids = self.index.search(np.ascontiguousarray(vectors), depth)
        return scores, ids
