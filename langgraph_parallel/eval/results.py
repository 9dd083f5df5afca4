"""A benchmark folder's rows: ``results.jsonl`` while it runs, ``results.jsonl.gz`` once done.

The harness appends one line per finished question to ``results.jsonl`` (flushed and fsynced),
so a kill loses at most the questions in flight and a last line cut short is repaired on the next
read. A finished experiment compresses the rows into ``results.jsonl.gz`` (what is committed);
a later resume into the same folder appends new rows to a fresh ``results.jsonl`` beside it, and
:func:`load_results` reads both, so a folder in either state resumes and analyses the same.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

__all__ = [
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "append_row",
    "compress_results",
    "load_results",
    "results_in",
]

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"


def _gz(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def _parse(lines: list[str], seen: set[tuple[str, str]]) -> list[dict[str, Any]]:
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or "graph" not in row or "id" not in row:
            continue
        key = (str(row["graph"]), str(row["id"]))
        if key not in seen:
            seen.add(key)
            rows.append(row)
    return rows


def load_results(path: str | Path) -> list[dict[str, Any]]:
    """Read the finished rows of a results file, repairing a last line cut short by a kill.

    The compressed rows (``PATH.gz``) come first, then the plain file's. A trailing fragment
    without its newline is truncated away from the plain file, so the next append starts on a
    fresh line. Lines that are not a JSON object with ``graph`` and ``id`` are ignored, and a
    repeated ``(graph, id)`` keeps its first row.

    Args:
        path: The ``results.jsonl`` file; a missing file (and no ``.gz`` beside it) has no rows.

    Returns:
        The rows, in file order.
    """
    path = Path(path)
    seen: set[tuple[str, str]] = set()
    rows: list[dict[str, Any]] = []
    if _gz(path).exists():
        with gzip.open(_gz(path), "rt", encoding="utf-8", errors="replace") as fh:
            rows += _parse(fh.read().splitlines(), seen)
    if not path.exists():
        return rows
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):
        os.truncate(path, complete)
    return rows + _parse(data[:complete].decode("utf-8", errors="replace").splitlines(), seen)


def results_in(folder: str | Path) -> list[dict[str, Any]]:
    """Return the rows of the benchmark folder ``folder`` (plain, compressed or both)."""
    return load_results(Path(folder) / RESULTS_FILE)


def append_row(fh: IO[str], row: Mapping[str, Any]) -> None:
    """Append one row to an open ``results.jsonl`` and make it durable before returning."""
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def compress_results(folder: str | Path) -> Path | None:
    """Merge a folder's rows into ``results.jsonl.gz`` and remove ``results.jsonl``.

    Written to a temporary file and renamed, so a kill leaves either the old files or the new
    one. The gzip header carries no time stamp: the same rows give the same bytes.

    Returns:
        The compressed file, or ``None`` when the folder has no rows.
    """
    path = Path(folder) / RESULTS_FILE
    rows = load_results(path)
    if not rows:
        return None
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    tmp = path.with_name(f".{path.name}.gz.tmp{os.getpid()}")
    # filename="": gzip would otherwise name the temporary file (with this pid) in the header.
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(body)
    os.replace(tmp, _gz(path))
    path.unlink(missing_ok=True)
    return _gz(path)
