"""The trajectory file of ``train sft``: written by a synthesis, read back to train from it.

``train sft --synthesize-only`` stops after writing ``OUT/data.jsonl`` (one trajectory a line)
and ``OUT/data.json`` (how it was made: command, question files, held-out files, settings, time);
``train sft --data OUT/data.jsonl`` trains on it without synthesising again. That splits the run
where its needs split: synthesis needs the corpus, the retrievers and LangGraph, training needs
the tokenizer, PEFT and TRL and wants a GPU, and the same trajectories can train several
settings. A file is checked before any training: every trajectory names a question, a policy and
its messages, and none is a question of the held-out files (the evaluation sample).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.train.gold import POLICIES

DATA_FILE, META_FILE = "data.jsonl", "data.json"
FIELDS = ("id", "policy", "question_class", "messages")
"""Keys every trajectory line has."""


def write_trajectories(out: Path, records: list[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """Write ``records`` to ``out/data.jsonl`` and ``meta`` (with counts) to ``out/data.json``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / DATA_FILE
    with path.open("w") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
    by_policy: dict[str, int] = {}
    for record in records:
        by_policy[record["policy"]] = by_policy.get(record["policy"], 0) + 1
    meta = {**meta, "trajectories": len(records), "by_policy": by_policy}
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return path


def read_trajectories(
    path: str | Path, *, policies: tuple[str, ...], held_out: set[str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read a trajectory file and the record of its synthesis (``{}`` when there is none).

    Raises:
        UserError: If the file is missing or malformed, lacks a requested policy, or holds a
            question of the held-out files.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"--data {path}: no such file; write one with train sft --synthesize-only.")
    records: list[dict[str, Any]] = []
    fix = "write it with train sft --synthesize-only"
    try:
        rows = read_rows(path, what="trajectory file", fmt=fix)
    except UserError as exc:  # JSON, gzip or encoding errors: the reader's cause, our words
        raise UserError(
            f"--data {path} is not a JSON-lines file ({exc.__cause__ or exc}); {fix}."
        ) from exc
    for row in rows:
        missing = [k for k in FIELDS if k not in row]
        if missing or row["policy"] not in POLICIES:
            raise UserError(
                f"--data {path}, trajectory {len(records) + 1}: not a train sft trajectory "
                f"(missing {missing}, or a policy other than {', '.join(POLICIES)}); {fix}."
            )
        records.append(row)
    leaked = sorted({str(r["id"]) for r in records} & held_out)
    if leaked:
        raise UserError(
            f"--data {path} has {len(leaked)} question(s) of the held-out files (e.g. "
            f"{', '.join(leaked[:3])}); training on them would score the evaluation on its own "
            "training data. Synthesise again with the same --exclude."
        )
    absent = [p for p in policies if not any(r["policy"] == p for r in records)]
    if absent:
        raise UserError(f"--data {path} has no {', '.join(absent)} trajectory; pick --policies.")
    meta_file = path.with_name(META_FILE)
    try:
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    except ValueError as exc:
        raise UserError(f"{meta_file} is not JSON ({exc}); remove it or synthesise again.") from exc
    meta["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return records, meta
