"""The dense index at scale: exact scan vs FAISS IVF, on the real pool and at a million vectors.

Reads the pool that ``pool.py`` embedded (every real paragraph and sentence here, MiniLM), and
for each corpus (the real pool; then the pool grown to ``--scale`` vectors with perturbed
copies, see the README) measures, through ``CorpusIndex`` itself:

- build: seconds to make the index from the matrix (IVF: k-means and adding), its bytes, and
  the process's resident memory after it;
- search: the median seconds of one query (``ranked([q], 10)``, the encoder's time left out:
  queries are embedded beforehand, the same for every index) and of four at once (a fan-out);
- recall@10: the share of the exact scan's top 10 that the IVF index returns, a query each of
  ``--queries`` HotpotQA questions (the question text as the query, as ``bench run retrieval``).

Usage::

    python benchmarks/retrieval/large/measure.py --pool /tmp/large/pool \
        --out benchmarks/retrieval/large
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_parallel.retrieval.dense import CorpusIndex
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.ivf import list_count

NPROBES = (4, 8, 16, 32, 64, 128)
LATENCY_QUERIES = 100


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


def machine() -> str:
    """Name the CPU model and its vector extensions (speeds compare within one machine)."""
    text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if "Model name" in ln), "?"
    )
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if "Flags" in ln), [])
    wanted = [f for f in flags if f.startswith(("avx512", "amx")) or f in ("avx2", "fma")]
    cores = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    return f"{model}, {cores} cores, {' '.join(wanted)}"


def load_pool(pool: Path) -> np.ndarray:
    """Return the pool's vectors as float32, in passage order."""
    parts = sorted((pool / "parts").glob("[0-9]*.npy"))
    return np.concatenate([np.load(p).astype(np.float32) for p in parts])


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


def main() -> None:
    """Measure and write ``large.json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--scale", type=int, default=1_000_000)
    args = parser.parse_args()
    from langgraph_parallel.retrieval.dense import embed_texts
    from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings

    with gzip.open(args.shared / "hotpotqa_dev_distractor_subset.jsonl.gz", "rt") as f:
        questions = [json.loads(line)["question"] for line in f][: args.queries]
    queries = embed_texts(MiniLMEmbeddings(), questions)
    real = load_pool(args.pool)
    rows = [measure("real pool", real, queries)]
    rows.append(
        measure(f"pool + perturbed copies to {args.scale:,}", grow(real, args.scale), queries)
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    report = {
        "commit": commit,
        "machine": machine(),
        "python": platform.python_version(),
        "queries": len(questions),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "large.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
