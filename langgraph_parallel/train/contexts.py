"""A corpus made of the questions' own paragraphs (2Wiki, MuSiQue ship no shared corpus)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from langgraph_parallel.paths import cache_dir


def context_corpus(contexts: Iterable[Mapping[str, str]], directory: Path | None = None) -> Path:
    """Write the paragraphs of ``contexts`` (title -> text; de-duplicated by title) as a corpus.

    The file name carries a hash of its content, so the embedding cache of
    :class:`~langgraph_parallel.retrieval.faiss_index.CorpusIndex` is reused for the same set.
    """
    paragraphs: dict[str, str] = {}
    for context in contexts:
        for title, text in context.items():
            if text:
                paragraphs.setdefault(title, text)
    lines = [
        json.dumps({"id": f"ctx_{i}", "title": title, "text": text})
        for i, (title, text) in enumerate(sorted(paragraphs.items()))
    ]
    body = "\n".join(lines) + "\n"
    digest = hashlib.sha256(body.encode()).hexdigest()[:12]
    folder = directory or cache_dir() / "corpora"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"contexts-{digest}.jsonl"
    if not path.is_file():
        path.write_text(body)
    return path
