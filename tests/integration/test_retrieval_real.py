"""Real all-MiniLM-L6-v2 encoder, real FAISS, real BM25 and their hybrid over a HotpotQA slice."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from langgraph_parallel.retrieval import (
    BM25Index,
    CorpusIndex,
    HybridIndex,
    MiniLMEmbeddings,
    format_passages,
)
from langgraph_parallel.retrieval.corpus import bundled_corpus_path

pytestmark = pytest.mark.integration

REQUIRED_TITLES = {"Scott Derrickson", "Ed Wood"}
SLICE_ROWS = 150


def write_slice(path: Path) -> None:
    """Write the two target rows plus the corpus's first rows (their HotpotQA distractors)."""
    with gzip.open(bundled_corpus_path(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    chosen = [r for r in rows if r["title"] in REQUIRED_TITLES]
    assert {r["title"] for r in chosen} == REQUIRED_TITLES
    chosen += [r for r in rows[: SLICE_ROWS * 2] if r not in chosen][: SLICE_ROWS - len(chosen)]
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in chosen)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("retrieval_real")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LANGGRAPH_PARALLEL_CACHE", str(root / "cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        corpus = root / "slice.jsonl.gz"
        write_slice(corpus)
        yield corpus


@pytest.fixture(scope="module")
def embeddings() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


@pytest.fixture(scope="module")
def index(env: Path, embeddings: MiniLMEmbeddings) -> CorpusIndex:
    return CorpusIndex.build(env, embeddings)


def test_scott_derrickson_is_rank_one(index: CorpusIndex) -> None:
    assert len(index) == SLICE_ROWS and index.dimension == 384
    hits = index.search("Scott Derrickson director nationality", k=3)
    assert hits[0].title == "Scott Derrickson"
    assert hits[0].score > hits[1].score
    assert format_passages(hits).startswith("Doc 1(Title: Scott Derrickson) Scott Derrickson")


def test_batch_search_answers_each_query(index: CorpusIndex) -> None:
    results = index.batch_search(["Scott Derrickson director nationality", "Ed Wood filmmaker"], 3)
    assert [len(r) for r in results] == [3, 3]
    assert results[0][0].title == "Scott Derrickson"
    assert "Ed Wood" in [p.title for p in results[1]]


def test_rebuild_uses_the_cached_matrix(env: Path, index: CorpusIndex) -> None:
    class NoCorpusEmbedding(MiniLMEmbeddings):
        def embed_array(self, texts: Sequence[str]) -> np.ndarray:
            assert len(texts) < 10, "the corpus was re-embedded instead of read from the cache"
            return super().embed_array(texts)

    again = CorpusIndex.build(env, NoCorpusEmbedding())
    assert again.search("Scott Derrickson director nationality", 1)[0].title == "Scott Derrickson"


def test_vectors_are_unit_length_and_thread_safe(embeddings: MiniLMEmbeddings) -> None:
    texts = ["Ed Wood was a filmmaker.", "Paris is in France.", "short", "a " * 600]
    expected = embeddings.embed_array(texts)
    assert expected.shape == (4, 384) and expected.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(expected, axis=1), 1.0, atol=1e-5)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: embeddings.embed_array(texts), range(4)))
    for out in outs:
        np.testing.assert_allclose(out, expected, atol=1e-5)
    assert embeddings.embed_query("Paris") == pytest.approx(
        embeddings.embed_documents(["Paris"])[0]
    )


def test_numpy_forward_gives_the_vectors_of_transformers(tmp_path: Path) -> None:
    """Queries (few texts) run the numpy forward, corpora transformers: the vectors must agree."""
    import json as jsonlib

    import torch
    from transformers import AutoModel, AutoTokenizer

    from langgraph_parallel.retrieval.embeddings import default_model_dir
    from langgraph_parallel.retrieval.numpy_bert import NumpyBert

    folder = default_model_dir()
    texts = [
        "Scott Derrickson",
        "Were Scott Derrickson and Ed Wood of the same nationality?",
        "Ça va? Zoë's café — naïve résumé 東京",  # accents, CJK, punctuation
        "",
        "word " * 400,  # longer than max_length: truncated as transformers truncates
    ]
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()

    encoder = NumpyBert(folder, max_length=256)
    together = encoder.encode(texts)
    np.testing.assert_allclose(together, reference, atol=2e-6)
    # Padding does not leak into a text's vector: alone or in a batch, the same vector.
    for i, text in enumerate(texts):
        np.testing.assert_allclose(encoder.encode([text])[0], together[i], atol=2e-6)
    assert encoder.encode([]).shape == (0, 384)

    # MiniLMEmbeddings: up to 16 texts on numpy, more on transformers, the same vectors.
    calls: list[int] = []
    embeddings = MiniLMEmbeddings()
    forward = NumpyBert.encode

    def counted(self: NumpyBert, batch: Sequence[str]) -> np.ndarray:
        calls.append(len(batch))
        return forward(self, batch)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(NumpyBert, "encode", counted)
        few = embeddings.embed_array(texts)
        many = embeddings.embed_array(texts * 4)
    assert calls == [len(texts)]
    np.testing.assert_allclose(few, reference, atol=2e-6)
    np.testing.assert_allclose(many[: len(texts)], reference, atol=2e-6)

    # A folder the numpy forward does not reproduce goes to transformers.
    other = tmp_path / "model"
    other.mkdir()
    for item in folder.iterdir():
        if item.is_file():
            (other / item.name).symlink_to(item)
    config = jsonlib.loads((folder / "config.json").read_text())
    (other / "config.json").unlink()
    (other / "config.json").write_text(jsonlib.dumps({**config, "hidden_act": "gelu_new"}))
    assert NumpyBert.supports(folder) and not NumpyBert.supports(other)
    calls.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(NumpyBert, "encode", counted)
        MiniLMEmbeddings(other).embed_array(["Paris"])
    assert calls == []


def test_bm25_and_hybrid_find_both_entities_of_a_decomposed_question(
    env: Path, index: CorpusIndex
) -> None:
    lexical = BM25Index.build(env)
    assert [p.id for p in lexical.passages] == [p.id for p in index.passages]
    hybrid = HybridIndex(lexical, index)
    queries = ["Scott Derrickson nationality", "Ed Wood nationality"]
    for searcher in (lexical, hybrid):
        hits = searcher.batch_search(queries, k=3)
        assert hits[0][0].title == "Scott Derrickson"
        assert "Ed Wood" in [h.title for h in hits[1]]  # with "Ed Wood (film)" beside it
        assert all(h[0].score >= h[1].score >= h[2].score for h in hits)
    # The fused ranking is the hand-computed min-max fusion of the two real rankings.
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    lex, den = lexical.ranked([question], 50)[0], index.ranked([question], 50)[0]
    scale = {
        name: {
            j: (s - min(v for _, v in r)) / (max(v for _, v in r) - min(v for _, v in r))
            for j, s in r
        }
        for name, r in (("lex", lex), ("den", den))
    }
    fused = {
        j: scale["lex"].get(j, 0.0) + scale["den"].get(j, 0.0)
        for j in {*scale["lex"], *scale["den"]}
    }
    best = sorted(fused, key=lambda j: (-fused[j], j))[:3]
    assert [j for j, _ in hybrid.ranked([question], 3)[0]] == best
    assert "Ed Wood" in {index.passages[j].title for j in best}


def test_a_query_naming_a_page_finds_it_first_in_the_bundled_corpus(hotpot_index) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(hotpot_index, HybridIndex)
    queries = ["Scott Derrickson", "jean-loup chretien", "Babycham (film)", "Ed Wood"]
    # Without the lookup, the goalkeeper the dense half prefers outranks the director.
    plain = HybridIndex(hotpot_index.lexical, hotpot_index.dense, title_weight=0.0)
    assert plain.batch_search(queries[:1], 3)[0][0].title == "Scott Carson"
    hits = hotpot_index.batch_search(queries, 3)
    assert [h[0].title for h in hits] == [
        "Scott Derrickson",
        "Jean-Loup Chrétien",
        "Babycham",
        "Ed Wood",
    ]
    assert hits[3][1].title == "Ed Wood (film)"


def test_a_vector_store_of_real_minilm_embeddings_is_a_searcher() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langgraph_parallel.retrieval import MiniLMEmbeddings, as_searcher

    # docs/guides/corpus.md's example store.
    store = InMemoryVectorStore.from_texts(
        ["Paris\nParis is the capital of France.", "Jupiter\nJupiter is the largest planet."],
        MiniLMEmbeddings(),
    )
    results = as_searcher(store).batch_search(["capital of France", "biggest planet"], 1)
    assert [[p.title for p in r] for r in results] == [["Paris"], ["Jupiter"]]
    assert results[0][0].text == "Paris is the capital of France."
