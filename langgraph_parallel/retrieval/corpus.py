"""Read a paragraph corpus from JSON Lines (optionally gzip-compressed)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.retrieval.documents import Passage

__all__ = ["BUNDLED_CORPUS", "bundled_corpus_path", "file_sha256", "load_corpus"]

BUNDLED_CORPUS = "hotpotqa_dev_distractor_corpus.jsonl.gz"


def bundled_corpus_path() -> Path:
    """Return the path of the HotpotQA dev (distractor) corpus shipped in the repo's ``data/``."""
    return repo_data_dir() / BUNDLED_CORPUS


def file_sha256(path: str | Path) -> str:
    """Return the hex SHA-256 of a file's bytes (of the compressed bytes for ``.gz`` files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _iter_rows(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    with _open_text(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}: line {line_no} is not valid JSON ({exc.msg}).") from exc
            if not isinstance(row, dict):
                raise UserError(f"{path}: line {line_no} must be a JSON object.")
            yield line_no, row


def _to_passage(path: Path, line_no: int, row: dict[str, object]) -> Passage:
    title, text = row.get("title"), row.get("text")
    contents = row.get("contents")
    # Search-R1 / FlashRAG corpora carry one "contents" field: the title line, then the body.
    if title is None and text is None and isinstance(contents, str):
        title, _, text = contents.partition("\n")
        title = title.strip().strip('"')
    for field, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            problem = "is missing" if value is None else "must be a string"
            raise UserError(
                f"{path}: line {line_no}: field {field!r} {problem}; every row needs "
                '"title" and "text" strings (or a Search-R1 "contents" string).'
            )
    assert isinstance(title, str) and isinstance(text, str)
    row_id = row.get("id")
    return Passage(
        id=str(row_id) if row_id is not None else f"line-{line_no}", title=title, text=text
    )


def load_corpus(path: str | Path, *, limit: int | None = None) -> list[Passage]:
    """Load paragraphs from a ``.jsonl`` or ``.jsonl.gz`` file.

    Each line is a JSON object with ``title`` and ``text`` strings and an optional ``id``
    (rows without one get ``line-{n}``); a Search-R1 style ``contents`` field (title on the
    first line) is accepted instead of ``title``/``text``. Blank lines are skipped.

    Args:
        path: The corpus file.
        limit: Keep only the first ``limit`` rows (``None`` keeps all).

    Returns:
        The passages in file order, with ``score`` 0.

    Raises:
        UserError: The file is missing or empty, a line is not a JSON object, or a row lacks
            ``title`` or ``text``; the message names the file and line.

    """
    path = Path(path).expanduser()
    if limit is not None and limit <= 0:
        raise UserError(f"limit must be a positive number of rows, got {limit}.")
    if not path.is_file():
        raise UserError(
            f"Corpus file {path} not found. The repo ships data/{BUNDLED_CORPUS}; "
            "pass --corpus PATH to use another .jsonl or .jsonl.gz file."
        )
    passages: list[Passage] = []
    for line_no, row in _iter_rows(path):
        passages.append(_to_passage(path, line_no, row))
        if limit is not None and len(passages) >= limit:
            break
    if not passages:
        raise UserError(f"Corpus file {path} has no rows; it needs one JSON object per line.")
    return passages
