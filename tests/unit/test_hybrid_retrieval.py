"""BM25 (real bm25s on a toy corpus), rank fusion, the hybrid index and the index factory."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval import BM25Index, HybridIndex, Passage
from langgraph_parallel.retrieval import indexes as corpus_indexes
from langgraph_parallel.retrieval.documents import Ranking
from langgraph_parallel.retrieval.hybrid import fuse
from langgraph_parallel.retrieval.lexical import _top

ROWS = [
    {"id": "p0", "title": "Scott Derrickson", "text": "Scott Derrickson is an American director."},
    {"id": "p1", "title": "Ed Wood", "text": "Edward Wood Jr. was an American filmmaker."},
    {"id": "p2", "title": "Woodson, Arkansas", "text": "Woodson is a town in Arkansas."},
    {"id": "p3", "title": "Doctor Strange", "text": "A 2016 film directed by Scott Derrickson."},
    {"id": "p4", "title": "Paris", "text": "Paris is the capital of France."},
]


def write_corpus(path: Path, rows: Sequence[dict[str, str]] = ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "toy.jsonl")


def test_minmax_fusion_scales_each_ranking_then_sums_with_weights() -> None:
    lexical = [(0, 9.0), (1, 6.0), (2, 3.0)]  # scaled: 1, 0.5, 0
    dense = [(1, 0.8), (3, 0.6), (0, 0.4)]  # scaled: 1, 0.5, 0
    fused = fuse([lexical, dense], [1.0, 1.0])
    assert [j for j, _ in fused] == [1, 0, 3, 2]
    assert [s for _, s in fused] == pytest.approx([1.5, 1.0, 0.5, 0.0])
    # A heavier dense weight moves the dense-only passage above the lexical top.
    assert [j for j, _ in fuse([lexical, dense], [1.0, 3.0])] == [1, 3, 0, 2]


def test_rrf_uses_ranks_only_and_breaks_ties_by_position() -> None:
    lexical = [(4, 100.0), (2, 1.0)]
    dense = [(2, 0.9), (4, 0.1)]
    fused = fuse([lexical, dense], [1.0, 1.0], method="rrf", rrf_k=10)
    assert [j for j, _ in fused] == [2, 4]  # equal 1/11 + 1/12: the lower position first
    assert fused[0][1] == pytest.approx(1 / 11 + 1 / 12)
    assert fuse([[(5, 2.0)], []], [1.0, 1.0]) == [(5, 1.0)]  # one passage counts fully
    with pytest.raises(ValueError, match="weights"):
        fuse([lexical], [1.0, 1.0])


def test_bm25_matches_entity_names_and_skips_queries_without_indexed_terms(corpus: Path) -> None:
    index = BM25Index.build(corpus, cache_dir=corpus.parent / "cache")
    hits = index.batch_search(["Scott Derrickson", "the of and", "", "zzyzx"], k=2)
    assert [p.title for p in hits[0]] == ["Scott Derrickson", "Doctor Strange"]
    assert hits[0][0].score > hits[0][1].score > 0
    assert hits[1:] == [[], [], []]
    assert index.batch_search(["Paris"], k=10)[0][0] == Passage(
        "p4", "Paris", ROWS[4]["text"], index.batch_search(["Paris"], k=1)[0][0].score
    )


def test_bm25_top_keeps_the_best_positive_scores_ties_by_position() -> None:
    scores = np.zeros(1000, dtype=np.float32)
    scores[[900, 5, 40, 7, 300, 2]] = [3.0, 1.0, 3.0, 0.5, 2.0, 1.0]
    assert _top(scores, 4) == [(40, 3.0), (900, 3.0), (300, 2.0), (2, 1.0)]
    assert _top(scores, 50) == [(40, 3.0), (900, 3.0), (300, 2.0), (2, 1.0), (5, 1.0), (7, 0.5)]
    assert _top(np.zeros(10, dtype=np.float32), 3) == []
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 4, size=5000).astype(np.float32)  # many ties, many zeros
    expected = sorted((j for j in range(5000) if dense[j] > 0), key=lambda j: (-dense[j], j))
    assert [j for j, _ in _top(dense, 100)] == expected[:100]


def test_bm25_index_is_cached_and_rebuilt_when_the_corpus_or_cache_changes(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cache = corpus.parent / "cache"
    first = BM25Index.build(corpus, cache_dir=cache)
    folders = list(cache.iterdir())
    assert len(folders) == 1 and (folders[0] / "meta.json").is_file()

    def no_rebuild(*args: object, **kwargs: object) -> BM25Index:
        raise AssertionError("rebuilt although the cache matches")

    with monkeypatch.context() as mp:
        mp.setattr(BM25Index, "from_passages", classmethod(no_rebuild))
        again = BM25Index.build(corpus, cache_dir=cache)
    query = ["American director"]
    assert again.batch_search(query, 3) == first.batch_search(query, 3)
    # Other corpus bytes: another fingerprint, another folder, the new passage found.
    write_corpus(corpus, [*ROWS, {"id": "p5", "title": "Zanzibar", "text": "An island."}])
    assert BM25Index.build(corpus, cache_dir=cache).batch_search(["Zanzibar"])[0][0].id == "p5"
    assert len(list(cache.iterdir())) == 2
    # A corrupt cached index is rebuilt with a warning, not used and not fatal.
    folder = next(f for f in cache.iterdir() if f != folders[0])
    for npy in folder.glob("*.npy"):
        npy.write_bytes(b"not numpy")
    with caplog.at_level(logging.WARNING):
        rebuilt = BM25Index.build(corpus, cache_dir=cache)
    assert rebuilt.batch_search(["Zanzibar"])[0][0].id == "p5"
    assert "Ignoring unreadable BM25 index" in caplog.text


class FakeDense:
    """A dense half with fixed rankings per query (the real one is an integration test)."""

    def __init__(self, passages: list[Passage], rankings: dict[str, Ranking]) -> None:
        self.passages = passages
        self.rankings = rankings

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        return [self.rankings.get(q, [])[:depth] for q in queries]


def test_hybrid_index_fuses_the_two_rankings_of_each_query(corpus: Path) -> None:
    lexical = BM25Index.build(corpus, cache_dir=corpus.parent / "cache")
    dense = FakeDense(lexical.passages, {"American director": [(1, 0.9), (4, 0.5), (0, 0.1)]})
    hybrid = HybridIndex(lexical, dense)
    lex = lexical.ranked(["American director"], 50)[0]
    want = fuse([lex, dense.rankings["American director"]], [1.0, 1.0])[:2]
    hits = hybrid.batch_search(["American director", "Paris"], k=2)
    positions = {p.id: j for j, p in enumerate(lexical.passages)}
    assert [positions[p.id] for p in hits[0]] == [j for j, _ in want]
    assert [p.score for p in hits[0]] == pytest.approx([s for _, s in want])
    assert [p.title for p in hits[1]] == ["Paris"]  # the dense half ranks nothing for it
    with pytest.raises(ValueError, match="same corpus"):
        HybridIndex(lexical, FakeDense(lexical.passages[:3], {}))


def test_corpus_index_builds_each_kind_once_and_rejects_unknown_kinds(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(corpus.parent / "cache"))
    monkeypatch.setattr(corpus_indexes, "_CACHE", {})
    bm25 = corpus_indexes.corpus_index(str(corpus), kind="bm25")
    assert isinstance(bm25, BM25Index) and len(bm25) == len(ROWS)
    assert corpus_indexes.corpus_index(str(corpus), kind="bm25") is bm25
    write_corpus(corpus, ROWS[:2])  # an edited file is indexed again
    assert len(corpus_indexes.corpus_index(str(corpus), kind="bm25")) == 2
    with pytest.raises(UserError, match="hybrid, bm25, dense"):
        corpus_indexes.corpus_index(str(corpus), kind="tfidf")


def test_a_hybrid_index_reads_its_corpus_once_and_shares_its_halves(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.embeddings import Embeddings

    from langgraph_parallel.retrieval import corpus as corpus_module
    from langgraph_parallel.retrieval import dense, embeddings, lexical

    class Letters(Embeddings):  # letter counts: deterministic, no model
        identifier = "letters"

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[t.lower().count(c) + 0.01 for c in "abcdefghij"] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    reads: list[str] = []

    def counted(path: object, **kwargs: object) -> list[Passage]:
        reads.append(str(path))
        return corpus_module.load_corpus(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(corpus.parent / "cache"))
    monkeypatch.setattr(corpus_indexes, "_CACHE", {})
    monkeypatch.setattr(embeddings, "MiniLMEmbeddings", Letters)
    for module in (corpus_indexes, dense, lexical):
        monkeypatch.setattr(module, "load_corpus", counted)
    hybrid = corpus_indexes.corpus_index(str(corpus), kind="hybrid")
    assert isinstance(hybrid, HybridIndex) and len(reads) == 1
    # The halves are the indexes of their own kinds, built from that one read.
    assert corpus_indexes.corpus_index(str(corpus), kind="bm25") is hybrid.lexical
    assert corpus_indexes.corpus_index(str(corpus), kind="dense") is hybrid.dense
    assert len(reads) == 1
    assert hybrid.batch_search(["Scott Derrickson"], k=1)[0][0].title == "Scott Derrickson"


def test_bm25_leaves_numba_unloaded_so_the_cpu_engine_can_start() -> None:
    # numba's llvmlite breaks vLLM 0.32 CPU's engine start; bm25s would import it if installed.
    code = (
        "import sys\n"
        "from langgraph_parallel.retrieval import BM25Index, Passage\n"
        "BM25Index.from_passages([Passage('a', 'A', 'alpha text')]).batch_search(['alpha'])\n"
        "assert 'bm25s' in sys.modules\n"
        "assert 'numba' not in sys.modules and 'llvmlite' not in sys.modules, 'numba loaded'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
