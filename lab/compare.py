"""Compare the per-question counters of two ``bench`` folders (did a refactor change anything).

``langgraph-parallel bench compare OLD_DIR NEW_DIR [--out FILE.md]``: for every (graph,
question) in both folders' rows, checks that the answer, the stop reason and the counters (LLM
calls, turns, sub-queries, prompt, cached prompt and completion tokens) are equal, and prints a
table per graph with the rows that differ. Run the same ``bench`` command (same engine, greedy,
``--concurrency 1``) at both commits, then compare. Exit status 1 when anything differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph_parallel.eval.results import results_in

__all__ = ["compare"]

KEYS = (
    "answer",
    "stop_reason",
    "llm_calls",
    "turns",
    "sub_queries",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
)


def _rows(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["graph"], r["id"]): r for r in results_in(folder)}


def compare(old: Path, new: Path) -> tuple[str, bool]:
    """Return the markdown report and whether every shared row is equal (and none is alone)."""
    before, after = _rows(old), _rows(new)
    shared = sorted(set(before) & set(after))
    lines = [
        f"Old: `{old}`, new: `{new}`; {len(shared)} (graph, question) rows in both.",
        "",
        "| graph | questions | equal | differing keys |",
        "|---|---|---|---|",
    ]
    same = bool(shared) and set(before) == set(after)
    for graph in sorted({g for g, _ in shared}):
        keys = [k for k in shared if k[0] == graph]
        diffs = {key: [f for f in KEYS if before[key].get(f) != after[key].get(f)] for key in keys}
        bad = {key: fields for key, fields in diffs.items() if fields}
        same = same and not bad
        fields = sorted({f for fs in bad.values() for f in fs})
        lines.append(
            f"| {graph} | {len(keys)} | {len(keys) - len(bad)} | {', '.join(fields) or '-'} |"
        )
    only = sorted(set(before) ^ set(after))
    if only:
        lines += ["", f"Rows in only one folder: {len(only)} (first: {only[0]})."]
    return "\n".join(lines) + "\n", same
