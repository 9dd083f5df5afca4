"""Read a corpus: JSON Lines (optionally gzip-compressed) or a folder of text files.

The formats are documented in ``docs/guides/corpus.md`` ("Your own corpus and questions"): one
JSON object per line with a ``text`` string and optional ``title``, ``id`` and ``sentences`` (or
a Search-R1 ``contents`` string), or a folder whose ``.txt`` and ``.md`` files are one document
each.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_objects
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.sentences import marked_sentence_ends

__all__ = [
    "BUNDLED_CORPUS",
    "CORPUS_FORMAT",
    "TEXT_SUFFIXES",
    "bundled_corpus_path",
    "corpus_sha256",
    "corpus_version",
    "file_sha256",
    "load_corpus",
]

logger = logging.getLogger(__name__)

BUNDLED_CORPUS = "hotpotqa_dev_distractor_corpus.jsonl.gz"
TEXT_SUFFIXES = (".txt", ".md")
"""Files of a corpus folder that are documents; others are ignored."""
CORPUS_FORMAT = (
    'a corpus is a .jsonl or .jsonl.gz file with one JSON object per line holding a "text" '
    'string and optional "title" and "id", or a folder of .txt/.md files (one document '
    'each); see "Your own corpus and questions" in the langgraph-parallel docs '
    "(docs/guides/corpus.md)"
)


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


def _documents(folder: Path) -> list[Path]:
    """Return the ``.txt`` / ``.md`` files under ``folder`` (hidden ones skipped), sorted."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in TEXT_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def corpus_sha256(path: str | Path) -> str:
    """Return the fingerprint of a corpus file (its SHA-256) or folder.

    A folder's covers its documents' relative paths and bytes, so adding, renaming or editing
    one changes it.
    """
    path = Path(path).expanduser()
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256(b"folder-corpus-v1")
    for doc in _documents(path):
        digest.update(doc.relative_to(path).as_posix().encode() + b"\0")
        digest.update(file_sha256(doc).encode())
    return digest.hexdigest()


def corpus_version(path: str | Path) -> tuple[float, int]:
    """Return a cheap ``(mtime, size)`` that changes when the corpus does (for in-process memos).

    A folder's is its newest document's mtime and the sum of their sizes plus their count.
    ``(0.0, -1)`` when the path does not exist (loading it then names the problem).
    """
    path = Path(path).expanduser()
    try:
        if not path.is_dir():
            stat = path.stat()
            return stat.st_mtime, stat.st_size
        stats = [doc.stat() for doc in _documents(path)]
    except OSError:
        return 0.0, -1
    return max((s.st_mtime for s in stats), default=0.0), sum(s.st_size for s in stats) + len(stats)


def _to_passage(path: Path, line_no: int, row: dict[str, object]) -> Passage:
    title, text = row.get("title"), row.get("text")
    contents = row.get("contents")
    # Search-R1 / FlashRAG corpora carry one "contents" field: the title line, then the body.
    if title is None and text is None and isinstance(contents, str):
        title, _, text = contents.partition("\n")
        title = title.strip().strip('"')
    if title is None:
        title = ""  # optional: untitled documents are shown without a title
    for field, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            problem = "is missing" if value is None else "must be a string"
            raise UserError(f"{path}: line {line_no}: field {field!r} {problem}; {CORPUS_FORMAT}.")
    assert isinstance(title, str) and isinstance(text, str)
    row_id = row.get("id")
    sentences = row.get("sentences")
    # A corpus's own sentence list (HotpotQA's) beats any splitter for the observation budget.
    ends = marked_sentence_ends(text, sentences) if isinstance(sentences, list) else ()
    return Passage(
        id=str(row_id) if row_id is not None else f"line-{line_no}",
        title=title,
        text=text,
        sentence_ends=ends,
    )


def _file_passage(folder: Path, doc: Path) -> Passage | None:
    """One document of a folder corpus; ``None`` for a blank file (nothing to find in it)."""
    try:
        content = doc.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{doc} is not UTF-8 text ({exc.reason}); save it as UTF-8 or move it out of {folder}."
        ) from exc
    except OSError as exc:
        raise UserError(f"Cannot read {doc}: {exc.strerror or exc}.") from exc
    if not content.strip():
        logger.warning("Skipping %s: the file is blank.", doc)
        return None
    title, body = doc.stem, content.strip()
    first, _, rest = body.partition("\n")
    # A Markdown file's leading "# Heading" is its title.
    if doc.suffix.lower() == ".md" and first.startswith("# ") and rest.strip():
        title, body = first[2:].strip(), rest.strip()
    return Passage(id=doc.relative_to(folder).as_posix(), title=title, text=body)


def _load_folder(folder: Path, limit: int | None) -> list[Passage]:
    docs = _documents(folder)
    if not docs:
        raise UserError(f"Corpus folder {folder} has no .txt or .md file; {CORPUS_FORMAT}.")
    passages: list[Passage] = []
    for doc in docs:
        passage = _file_passage(folder, doc)
        if passage is not None:
            passages.append(passage)
        if limit is not None and len(passages) >= limit:
            break
    if not passages:
        raise UserError(f"Every .txt/.md file in {folder} is blank; {CORPUS_FORMAT}.")
    return passages


def load_corpus(path: str | Path, *, limit: int | None = None) -> list[Passage]:
    """Load documents from a ``.jsonl`` / ``.jsonl.gz`` file or a folder of text files.

    A file has one JSON object per line with a ``text`` string and optional ``title`` (``""``
    when missing), ``id`` (``line-{n}`` when missing) and ``sentences`` (the text's sentence
    list, as HotpotQA rows keep it: the boundaries of the observation budget, ignored when they
    do not cover ``text`` in order); a Search-R1 style ``contents`` field (title on the first
    line) is accepted instead of ``title``/``text``. Blank lines are skipped. A folder's
    ``.txt`` and ``.md`` files (in subfolders too, hidden ones skipped, sorted by path) are one
    document each: the id is the relative path, the title the file name without suffix or a
    Markdown file's leading ``# Heading``; blank files are skipped.

    Args:
        path: The corpus file or folder.
        limit: Keep only the first ``limit`` documents (``None`` keeps all).

    Returns:
        The passages in file (or path) order, with ``score`` 0.

    Raises:
        UserError: The path is missing or empty, a line is not a JSON object, a row lacks
            ``text``, or a file is not UTF-8; the message names the file, line and format.

    """
    path = Path(path).expanduser()
    if limit is not None and limit <= 0:
        raise UserError(f"limit must be a positive number of rows, got {limit}.")
    if path.is_dir():
        return _load_folder(path, limit)
    if not path.is_file():
        raise UserError(
            f"Corpus {path} not found. The repo ships data/{BUNDLED_CORPUS}; pass --corpus PATH "
            f"to use another; {CORPUS_FORMAT}."
        )
    passages: list[Passage] = []
    for line_no, row in read_objects(path, what="corpus", fmt=CORPUS_FORMAT):
        passages.append(_to_passage(path, line_no, row))
        if limit is not None and len(passages) >= limit:
            break
    if not passages:
        raise UserError(f"Corpus file {path} has no rows; {CORPUS_FORMAT}.")
    return passages
