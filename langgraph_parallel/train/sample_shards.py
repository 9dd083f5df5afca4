"""The shards of a ``train sample`` folder: rows appended as samples finish, closed when whole.

A shard holds the samples of ``size`` consecutive questions of the run's list. Each finished
sample is one line appended to ``shard-NNNNN.jsonl`` (flushed and fsynced, so a kill loses at
most the samples in flight; a last line cut short is dropped on the next read). Once every
question of a shard has its samples, the shard's rows are written, in question and sample order,
to ``shard-NNNNN.jsonl.gz`` (gzip without a time stamp: the same rows give the same bytes; written
to a temporary file and renamed) and the plain file goes. A shard closed before a larger
``--limit`` or ``--samples`` gave it more work takes the new rows in a plain file again and is
closed anew. ``run.json`` holds the settings every row was made with, the adapter the model
named at each start, the commits whose pieces wrote rows, and each piece's commit, machine,
command, samples and seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import source_commit

__all__ = ["RUN_FILE", "SHARD_GLOB", "Shards", "read_samples", "row_error"]

RUN_FILE = "run.json"
SHARD_GLOB = "shard-*.jsonl*"
_NAME = re.compile(r"^shard-(\d+)\.jsonl(\.gz)?$")

Key = tuple[str, int]
"""A sample: (question id, sample index)."""


def _key(row: dict[str, Any]) -> Key:
    return str(row["id"]), int(row["sample"])


def _plain_rows(path: Path) -> list[dict[str, Any]]:
    """Read a plain shard, cutting a last line a kill left without its newline."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):
        os.truncate(path, complete)
    rows = []
    for line in data[:complete].decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "id" in row and "sample" in row:
            rows.append(row)
    return rows


def _record(
    settings: dict[str, Any], adapters: dict[str, Any], pieces: list[dict[str, Any]]
) -> dict[str, Any]:
    """Return ``run.json``: the settings, the commits whose pieces wrote rows, the pieces."""
    commits = [str(p["commit"]) for p in pieces if p.get("samples") and p.get("commit")]
    record = {"settings": settings, "commits": list(dict.fromkeys(commits))}
    return {**record, **({"adapters": adapters} if adapters else {}), "pieces": pieces}


def row_error(row: dict[str, Any]) -> str | None:
    """Return a sample's failure: its run raised, or the model did (``model_error:``)."""
    if row.get("error"):
        return str(row["error"])
    reason = str(row.get("stop_reason") or "")
    return reason if reason.startswith("model_error:") else None


def read_samples(folder: Path) -> dict[int, list[dict[str, Any]]]:
    """Shard number -> its rows (closed rows first; a repeated sample keeps its first row)."""
    out: dict[int, list[dict[str, Any]]] = {}
    seen: set[Key] = set()
    for path in sorted(folder.glob(SHARD_GLOB), key=lambda p: (p.name.endswith(".jsonl"), p.name)):
        match = _NAME.match(path.name)
        if match is None:
            continue
        rows = read_rows(path, what="sample shard") if match[2] else _plain_rows(path)
        for row in rows:
            if _key(row) not in seen:
                seen.add(_key(row))
                out.setdefault(int(match[1]), []).append(row)
    return out


class Shards:
    """The shards of one output folder (module docstring).

    Args:
        folder: The output folder (created by :meth:`check`).
        size: Questions per shard.
    """

    def __init__(self, folder: Path, size: int) -> None:
        self.folder, self.size = folder, size
        self._keys: dict[int, set[Key]] = {}
        self._piece: int | None = None

    def _plain(self, shard: int) -> Path:
        return self.folder / f"shard-{shard:05d}.jsonl"

    def _closed(self, shard: int) -> Path:
        return self.folder / f"shard-{shard:05d}.jsonl.gz"

    def _run(self) -> dict[str, Any]:
        path = self.folder / RUN_FILE
        if not path.is_file():
            return {}
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except ValueError as exc:
            raise UserError(f"{path} is not valid JSON; delete it or use another --out.") from exc

    def _write_run(self, run: dict[str, Any]) -> None:
        path = self.folder / RUN_FILE
        tmp = path.with_name(f".{RUN_FILE}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def check(self, settings: dict[str, Any], *, model: str | None = None) -> None:
        """Refuse a folder of rows made with other ``settings``; record the model's weights.

        ``run.json`` lists, per model, the adapter hash each start found (``adapters``, as
        ``bench`` records them: two hashes mean rows from two adapters).

        Raises:
            UserError: Naming the settings that differ.
        """
        from langgraph_parallel.models.identity import adapter_of

        run = self._run()
        settings = json.loads(json.dumps(settings))  # tuples as lists, as the file has them
        if run:
            changed = sorted(k for k in settings if run.get("settings", {}).get(k) != settings[k])
            if changed:
                was = ", ".join(f"{k}={run['settings'].get(k)!r}" for k in changed)
                raise UserError(
                    f"{self.folder} holds samples made with {was}; use another --out to "
                    "change them (only --limit and --samples may change on a resume)."
                )
        self.folder.mkdir(parents=True, exist_ok=True)
        adapters = {m: list(h) for m, h in (run.get("adapters") or {}).items()}
        if model and (digest := adapter_of(model)):
            adapters[model] = list(dict.fromkeys([*adapters.get(model, []), digest]))
        pieces = list(run.get("pieces") or [])
        self._write_run(_record(settings, adapters, pieces))
        self._keys = {s: {_key(r) for r in rows} for s, rows in read_samples(self.folder).items()}

    def start_piece(self, command: str = "") -> None:
        """Record a piece of sampling: its commit, machine and command (``run.json``)."""
        from langgraph_parallel.models.cpu import machine
        from langgraph_parallel.models.engine import engine_defaults

        run = self._run()
        here = {**machine(), "dtype": str(engine_defaults().get("dtype", "auto"))}
        piece = {"commit": source_commit(), "machine": here, "command": command}
        pieces = [*(run.get("pieces") or []), {**piece, "samples": 0, "seconds": 0.0}]
        self._piece = len(pieces) - 1
        self._write_run(_record(run["settings"], run.get("adapters") or {}, pieces))

    def record_piece(self, samples: int, seconds: float) -> None:
        """Record the samples this piece wrote and its seconds so far (``run.json``)."""
        run = self._run()
        if self._piece is None or not run:
            return
        run["pieces"][self._piece].update(samples=samples, seconds=round(seconds, 1))
        self._write_run(_record(run["settings"], run.get("adapters") or {}, run["pieces"]))

    def done(self) -> set[Key]:
        """Every sample written, closed or not."""
        return set().union(*self._keys.values()) if self._keys else set()

    def append(self, shard: int, row: dict[str, Any]) -> None:
        """Append one sample's row to its shard and make it durable before returning."""
        with self._plain(shard).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._keys.setdefault(shard, set()).add(_key(row))

    def complete(self, shard: int, ids: list[str], samples: int) -> bool:
        """Whether every question of ``ids`` has its ``samples`` rows in the shard."""
        keys = self._keys.get(shard, set())
        return all((i, k) in keys for i in ids for k in range(samples))

    def close(self, shard: int, ids: list[str]) -> Path:
        """Write the shard's rows, sorted, as its ``.jsonl.gz``; remove the plain file."""
        order = {qid: n for n, qid in enumerate(ids)}
        rows = [r for r in self._rows(shard)]
        rows.sort(key=lambda r: (order.get(str(r["id"]), len(order)), str(r["id"]), r["sample"]))
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        path = self._closed(shard)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh,
        ):
            fh.write(body)
        os.replace(tmp, path)
        self._plain(shard).unlink(missing_ok=True)
        return path

    def failed(self, shard: int) -> str | None:
        """Return the first error of a shard whose every row failed (``None``: one worked)."""
        errors = [row_error(row) for row in self._rows(shard)]
        return errors[0] if errors and all(errors) else None

    def discard(self, shard: int) -> None:
        """Forget a shard's rows (only ever failed ones: :meth:`failed`), so a rerun redoes them."""
        self._plain(shard).unlink(missing_ok=True)
        self._closed(shard).unlink(missing_ok=True)
        self._keys.pop(shard, None)

    def _rows(self, shard: int) -> list[dict[str, Any]]:
        seen: set[Key] = set()
        rows = []
        closed = self._closed(shard)
        for row in [
            *(read_rows(closed) if closed.is_file() else []),
            *_plain_rows(self._plain(shard)),
        ]:
            if _key(row) not in seen:
                seen.add(_key(row))
                rows.append(row)
        return rows

    def unclosed(self) -> list[int]:
        """Shards with a plain file (rows not yet in the closed file)."""
        return sorted(
            int(m[1]) for p in self.folder.glob("shard-*.jsonl") if (m := _NAME.match(p.name))
        )
