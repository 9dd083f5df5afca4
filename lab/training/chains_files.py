"""Writing a chain-data file: the chosen trajectories and a record that makes them again.

``train sft --data`` copies a file's ``command`` and ``datasets`` into the adapter's card, so a
selection's record names every step (synthesis, replayed synthesis, this selection) and every
question file; a combined file keeps each part's own settings under ``parts``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.train.trajectories import META_FILE, write_trajectories

__all__ = ["COMMAND", "combine", "write_selection"]

COMMAND = "langgraph-parallel train chains"
"""How the records name this step (files made before it moved here say ``tools/sft_chains.py``)."""


def combine(
    datas: list[Path],
    out: Path,
    rows: list[dict[str, Any]] | None = None,
    verb: str = "combine",
    repeat: dict[str, int] | None = None,
) -> int:
    """Write every trajectory of ``datas`` (or ``rows`` of them) as one file; returns how many.

    For a stage that trains both policies from zero (``train sft --data``, on a GPU: the chains
    in the first stage's mix rather than a stage of their own). Each question must come with
    both policies' trajectories, once each, so the two policies still see the same questions.
    ``repeat`` (question class -> times) then writes that class's trajectories that many times,
    both policies alike: comparisons are a quarter of the questions with paragraphs but half
    of the benchmark, and the data holds no more of them.

    Raises:
        UserError: Naming the question that breaks that, or files synthesised with different
            passage budgets.
    """
    if rows is None:
        rows = [r for path in datas for r in read_rows(path, what="trajectory file")]
    seen: dict[str, set[str]] = {}
    for r in rows:
        mine = seen.setdefault(str(r["id"]), set())
        if r["policy"] in mine:
            raise UserError(f"question {r['id']} has two {r['policy']} trajectories: drop a file.")
        mine.add(r["policy"])
    policies = set().union(*seen.values())
    lone = sorted(i for i, p in seen.items() if p != policies)
    if lone:
        raise UserError(
            f"{len(lone)} question(s) lack a policy's trajectory (e.g. {lone[0]}): give both "
            "policies' files (select --policy parallel and --policy sequential)."
        )
    metas = [json.loads(path.with_name(META_FILE).read_text()) for path in datas]
    configs = [m.get("config") or {} for m in metas]
    budgets = {c.get("passage_sentences") for c in configs}
    if len(budgets) > 1:  # a policy is served one cut: its trajectories must all show that cut
        raise UserError(
            "the files were synthesised with different --passage-sentences "
            f"({sorted(budgets, key=str)}): synthesise them again with one."
        )
    # The settings all parts share (the card copies them; the passage budget is served from it);
    # the others (max_turns: 4 for HotpotQA, 6 for chains) are each part's, under "parts".
    shared = {k: v for k, v in configs[0].items() if all(c.get(k, v) == v for c in configs)}
    command = f"{COMMAND} {verb} " + " ".join(f"--data {p}" for p in datas)
    if repeat:
        unknown = set(repeat) - {str(r.get("question_class")) for r in rows}
        if unknown or min(repeat.values()) < 1:
            raise UserError(
                f"--repeat {repeat}: name a question class of the data ({sorted(unknown)} has no "
                "trajectory) and a count of at least 1, e.g. --repeat parallelizable=2."
            )
        rows = [r for r in rows for _ in range(repeat.get(str(r.get("question_class")), 1))]
        command += "".join(f" --repeat {k}={v}" for k, v in sorted(repeat.items()))
    meta = {
        # Each part's own steps, then this one: the card copies command and datasets.
        "command": " && ".join(dict.fromkeys([*(m["command"] for m in metas), command])),
        "datasets": list(dict.fromkeys(d for m in metas for d in m.get("datasets", []))),
        "exclude": list(dict.fromkeys(e for m in metas for e in m.get("exclude", []))),
        "config": shared,
        "parts": [
            {k: m[k] for k in ("command", "config", "trajectories") if k in m} for m in metas
        ],
        "selection": command,
        **({"repeat": repeat} if repeat else {}),
    }
    write_trajectories(out, rows, meta)  # adds the counts: trajectories, by_policy
    return len(rows)


def write_selection(
    chosen: list[dict[str, Any]],
    data: Path,
    out: Path,
    command: str,
    replayed: dict[str, Any] | None = None,
) -> int:
    """Write ``chosen`` and a ``data.json`` whose command and files make the file again.

    ``train sft --data`` copies ``command`` and ``datasets`` into the adapter's card, so they
    name every step (synthesis, replayed synthesis, this selection) and every question file.
    """
    meta = json.loads(data.with_name(META_FILE).read_text())
    steps = [meta["command"], *([replayed["command"]] if replayed else []), command]
    meta.update(
        command=" && ".join(steps),
        datasets=[*meta.get("datasets", []), *(replayed or {}).get("datasets", [])],
        selection=command,
    )
    if replayed:  # its own synthesis settings (HotpotQA: max_turns 4), beside the chains'
        meta["replay"] = {
            k: replayed[k] for k in ("command", "datasets", "config") if k in replayed
        }
    write_trajectories(out, chosen, meta)  # adds the counts: trajectories, by_policy
    return len(chosen)
