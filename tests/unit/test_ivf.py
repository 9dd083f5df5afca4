"""The dense index's approximate search: real FAISS IVF against the exact scan."""

from __future__ import annotations

import builtins
import gzip
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval import CorpusIndex, Passage, ivf
from langgraph_parallel.retrieval.ivf import IvfSearch, list_count

pytest.importorskip("faiss")


def clustered(rows: int, dim: int = 32, centres: int = 50, seed: int = 0) -> np.ndarray:
    """Vectors around a few centres, as text embeddings are (not uniform on the sphere)."""
    rng = np.random.default_rng(seed)
    middle = rng.normal(size=(centres, dim))
    return (middle[rng.integers(0, centres, rows)] + 0.6 * rng.normal(size=(rows, dim))).astype(
        np.float32
    )


class RowVectors(Embeddings):
    """Query ``"i"`` is row ``i`` of a fixed matrix; documents are never embedded here."""

    identifier = "test-row-vectors"

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.rows[int(t.split("\n")[0])].tolist() for t in texts]  # "title\ntext"

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def passages(rows: int) -> list[Passage]:
    return [Passage(f"p{i}", f"T{i}", "x") for i in range(rows)]


def test_ivf_finds_what_the_exact_scan_finds_with_cosine_scores(tmp_path: Path) -> None:
    docs, queries = clustered(6000), clustered(40, seed=1)
    exact = CorpusIndex(passages(6000), docs, RowVectors(queries), scan="exact")
    approx = CorpusIndex(passages(6000), docs, RowVectors(queries), scan="ivf", nprobe=16)
    assert (exact.scan, approx.scan) == ("exact", "ivf")
    assert approx.dimension == 32
    names = [str(i) for i in range(40)]
    truth, found = exact.ranked(names, 10), approx.ranked(names, 10)
    hits = sum(
        len({j for j, _ in t} & {j for j, _ in f}) for t, f in zip(truth, found, strict=True)
    )
    assert hits / 400 >= 0.95
    # Scores are the same cosines the exact scan gives for the same passage.
    cosine = {j: s for j, s in truth[0]}
    for j, score in found[0]:
        if j in cosine:
            assert score == pytest.approx(cosine[j], abs=1e-4)
    assert [s for _, s in found[0]] == sorted((s for _, s in found[0]), reverse=True)


def test_a_query_probing_too_few_vectors_gets_a_shorter_list_not_padding() -> None:
    docs = clustered(400)
    index = CorpusIndex(passages(400), docs, RowVectors(docs[:1]), scan="ivf", nprobe=1)
    (found,) = index.ranked(["0"], 400)  # one list of ~40 vectors holds fewer than 400
    assert 0 < len(found) < 400
    assert all(j >= 0 for j, _ in found)
    assert found[0][0] == 0  # the query is passage 0 itself


def test_auto_picks_ivf_from_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = clustered(2000)
    monkeypatch.setattr("langgraph_parallel.retrieval.dense.IVF_FROM", 2000)
    assert CorpusIndex(passages(2000), docs, RowVectors(docs)).scan == "ivf"
    assert CorpusIndex(passages(1999), docs[:1999], RowVectors(docs)).scan == "exact"


def test_without_faiss_auto_warns_naming_the_install_and_ivf_is_refused(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_import = builtins.__import__

    def no_faiss(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "faiss":
            raise ImportError("No module named 'faiss'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_faiss)
    monkeypatch.setattr("langgraph_parallel.retrieval.dense.IVF_FROM", 100)
    docs = clustered(300)
    with caplog.at_level(logging.WARNING):
        index = CorpusIndex(passages(300), docs, RowVectors(docs))
    assert index.scan == "exact"
    assert "pip install faiss-cpu" in caplog.text and "300 passages" in caplog.text
    assert index.ranked(["5"], 1)[0][0][0] == 5  # the exact scan still answers
    with pytest.raises(UserError, match=r"needs FAISS: pip install faiss-cpu"):
        CorpusIndex(passages(300), docs, RowVectors(docs), scan="ivf")
    with pytest.raises(UserError, match="choose auto, exact or ivf"):
        CorpusIndex(passages(300), docs, RowVectors(docs), scan="hnsw")  # type: ignore[arg-type]


def test_the_built_index_is_kept_and_reused_by_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = clustered(3000)
    corpus = tmp_path / "big.jsonl.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as f:
        f.writelines(
            json.dumps({"id": str(i), "title": str(i), "text": str(i)}) + "\n" for i in range(3000)
        )
    encoder = RowVectors(docs)
    cache = tmp_path / "cache"
    first = CorpusIndex.build(corpus, encoder, cache_dir=cache, scan="ivf")
    (kept,) = cache.glob("big.*.ivf.faiss")
    assert "IVF index" in capsys.readouterr().err  # the progress bar while it builds

    def no_training(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the kept index should have been read, not built")

    monkeypatch.setattr(IvfSearch, "_build", no_training)
    again = CorpusIndex.build(corpus, encoder, cache_dir=cache, scan="ivf")
    assert again.ranked(["7", "8"], 5) == first.ranked(["7", "8"], 5)
    # A damaged file is built again, not trusted.
    monkeypatch.undo()
    kept.write_bytes(b"not an index")
    rebuilt = CorpusIndex.build(corpus, encoder, cache_dir=cache, scan="ivf")
    # (the first build's vectors were the encoder's, later ones the cache's float16 copies)
    assert [j for j, _ in rebuilt.ranked(["7"], 5)[0]] == [j for j, _ in first.ranked(["7"], 5)[0]]


def test_list_count_keeps_enough_training_points() -> None:
    assert list_count(1_000_000) == 4000
    assert list_count(1000) == 25  # 39 points a list, not 4 sqrt(n) = 126
    assert list_count(10) == 1
    assert list_count(ivf.IVF_FROM) >= ivf.DEFAULT_NPROBE
