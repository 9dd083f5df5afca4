"""Question rows' own paragraphs: the one rule that reads them, and corpora made of them.

2WikiMultihopQA and MuSiQue ship no shared corpus: each row carries its paragraphs
(``context``: ``[{"title", "sentences"}]``). Questions are then searched among the paragraphs
of all the rows of a sample, their own gold and distractor ones included (``bench --corpus
contexts``, the SFT synthesis, the benchmarks over 2Wiki and MuSiQue).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import QUESTION_FORMAT
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import cache_dir

__all__ = ["context_corpus", "context_corpus_of", "row_paragraphs"]


def row_paragraphs(row: Mapping[str, Any]) -> dict[str, str]:
    """Return title -> paragraph text of a question row's ``context`` (empty without one).

    A paragraph is its sentences joined as the file stores them, stripped: HotpotQA sentences
    carry their leading space. (2Wiki's carry none, so its sentences meet without one; the
    shipped policies were trained and benchmarked on that text, so changing the rule changes
    their data and the corpora's names.)
    """
    return {
        str(p["title"]): "".join(p.get("sentences") or []).strip() for p in row.get("context") or []
    }


def context_corpus(contexts: Iterable[Mapping[str, str]], directory: Path | None = None) -> Path:
    """Write the paragraphs of ``contexts`` (title -> text; de-duplicated by title) as a corpus.

    The file, ``contexts-<hash>.jsonl.gz``, is gzip-compressed with no time stamp and its name
    carries a hash of its content, so the same paragraphs make the same bytes and the embedding
    cache of :class:`~langgraph_parallel.retrieval.dense.CorpusIndex` is reused for the
    same set. A plain ``contexts-<hash>.jsonl`` of the same paragraphs already there (written
    before these files were compressed) is returned instead, so a run resumed in an old folder
    names the file it started with.

    Args:
        contexts: Title -> text mappings, e.g. :func:`row_paragraphs` of each row.
        directory: Where to write it (default: ``corpora/`` in the cache directory).

    Returns:
        The corpus file (:func:`~langgraph_parallel.retrieval.corpus.load_corpus` reads both).
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
    path, plain = folder / f"contexts-{digest}.jsonl.gz", folder / f"contexts-{digest}.jsonl"
    if not path.is_file() and plain.is_file():
        return plain
    if not path.is_file():
        part = path.with_name(path.name + ".part")  # renamed once whole: a kill leaves no half
        part.write_bytes(gzip.compress(body.encode(), mtime=0))
        part.replace(path)
    return path


def context_corpus_of(dataset: str | Path, directory: Path | None = None) -> Path:
    """Write the paragraphs of every row of ``dataset`` as a corpus file (:func:`context_corpus`).

    Raises:
        UserError: The file's rows have no ``context``.
    """
    contexts = [
        row_paragraphs(row) for row in read_rows(dataset, what="question file", fmt=QUESTION_FORMAT)
    ]
    if not any(contexts):
        raise UserError(
            f"{dataset} has no 'context' paragraphs to build a corpus from; pass --corpus FILE."
        )
    return context_corpus(contexts, directory)
