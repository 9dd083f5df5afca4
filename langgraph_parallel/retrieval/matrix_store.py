"""Embedding matrices on disk: float16 ``.npy`` plus a JSON sidecar saying what they encode.

The sidecar records the SHA-256 of the corpus file, the encoder identifier, the row count and the
dimension. A matrix is reused only when corpus and encoder match and it has at least the rows
asked for (rows are a prefix of the corpus, so a full-corpus matrix also serves ``limit`` builds).
Files are read with ``allow_pickle=False`` and written atomically (temp file + ``os.replace``),
so a crashed or concurrent writer never leaves a half-written matrix that passes the checks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

__all__ = ["MatrixKey", "cached_paths", "load", "prebuilt_path", "save", "sidecar_path", "stem"]

logger = logging.getLogger(__name__)
FORMAT_VERSION = 1
PREBUILT_TAG = "minilm"


@dataclass(frozen=True)
class MatrixKey:
    """What a stored matrix must encode to be reused."""

    corpus_sha256: str
    encoder: str
    rows: int
    limit: int | None = None

    @property
    def fingerprint(self) -> str:
        """SHA-256 over corpus bytes hash, encoder and limit; names the cache file."""
        payload = f"{self.corpus_sha256}\n{self.encoder}\n{self.limit}"
        return hashlib.sha256(payload.encode()).hexdigest()


def stem(corpus_path: Path) -> str:
    """Return the corpus file name without ``.gz`` / ``.jsonl`` / ``.json`` suffixes."""
    name = corpus_path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def prebuilt_path(corpus_path: Path, directory: Path) -> Path:
    """Return where ``tools/build_index.py`` puts the shipped matrix for a corpus."""
    return directory / f"{stem(corpus_path)}.{PREBUILT_TAG}.f16.npy"


def sidecar_path(matrix_path: Path) -> Path:
    """Return the JSON sidecar path of a matrix (``x.f16.npy`` -> ``x.f16.json``)."""
    return matrix_path.with_suffix(".json")


def cached_paths(directory: Path, corpus_path: Path) -> Iterator[Path]:
    """Yield every cached matrix for a corpus name in ``directory`` (any encoder or limit)."""
    if directory.is_dir():
        yield from sorted(directory.glob(f"{stem(corpus_path)}.*.f16.npy"))


def load(path: Path, key: MatrixKey) -> np.ndarray | None:
    """Return the first ``key.rows`` rows of a stored matrix, or ``None`` if it cannot serve.

    Missing files, foreign sidecars and corrupt or inconsistent matrices all give ``None``
    (the latter two with a log line), so the caller recomputes instead of failing.
    """
    meta_path = sidecar_path(path)
    if not (path.is_file() and meta_path.is_file()):
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if (
            meta.get("format") != FORMAT_VERSION
            or meta.get("corpus_sha256") != key.corpus_sha256
            or meta.get("encoder") != key.encoder
            or int(meta.get("rows", -1)) < key.rows
        ):
            logger.debug("%s encodes another corpus, encoder or fewer rows; skipped", path)
            return None
        matrix = np.load(path, allow_pickle=False)
        expected = (int(meta["rows"]), int(meta["dim"]))
        if matrix.dtype != np.float16 or matrix.shape != expected:
            raise ValueError(f"matrix is {matrix.dtype}{matrix.shape}, sidecar says {expected}")
        matrix = matrix[: key.rows]
        if not np.isfinite(matrix).all():
            raise ValueError("matrix has NaN or infinite values")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        logger.warning("Ignoring unreadable embedding matrix %s (%s); recomputing.", path, exc)
        return None
    return matrix.astype(np.float32)


def _atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(path: Path, vectors: np.ndarray, key: MatrixKey) -> None:
    """Store ``vectors`` as float16 at ``path`` with its sidecar, each written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    matrix = np.ascontiguousarray(vectors, dtype=np.float16)
    meta = {
        "format": FORMAT_VERSION,
        "fingerprint": key.fingerprint,
        "corpus_sha256": key.corpus_sha256,
        "encoder": key.encoder,
        "limit": key.limit,
        "rows": int(matrix.shape[0]),
        "dim": int(matrix.shape[1]),
        "dtype": "float16",
    }
    # Drop the old sidecar first: a crash before the new one lands leaves a matrix without a
    # sidecar, which load ignores, never a sidecar describing other content.
    sidecar_path(path).unlink(missing_ok=True)
    _atomic_write(path, lambda fh: np.save(fh, matrix, allow_pickle=False))
    text = json.dumps(meta, indent=2) + "\n"
    _atomic_write(sidecar_path(path), lambda fh: fh.write(text.encode("utf-8")))
