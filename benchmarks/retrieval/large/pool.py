"""The large-corpus benchmark's passages: every real paragraph and sentence in ../shared/data.

Writes ``OUT/passages.jsonl.gz`` (one corpus row each: id, title, text) and embeds them with
the dense index's own encoder (MiniLM) into ``OUT/parts/NNNNN.npy``, one file per 4,096
passages, so an interrupted run resumes at the first missing part. The bundled corpus's
paragraphs reuse its shipped matrix. Usage::

    python benchmarks/retrieval/large/pool.py --out /tmp/large-pool [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

PART = 4096
SOURCES = (
    "hotpotqa_dev_distractor_subset.jsonl.gz",
    "hotpotqa_dev_fullwiki_subset.jsonl.gz",
    "2wikimultihopqa_dev_sample500.jsonl.gz",
    "musique_dev_with_paragraphs200.jsonl.gz",
)


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


def main() -> None:
    """Assemble the pool and embed what is not embedded yet."""
    from langgraph_parallel.retrieval.corpus import bundled_corpus_path
    from langgraph_parallel.retrieval.dense import embed_texts
    from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    bundled = bundled_corpus_path()
    rows = passages(args.shared, bundled)
    args.out.mkdir(parents=True, exist_ok=True)
    listing = args.out / "passages.jsonl.gz"
    if not listing.exists():
        with gzip.open(listing, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"{len(rows):,} passages")
    parts = args.out / "parts"
    parts.mkdir(exist_ok=True)
    shipped = np.load(bundled.with_suffix("").with_suffix(".minilm.f16.npy"))
    encoder = MiniLMEmbeddings()
    for start in range(0, len(rows), PART):
        path = parts / f"{start // PART:05d}.npy"
        if path.exists():
            continue
        t0 = time.monotonic()
        chunk = rows[start : start + PART]
        if start + len(chunk) <= len(shipped):
            vectors = shipped[start : start + len(chunk)].astype(np.float32)
        else:
            texts = [f"{r['title']}\n{r['text']}" for r in chunk]
            vectors = embed_texts(encoder, texts)
        np.save(path.with_suffix(".tmp.npy"), vectors.astype(np.float16))
        path.with_suffix(".tmp.npy").rename(path)
        print(f"part {start // PART}: {len(chunk)} in {time.monotonic() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
