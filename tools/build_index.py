"""Embed the bundled corpus with MiniLM and write the prebuilt matrix that CorpusIndex reuses.

Writes ``<out>/<corpus>.minilm.f16.npy`` and its ``.json`` sidecar. ``CorpusIndex.build`` picks
them up (instead of spending ~20 CPU-minutes) whenever the corpus bytes and encoder match.

    python tools/build_index.py                 # full corpus into data/
    python tools/build_index.py --limit 2000    # first 2000 paragraphs only
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Run from a checkout without installing: make the repo root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_parallel.errors import UserError  # noqa: E402
from langgraph_parallel.paths import repo_data_dir  # noqa: E402
from langgraph_parallel.retrieval import matrix_store  # noqa: E402
from langgraph_parallel.retrieval.corpus import (  # noqa: E402
    bundled_corpus_path,
    corpus_sha256,
    load_corpus,
)
from langgraph_parallel.retrieval.dense import embed_passages, encoder_id  # noqa: E402
from langgraph_parallel.retrieval.embeddings import MiniLMEmbeddings  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=bundled_corpus_path(), help="corpus file")
    parser.add_argument("--out", type=Path, default=repo_data_dir(), help="output folder")
    parser.add_argument("--limit", type=int, default=None, help="embed only the first N rows")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="torch intra-op threads"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(max(1, args.threads))
    passages = load_corpus(args.corpus, limit=args.limit)
    embeddings = MiniLMEmbeddings(batch_size=args.batch_size)
    key = matrix_store.MatrixKey(
        corpus_sha256=corpus_sha256(args.corpus),
        encoder=encoder_id(embeddings),
        rows=len(passages),
        limit=args.limit,
    )
    dim = embeddings.dimension  # loads the model now, so the rate below is encoding only
    print(
        f"Embedding {len(passages)} paragraphs from {args.corpus} "
        f"into {dim} dims (batch {args.batch_size}, {torch.get_num_threads()} threads)",
        flush=True,
    )
    start = time.perf_counter()
    vectors = embed_passages(passages, embeddings)
    seconds = time.perf_counter() - start
    out = matrix_store.prebuilt_path(args.corpus, args.out)
    matrix_store.save(out, vectors, key)
    print(
        f"Wrote {out} and {matrix_store.sidecar_path(out).name}: {vectors.shape[0]} x "
        f"{vectors.shape[1]} float16"
    )
    print(f"{len(passages) / seconds:.1f} paragraphs/s ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
