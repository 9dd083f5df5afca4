"""Retrieval with deterministic fake embeddings: no model, real FAISS."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval import (
    CorpusIndex,
    Passage,
    RetrieverSearcher,
    Searcher,
    VectorStoreSearcher,
    as_searcher,
    format_passages,
    matrix_store,
)
from langgraph_parallel.retrieval.corpus import load_corpus

ROWS = [
    {"id": "p0", "title": "Ed Wood", "text": "Ed Wood was an American filmmaker and actor."},
    {"id": "p1", "title": "Scott Derrickson", "text": "Scott Derrickson is an American director."},
    {"id": "p2", "title": "Paris", "text": "Paris is the capital city of France."},
    {"id": "p3", "title": "Python", "text": "Python is a programming language with snakes."},
    {"id": "p4", "title": "Jupiter", "text": "Jupiter is the largest planet of the solar system."},
]


class HashedBagOfWords(Embeddings):
    """Each word hashed to one of 64 dimensions; counts calls and embedded texts."""

    identifier = "test-hashed-bow-64"

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def _vector(self, text: str) -> list[float]:
        vec = np.zeros(64, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norm = np.linalg.norm(vec)
        return (vec / norm if norm else vec).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        self.texts.append(text)
        return self._vector(text)


def write_corpus(path: Path, rows: list[dict[str, str]] = ROWS) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    return path


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "tiny.jsonl.gz")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LANGGRAPH_PARALLEL_DATA", str(tmp_path / "data"))


def build(
    corpus: Path, emb: Embeddings, limit: int | None = None, cache_dir: Path | None = None
) -> CorpusIndex:
    return CorpusIndex.build(corpus, emb, limit=limit, cache_dir=cache_dir)


def test_format_passages() -> None:
    passages = [Passage("a", "Ed Wood", "A filmmaker."), Passage("b", "Paris", "A city.", 0.5)]
    assert format_passages(passages) == (
        "Doc 1(Title: Ed Wood) A filmmaker.\nDoc 2(Title: Paris) A city."
    )
    assert format_passages([]) == "No results."


def test_batch_search_keeps_query_order_with_one_embed_call(corpus: Path) -> None:
    emb = HashedBagOfWords()
    index = build(corpus, emb)
    assert len(index) == 5 and isinstance(index, Searcher)
    emb.calls = 0
    results = index.batch_search(["capital of France", "largest planet", "director Derrickson"], 2)
    assert emb.calls == 1
    assert [r[0].title for r in results] == ["Paris", "Jupiter", "Scott Derrickson"]
    assert all(len(r) == 2 for r in results)
    assert results[0][0].score >= results[0][1].score
    assert index.search("Paris France", k=1)[0].id == "p2"


def test_edge_cases_k_and_blank_queries(corpus: Path) -> None:
    emb = HashedBagOfWords()
    index = build(corpus, emb)
    emb.calls = 0
    assert index.batch_search([], 3) == []
    assert index.batch_search(["Paris", "x"], 0) == [[], []]
    assert emb.calls == 0
    results = index.batch_search(["", "Paris", "   "], 100)
    assert results[0] == [] and results[2] == [] and len(results[1]) == 5
    assert emb.texts[-1:] == ["Paris"]


class FixedVectors(Embeddings):
    """Texts are row numbers into a fixed matrix of query vectors."""

    def __init__(self, queries: np.ndarray) -> None:
        self.queries = queries

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.queries[int(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_the_scan_ranks_by_cosine_and_ties_by_position() -> None:
    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(300, 32)), rng.normal(size=(4, 32))
    docs[7] = docs[3]  # a duplicate passage: equal cosine for every query
    passages = [Passage(f"p{i}", f"T{i}", "x") for i in range(300)]
    index = CorpusIndex(passages, docs.astype(np.float32), FixedVectors(queries))
    unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    cosines = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T
    for depth in (1, 20, 300, 500):
        ranked = index.ranked(["0", "1", "2", "3"], depth)
        for q, found in enumerate(ranked):
            expected = [int(j) for j in np.lexsort((np.arange(300), -cosines[q]))][:depth]
            positions = [j for j, _ in found]
            assert positions == expected  # the duplicates: lower position first
            assert len(positions) == min(depth, 300)
            assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
            assert found[0][1] == pytest.approx(cosines[q, expected[0]], abs=1e-5)
    # A query that ranks the twins first keeps both, lower position first, at depth 1 and 2.
    twin = CorpusIndex(passages, docs.astype(np.float32), FixedVectors(docs[3:4]))
    assert [j for j, _ in twin.ranked(["0"], 2)[0]] == [3, 7]
    assert [j for j, _ in twin.ranked(["0"], 1)[0]] == [3]


def test_searches_from_many_threads_run_on_the_index_thread(corpus: Path) -> None:
    threads: list[str] = []

    class Recording(HashedBagOfWords):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            threads.append(threading.current_thread().name)
            return super().embed_documents(texts)

    index = build(corpus, Recording())
    threads.clear()
    queries = ["capital of France", "largest planet", "director Derrickson"] * 4
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda q: index.batch_search([q], 1)[0][0].title, queries))
    assert results == ["Paris", "Jupiter", "Scott Derrickson"] * 4
    assert len(threads) == 12 and len(set(threads)) == 1
    assert threads[0].startswith("dense-search")


def test_second_build_reuses_cache(corpus: Path, tmp_path: Path) -> None:
    build(corpus, HashedBagOfWords())
    assert list((tmp_path / "cache" / "embeddings").glob("tiny.*.f16.json"))
    emb = HashedBagOfWords()
    index = build(corpus, emb)
    assert emb.calls == 0
    assert index.search("capital France", 1)[0].title == "Paris"


def test_limit_is_served_from_full_matrix(corpus: Path) -> None:
    build(corpus, HashedBagOfWords())
    emb = HashedBagOfWords()
    index = build(corpus, emb, limit=2)
    assert len(index) == 2 and emb.calls == 0


def test_corrupt_cache_is_rebuilt(corpus: Path, tmp_path: Path) -> None:
    build(corpus, HashedBagOfWords())
    (npy,) = (tmp_path / "cache" / "embeddings").glob("tiny.*.f16.npy")
    npy.write_bytes(b"not a numpy file")
    emb = HashedBagOfWords()
    index = build(corpus, emb)
    assert emb.calls > 0
    assert index.search("largest planet", 1)[0].title == "Jupiter"
    assert np.load(npy, allow_pickle=False).shape == (5, 64)


def test_pickled_object_array_is_never_loaded(corpus: Path, tmp_path: Path) -> None:
    build(corpus, HashedBagOfWords())
    (npy,) = (tmp_path / "cache" / "embeddings").glob("tiny.*.f16.npy")
    np.save(npy, np.array([{"evil": 1}] * 5, dtype=object), allow_pickle=True)
    emb = HashedBagOfWords()
    build(corpus, emb)
    assert emb.calls > 0


def test_changed_corpus_or_encoder_is_not_reused(corpus: Path) -> None:
    build(corpus, HashedBagOfWords())
    write_corpus(corpus, [*ROWS, {"id": "p5", "title": "Rome", "text": "Rome is in Italy."}])
    emb = HashedBagOfWords()
    assert len(build(corpus, emb)) == 6 and emb.calls > 0
    other = HashedBagOfWords()
    other.identifier = "another-encoder"
    build(corpus, other)
    assert other.calls > 0


def test_prebuilt_matrix_in_data_dir_is_used(corpus: Path, tmp_path: Path) -> None:
    from langgraph_parallel.retrieval.corpus import file_sha256
    from langgraph_parallel.retrieval.dense import embed_passages

    emb = HashedBagOfWords()
    key = matrix_store.MatrixKey(file_sha256(corpus), emb.identifier, rows=5)
    vectors = embed_passages(load_corpus(corpus), emb, progress=False)
    data_dir = tmp_path / "data"
    matrix_store.save(matrix_store.prebuilt_path(corpus, data_dir), vectors, key)
    assert (data_dir / "tiny.minilm.f16.json").is_file()
    emb.calls = 0
    index = build(corpus, emb, cache_dir=tmp_path / "empty-cache")
    assert emb.calls == 0
    assert not (tmp_path / "empty-cache").exists()
    assert index.search("capital France", 1)[0].title == "Paris"


def test_missing_corpus_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found.*--corpus PATH"):
        CorpusIndex.build(tmp_path / "nope.jsonl.gz", HashedBagOfWords())


def test_row_without_text_names_line_and_field(tmp_path: Path) -> None:
    bad = write_corpus(tmp_path / "bad.jsonl", [ROWS[0], {"id": "x", "title": "No text"}])
    with pytest.raises(UserError, match=r"line 2: field 'text' is missing"):
        load_corpus(bad)


def test_corpus_accepts_plain_jsonl_and_contents(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "1", "contents": "\\"Rome\\"\\nCapital of Italy."}\n\n')
    assert load_corpus(path) == [Passage("1", "Rome", "Capital of Italy.")]


class ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: object) -> list[Document]:
        return [d for d in self.docs if query.lower() in d.page_content.lower()]


def test_retriever_searcher_over_in_memory_vector_store() -> None:
    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(
        [Document(r["text"], metadata={"title": r["title"]}, id=r["id"]) for r in ROWS]
    )
    searcher = as_searcher(store.as_retriever(search_kwargs={"k": 4}))
    assert isinstance(searcher, RetrieverSearcher)
    results = searcher.batch_search(["capital of France", "", "largest planet"], 2)
    assert [len(r) for r in results] == [2, 0, 2]
    assert results[0][0] == Passage("p2", "Paris", ROWS[2]["text"], results[0][0].score)
    assert results[2][0].title == "Jupiter"


def test_a_vector_store_searches_the_k_the_graph_asks_for() -> None:
    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(
        [Document(r["text"], metadata={"title": r["title"]}, id=r["id"]) for r in ROWS]
    )
    searcher = as_searcher(store)
    assert isinstance(searcher, VectorStoreSearcher)
    results = searcher.batch_search(["capital of France", "  ", "largest planet"], 3)
    assert [len(r) for r in results] == [3, 0, 3]
    assert results[0][0].title == "Paris" and results[2][0].title == "Jupiter"
    assert results[0][0].score >= results[0][1].score > 0  # the store's similarity
    assert searcher.batch_search(["capital of France"], 0) == [[]]
    # Its retriever is asked for the graph's k, not truncated from its own k (4 by default).
    retriever = as_searcher(store.as_retriever())
    assert [len(r) for r in retriever.batch_search(["capital of France"], 5)] == [5]
    assert [len(r) for r in retriever.batch_search(["capital of France"], 1)] == [1]


def test_a_vector_stores_queries_of_one_call_are_sent_at_once() -> None:
    """A turn's sub-queries against a remote store wait for the slowest, not for the sum."""
    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(
        [Document(r["text"], metadata={"title": r["title"]}, id=r["id"]) for r in ROWS]
    )
    together = threading.Barrier(3, timeout=10)  # broken unless three queries are in flight
    search = store.similarity_search_with_score

    def remote(query: str, k: int = 4) -> list[tuple[Document, float]]:
        together.wait()
        return search(query, k=k)

    store.similarity_search_with_score = remote  # type: ignore[method-assign,assignment]
    searcher = VectorStoreSearcher(store)
    results = searcher.batch_search(["capital of France", "", "largest planet", "Paris"], 1)
    assert [r[0].title if r else None for r in results] == ["Paris", None, "Jupiter", "Paris"]
    with pytest.raises(UserError, match="at least 1"):
        VectorStoreSearcher(store, max_concurrency=0)


def test_the_graph_searches_a_vector_store(corpus: Path) -> None:
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from tests.fakes import ScriptedChatModel

    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(
        [Document(r["text"], metadata={"title": r["title"]}, id=r["id"]) for r in ROWS]
    )
    model = ScriptedChatModel(
        script=[
            "<think>t</think><search> capital of France ## largest planet </search>",
            "<think>t</think><answer> Paris </answer>",
        ]
    )
    graph = create_parallel_search_graph(model, store, top_k=1, prompt_style="raw")
    state = graph.invoke({"question": "Which city and which planet?"})
    assert state["answer"] == "Paris"
    observation = str(state["transcript"][2].content)
    assert "Paris" in observation and "Jupiter" in observation


def test_retriever_searcher_takes_title_from_first_line() -> None:
    docs = [Document("Ed Wood\nAn American filmmaker."), Document("single line about film")]
    results = RetrieverSearcher(ListRetriever(docs=docs)).batch_search(["film"], 5)
    assert [(p.title, p.text) for p in results[0]] == [
        ("Ed Wood", "An American filmmaker."),
        ("single line about film", "single line about film"),
    ]


def test_as_searcher_passes_searchers_and_rejects_others(corpus: Path) -> None:
    index = build(corpus, HashedBagOfWords())
    assert as_searcher(index) is index
    with pytest.raises(UserError, match="CorpusIndex.*BaseRetriever.*VectorStore"):
        as_searcher("not a searcher")
