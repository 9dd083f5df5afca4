"""Compare the per-question counters of two ``langgraph-parallel bench`` folders.

Usage:
    .venv/bin/python tools/compare_runs.py OLD_DIR NEW_DIR [--out FILE.md]

For every (graph, question) in both folders' ``results.jsonl``, checks that the answer, the
stop reason and the counters (LLM calls, turns, sub-queries, prompt, cached prompt and
completion tokens) are equal, and prints a table per graph with the rows that differ. Made to
show that a refactor changed no behaviour: run the same ``bench`` command (same engine, greedy,
``--concurrency 1``) at both commits, then compare. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

KEYS = ("answer", "stop_reason", "llm_calls", "turns", "sub_queries", "prompt_tokens",
        "cached_prompt_tokens", "completion_tokens")  # fmt: skip


def rows(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of ``folder/results.jsonl`` keyed by (graph, question id)."""
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {(r["graph"], r["id"]): r for r in map(json.loads, filter(None, lines))}


def compare(old: Path, new: Path) -> tuple[str, bool]:
    """Return the markdown report and whether every shared row is equal."""
    before, after = rows(old), rows(new)
    shared = sorted(set(before) & set(after))
    lines = [f"Old: `{old}`, new: `{new}`; {len(shared)} (graph, question) rows in both.", "",
             "| graph | questions | equal | differing keys |", "|---|---|---|---|"]  # fmt: skip
    same = bool(shared) and set(before) == set(after)
    for graph in sorted({g for g, _ in shared}):
        keys = [k for k in shared if k[0] == graph]
        diffs = {key: [f for f in KEYS if before[key].get(f) != after[key].get(f)] for key in keys}
        bad = {key: fields for key, fields in diffs.items() if fields}
        same = same and not bad
        fields = sorted({f for fs in bad.values() for f in fs})
        lines.append(f"| {graph} | {len(keys)} | {len(keys) - len(bad)} | "
                     f"{', '.join(fields) or '-'} |")  # fmt: skip
    only = sorted(set(before) ^ set(after))
    if only:
        lines += ["", f"Rows in only one folder: {len(only)} (first: {only[0]})."]
    return "\n".join(lines) + "\n", same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    report, same = compare(args.old, args.new)
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
