"""What one committed benchmark folder says about how it was made: commits, models, questions.

Read from the files a run leaves, whichever it has: ``run.json`` (the harness: ``commits`` its
rows were written at, ``models`` per graph or ``model``, ``config.model`` for training runs),
``summary.json`` (the graphs' ``n``; a ``bench run`` record's commit and each model's adapter
hash), and any other JSON object directly in the folder with a ``commit``, ``model`` or
``models`` key (the tables of experiments that write no rows, and ``served``-like parts one
level down). Only what looks like a commit (7-40 hex digits, maybe ``-dirty``) counts as one:
older files sometimes wrote a sentence there. The number of questions is the largest ``n`` of
the summary's graphs, else the distinct question ids of the rows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.results import RESULTS_FILE, SUMMARY_FILE, results_in

__all__ = ["RunRecord", "read_run"]

_COMMIT = re.compile(r"^[0-9a-f]{7,40}(-dirty)?")


@dataclass(frozen=True)
class RunRecord:
    """One folder's provenance.

    Attributes:
        folder: The folder.
        commits: Commits its figures were made at, in the order recorded.
        models: Models it ran, as ``--model`` names them, in the order recorded.
        hashes: Model -> adapter hash, where the folder's ``run.json`` or a ``bench run`` record
            gave one (``mixed:...`` when rows came from two adapters).
        n: Questions it ran (``None``: it has no rows and its summary no ``n``).
        command: The command one of its files recorded, if any.
    """

    folder: Path
    commits: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    hashes: dict[str, str] = field(default_factory=dict)
    n: int | None = None
    command: str | None = None


def _object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _commit(value: Any) -> str | None:
    match = _COMMIT.match(value) if isinstance(value, str) else None
    return match.group(0) if match else None


def _models(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return []


def _from_object(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Return the (commits, models) a result file names at its top level and one down."""
    recorded = [data.get("commit"), *(data.get("commits") or [])]
    commits = [c for c in map(_commit, recorded) if c]
    for value in data.values():
        if isinstance(value, dict) and _commit(value.get("commit")):
            commits.append(str(_commit(value["commit"])))
    models = _models(data.get("models")) or _models(data.get("model"))
    return commits, models


def _summary_n(summary: dict[str, Any]) -> int | None:
    ns = [
        part["all"]["n"]
        for part in (summary.get("graphs") or {}).values()
        if isinstance(part, dict) and isinstance(part.get("all"), dict) and "n" in part["all"]
    ]
    return max(ns) if ns else None


def read_run(folder: Path) -> RunRecord | None:
    """Return what ``folder``'s own files say of its run (``None``: they say nothing)."""
    commits: list[str] = []
    models: list[str] = []
    hashes: dict[str, str] = {}
    command = None
    run = _object(folder / "run.json")
    if run:
        found = _from_object(run)
        commits += found[0]
        models += found[1] or _models((run.get("config") or {}).get("model"))
        command = run.get("command")
    summary = _object(folder / SUMMARY_FILE)
    # The folder's own record of its weights (``bench`` writes it) outranks an experiment's.
    own = {m: h for m, h in (run.get("adapters") or {}).items() if isinstance(h, list) and h}
    for record in (summary.get("experiments") or {}).values():
        commits += [c for c in [_commit(record.get("commit"))] if c]
        for model, identity in (record.get("models") or {}).items():
            models.append(model)
            if isinstance(identity, dict) and identity.get("adapter"):
                hashes[model] = str(identity["adapter"])
        command = command or record.get("command")
    for path in sorted(folder.glob("*.json")):
        if path.name == "run.json":
            continue
        data = summary if path.name == SUMMARY_FILE else _object(path)
        found = _from_object(data)
        commits += found[0]
        models += found[1]
        command = command or (data.get("command") if found[0] or found[1] else None)
    for model, seen in own.items():
        # Rows from two adapters: no one hash is theirs, and none is today's.
        hashes[model] = str(seen[0]) if len(set(seen)) == 1 else "mixed:" + ",".join(seen)
    n = _summary_n(summary)
    if n is None and any(folder.glob(f"{RESULTS_FILE}*")):
        n = len({str(r["id"]) for r in results_in(folder)}) or None
    if not (commits or models or n):
        return None
    return RunRecord(
        folder=folder,
        commits=tuple(dict.fromkeys(commits)),
        models=tuple(dict.fromkeys(models)),
        hashes=hashes,
        n=n,
        command=command if isinstance(command, str) else None,
    )
