"""The dense index at scale: exact scan vs FAISS IVF, on every real passage here and at 1M.

``langgraph-parallel bench run large-corpus`` writes ``OUT/large.json``
(``benchmarks/large_corpus/``, whose README reads it). Two stages:

- **Pool**: every real paragraph and sentence in ``../shared/data`` (the bundled corpus's
  paragraphs first, reusing its shipped MiniLM matrix; then the paragraphs of the HotpotQA,
  2Wiki and MuSiQue contexts; then each sentence of a paragraph of two or more as a passage),
  de-duplicated, embedded with the dense index's own encoder into ``<cache>/large_corpus/``,
  one file per 4,096 passages, so an interrupted run resumes (26 minutes on 2 cores).
- **Measure**: for the real pool, and for the pool grown to ``scale`` vectors with perturbed
  copies (a real vector plus noise, at cosine 0.8 to its source), through ``CorpusIndex``
  itself: build seconds, index bytes and resident memory; the median seconds of one query and
  of four (a fan-out), queries embedded beforehand (the encoder's time is the same for both
  indexes); and recall@10 of the IVF index against the exact scan for each ``nprobe``, a query
  each of ``queries`` HotpotQA questions.
"""

from __future__ import annotations

import gc
import gzip
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from lab.base import Experiment, Run
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.paths import cache_dir, shared_data_dir, source_commit
from langgraph_parallel.retrieval.corpus import bundled_corpus_path
from langgraph_parallel.retrieval.dense import CorpusIndex, embed_texts
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.ivf import list_count

__all__ = ["EXPERIMENT", "grow", "passages"]

PART = 4096
SOURCES = (
    "hotpotqa_dev_distractor_subset.jsonl.gz",
    "hotpotqa_dev_fullwiki_subset.jsonl.gz",
    "2wikimultihopqa_dev_sample500.jsonl.gz",
    "musique_dev_with_paragraphs200.jsonl.gz",
)
NPROBES = (4, 8, 16, 32, 64, 128)
LATENCY_QUERIES = 100


def _rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def passages(shared: Path, bundled: Path) -> list[dict[str, str]]:
    """Return the pool: the bundled corpus's paragraphs first, then new paragraphs and sentences.

    A paragraph is ``title`` + its sentences joined; a sentence is its own passage under the
    paragraph's title. Texts are de-duplicated by (title, text).
    """
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(title: str, text: str) -> None:
        text = text.strip()
        if text and (title, text) not in seen:
            seen.add((title, text))
            out.append({"id": f"pool-{len(out)}", "title": title, "text": text})

    corpus = _rows(bundled)
    for row in corpus:
        add(row["title"], row["text"])
    # The shipped matrix is reused row for row only if every bundled paragraph was kept.
    assert len(out) == len(corpus), "the bundled corpus has blank or repeated paragraphs"
    paragraphs = [(r["title"], r["sentences"]) for r in corpus]
    for name in SOURCES:
        for row in _rows(shared / name):
            paragraphs += [(c["title"], c["sentences"]) for c in row.get("context") or []]
    for title, sentences in paragraphs:
        add(title, "".join(sentences))
    for title, sentences in paragraphs:
        if len(sentences) > 1:
            for sentence in sentences:
                add(title, sentence)
    return out


def embed_pool(rows: list[dict[str, str]], folder: Path) -> np.ndarray:
    """Embed the pool into ``folder`` part by part (resuming); return it as float32."""
    from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings

    folder.mkdir(parents=True, exist_ok=True)
    shipped = np.load(bundled_corpus_path().with_suffix("").with_suffix(".minilm.f16.npy"))
    encoder = MiniLMEmbeddings()
    for start in range(0, len(rows), PART):
        path = folder / f"{start // PART:05d}.npy"
        if path.exists():
            continue
        chunk = rows[start : start + PART]
        if start + len(chunk) <= len(shipped):
            vectors = shipped[start : start + len(chunk)].astype(np.float32)
        else:
            vectors = embed_texts(encoder, [f"{r['title']}\n{r['text']}" for r in chunk])
        np.save(path.with_suffix(".tmp.npy"), vectors.astype(np.float16))
        path.with_suffix(".tmp.npy").rename(path)
        print(f"pool part {start // PART}: {len(chunk)} passages", flush=True)
    parts = sorted(folder.glob("[0-9]*.npy"))
    return np.concatenate([np.load(p).astype(np.float32) for p in parts])


class Prepared(Embeddings):
    """Query ``"i"`` is the i-th prepared vector (the encoder already ran)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the prepared vectors named by ``texts``."""
        return [self.vectors[int(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Return the prepared vector named by ``text``."""
        return self.embed_documents([text])[0]

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Return the prepared vectors as one array."""
        return self.vectors[[int(t) for t in texts]]


def rss_gib() -> float:
    """Resident memory of this process, GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def grow(real: np.ndarray, rows: int, seed: int = 0) -> np.ndarray:
    """Return the real vectors, then perturbed copies of them up to ``rows`` (README)."""
    rng = np.random.default_rng(seed)
    unit = real / np.linalg.norm(real, axis=1, keepdims=True)
    out = [unit]
    total = len(unit)
    while total < rows:
        take = min(len(unit), rows - total)
        noise = rng.normal(size=(take, unit.shape[1])).astype(np.float32)
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        # A copy at cosine ~0.8 to its source: near it, as a paraphrase is, and distinct.
        copy = unit[rng.choice(len(unit), take, replace=False)] + 0.75 * noise
        out.append(copy / np.linalg.norm(copy, axis=1, keepdims=True))
        total += take
    return np.concatenate(out)


def median_seconds(index: CorpusIndex, batches: list[list[str]]) -> float:
    """Median wall seconds of ``index.ranked(batch, 10)`` over ``batches``."""
    index.ranked(batches[0], 10)  # first call: thread start, page-in
    times = []
    for batch in batches:
        t0 = time.perf_counter()
        index.ranked(batch, 10)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, matrix: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    """Exact and IVF figures for one corpus."""
    passages = [Passage(str(i), "", "") for i in range(len(matrix))]
    encoder = Prepared(queries)
    names = [str(i) for i in range(len(queries))]
    singles = [[n] for n in names[:LATENCY_QUERIES]]
    fours = [names[i : i + 4] for i in range(0, 4 * (LATENCY_QUERIES // 4), 4)]
    row: dict[str, Any] = {"corpus": name, "passages": len(matrix), "dim": matrix.shape[1]}
    gc.collect()
    t0 = time.perf_counter()
    exact = CorpusIndex(passages, matrix, encoder, scan="exact")
    row["exact"] = {
        "build_s": time.perf_counter() - t0,
        "index_bytes": int(exact._matrix.nbytes),
        "rss_gib": rss_gib(),
        "one_query_s": median_seconds(exact, singles),
        "four_queries_s": median_seconds(exact, fours),
    }
    truth = [{j for j, _ in found} for found in exact.ranked(names, 10)]
    del exact
    gc.collect()
    import faiss

    t0 = time.perf_counter()
    ivf = CorpusIndex(passages, matrix, encoder, scan="ivf")
    build = time.perf_counter() - t0
    assert ivf._ivf is not None
    row["ivf"] = {
        "nlist": list_count(len(matrix)),
        "build_s": build,
        "index_bytes": len(faiss.serialize_index(ivf._ivf.index)),
        "rss_gib": rss_gib(),
        "by_nprobe": [],
    }
    for nprobe in NPROBES:
        ivf._ivf.index.nprobe = nprobe
        found = [{j for j, _ in f} for f in ivf.ranked(names, 10)]
        hits = sum(len(t & f) for t, f in zip(truth, found, strict=True))
        row["ivf"]["by_nprobe"].append(
            {
                "nprobe": nprobe,
                "recall_at_10": hits / sum(len(t) for t in truth),
                "one_query_s": median_seconds(ivf, singles),
                "four_queries_s": median_seconds(ivf, fours),
            }
        )
        print(name, row["ivf"]["by_nprobe"][-1], flush=True)
    return row


def _run(run: Run) -> None:
    from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings

    shared = shared_data_dir()
    rows = passages(shared, bundled_corpus_path())
    real = embed_pool(rows, cache_dir() / "large_corpus" / f"pool-{len(rows)}")
    with gzip.open(shared / "hotpotqa_dev_distractor_subset.jsonl.gz", "rt") as f:
        questions = [json.loads(line)["question"] for line in f][: run.settings["queries"]]
    queries = embed_texts(MiniLMEmbeddings(), questions)
    scale = run.settings["scale"]
    report = {
        "commit": source_commit(),
        "machine": machine(),
        "command": run.command,
        "queries": len(questions),
        "rows": [
            measure("real pool", real, queries),
            measure(f"pool + perturbed copies to {scale:,}", grow(real, scale), queries),
        ],
    }
    Experiment.write_tables(run.out, "large", report, indent=1)


EXPERIMENT = Experiment(
    name="large-corpus",
    about="the dense index's exact scan vs FAISS IVF: build, memory, latency, recall, to 1M",
    out="benchmarks/large_corpus",
    run=_run,
    limit_means="unused: every real passage here, then the scale setting",
    settings={"scale": 1_000_000, "queries": 500},
)
