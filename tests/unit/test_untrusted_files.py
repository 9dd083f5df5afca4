"""A cached embedding matrix is data, never code: a pickled ``.npy`` is refused, not loaded."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from langgraph_parallel.retrieval import matrix_store
from langgraph_parallel.retrieval.matrix_store import MatrixKey


class Payload:
    """Unpickling this would create ``marker``: proof that pickled code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_pickled_matrix_is_refused_with_a_clear_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = MatrixKey(corpus_sha256="c" * 64, encoder="enc", rows=2)
    path = tmp_path / "corpus.enc.f16.npy"
    matrix_store.save(path, np.ones((2, 4), dtype=np.float32), key)
    assert matrix_store.load(path, key) is not None
    marker = tmp_path / "pwned"
    np.save(path, np.array([Payload(marker), Payload(marker)], dtype=object), allow_pickle=True)
    meta = json.loads(matrix_store.sidecar_path(path).read_text())
    assert meta["rows"] == 2  # the sidecar still matches, so only the loader stands in the way
    with caplog.at_level(logging.WARNING, logger=matrix_store.__name__):
        assert matrix_store.load(path, key) is None
    assert not marker.exists()
    assert "Ignoring unreadable embedding matrix" in caplog.text
    assert "allow_pickle=False" in caplog.text  # numpy's reason, quoted in the log line
