"""Reading JSON Lines files, plain or gzip, with errors that name the line and the format.

Corpora, question files, trajectory files, training logs and benchmark rows share the one
reader, so all refuse bad input the same way: the message names the file, the line, and the
documented format the caller passes in. (A benchmark's ``results.jsonl``, which a kill may cut
short mid-line, has its own repairing reader: :func:`langgraph_parallel.eval.results.load_results`.)
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from langgraph_parallel.errors import UserError

__all__ = ["read_objects", "read_rows"]


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_objects(path: Path, *, what: str, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a ``.jsonl[.gz]`` file.

    Args:
        path: The file; a ``.gz`` name is read as gzip.
        what: What the file holds, for the messages (``"corpus"``, ``"question file"``).
        fmt: The documented format, appended to every error so it names the fix.

    Raises:
        UserError: The file cannot be read (not gzip, cut short, not UTF-8), or a line is not
            JSON or not a JSON object.
    """
    try:
        with _open_text(path) as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(
                        f"{path}, line {line_no}: not valid JSON ({exc.msg}); {fmt}."
                    ) from exc
                if not isinstance(row, dict):
                    raise UserError(f"{path}, line {line_no}: must be a JSON object; {fmt}.")
                yield line_no, row
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read {what} {path} ({exc}); {fmt}.") from exc


def read_rows(
    path: str | Path, *, what: str = "JSON Lines file", fmt: str = "one JSON object per line"
) -> list[dict[str, Any]]:
    """Return every object of a ``.jsonl[.gz]`` file, in file order (blank lines skipped).

    Args:
        path: The file; a ``.gz`` name is read as gzip.
        what: What the file holds, for the messages.
        fmt: The documented format, for the messages.

    Raises:
        UserError: As :func:`read_objects`.
    """
    return [row for _, row in read_objects(Path(path), what=what, fmt=fmt)]
