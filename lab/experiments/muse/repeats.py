"""ParallelMuse and 8 independent rollouts with and without the repeat rule, paired.

Reads ``parallel-muse/`` and ``rollouts-majority/`` (``run.sh``: with the rule) and
``../defaults/hotpotqa/`` (before it) and writes ``compare.md``/``compare.json``: per graph,
how often the rule fired (``repeat_skips``), full contexts (``model_error`` ends, trimmed answer
steps, refused prompts), every join's EM with its paired 95% bootstrap interval and the cost a
user pays (agent + reduction, warm cache); then ParallelMuse against the rollouts with the rule,
paired. Run from the repository root:
``.venv/bin/python benchmarks/parallel_muse/repeats/compare.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lab.paired import paired_by_id
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of

HERE = Path(__file__).resolve().parent
GRAPHS = ("parallel-muse", "rollouts-majority")
EMS = ("em", "em_single", "em_join_majority", "em_join_evidence", "em_any")
COUNTS = ("repeat_skips", "trimmed_steps", "context_refusals", "turns", "sub_queries")
COSTS = ("agent_cost", "reduction_cost", "agent_uncached_prefill", "agent_generated")
COSTS += ("llm_calls",)


def _rows(folder: Path, graph: str) -> Rows:
    return [r for r in results_in(folder) if r["graph"] == graph]


Rows = Sequence[Mapping[str, Any]]


def summary(after: Rows, before: Rows) -> dict[str, Any]:
    """Return counts, paired EM differences (after - before) and mean costs on shared ids."""
    ids = {r["id"] for r in after} & {r["id"] for r in before}
    after = [r for r in after if r["id"] in ids]
    before = [r for r in before if r["id"] in ids]
    out: dict[str, Any] = {"n": len(ids), "counts": {}, "em": {}, "cost": {}}
    for name, rows in (("after", after), ("before", before)):
        counts = {k: sum(int(r.get(k) or 0) for r in rows) for k in COUNTS}
        counts["model_errors"] = sum("model_error" in str(r.get("stop_reason")) for r in rows)
        counts["questions_with_repeat_skips"] = sum(bool(r.get("repeat_skips")) for r in rows)
        out["counts"][name] = counts
        out["cost"][name] = {k: round(mean_of(rows, k), 1) for k in COSTS}
        out["cost"][name]["user_cost"] = round(
            out["cost"][name]["agent_cost"] + out["cost"][name]["reduction_cost"], 1
        )
    for key in EMS:
        diff = paired_by_id(
            {r["id"]: float(r.get(key) or 0) for r in after},
            {r["id"]: float(r.get(key) or 0) for r in before},
        )
        out["em"][key] = {
            "after": sum(float(r.get(key) or 0) for r in after),
            "before": sum(float(r.get(key) or 0) for r in before),
            "difference": round(diff.diff, 3),
            "interval": [round(diff.low, 3), round(diff.high, 3)],
        }
    return out


def markdown(s: Mapping[str, Any]) -> str:
    """Return the tables of ``compare.md``."""
    lines = [f"n = {s['n']} questions, the same seeds before and after the rule.", ""]
    after, before = s.get("after_label", "after"), s.get("before_label", "before")
    lines += ["| | " + " | ".join(s["counts"]["after"]) + " |"]
    lines += ["|---" * (len(s["counts"]["after"]) + 1) + "|"]
    for name in ("before", "after"):
        label = before if name == "before" else after
        lines += [f"| {label} | " + " | ".join(str(v) for v in s["counts"][name].values()) + " |"]
    lines += ["", f"| EM (questions right) | {before} | {after} | difference [95% CI] |"]
    lines += ["|---|---|---|---|"]
    for key, e in s["em"].items():
        low, high = e["interval"]
        lines += [
            f"| {key} | {e['before']:g} | {e['after']:g} | "
            f"{e['difference']:+.3f} [{low:+.3f}, {high:+.3f}] |"
        ]
    keys = list(s["cost"]["after"])
    lines += ["", "| mean a question | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name in ("before", "after"):
        label = before if name == "before" else after
        values = " | ".join(f"{v:g}" for v in s["cost"][name].values())
        lines += [f"| {label} | {values} |"]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write ``compare.json`` and ``compare.md`` beside this file."""
    old = HERE.parent / "defaults" / "hotpotqa"
    out: dict[str, Any] = {}
    text = []
    for graph in GRAPHS:
        s = summary(_rows(HERE / graph, graph), _rows(old, graph))
        s.update(after_label="with the rule", before_label="before it")
        out[graph] = s
        text += [f"## {graph}: with the repeat rule against before it", "", markdown(s)]
    s = summary(_rows(HERE / GRAPHS[0], GRAPHS[0]), _rows(HERE / GRAPHS[1], GRAPHS[1]))
    s.update(after_label=GRAPHS[0], before_label=GRAPHS[1])
    out["muse_vs_rollouts"] = s
    ratio = s["cost"]["after"]["user_cost"] / s["cost"]["before"]["user_cost"]
    agent = s["cost"]["after"]["agent_cost"] / s["cost"]["before"]["agent_cost"]
    out["muse_vs_rollouts"]["user_cost_ratio"] = round(ratio, 3)
    out["muse_vs_rollouts"]["agent_cost_ratio"] = round(agent, 3)
    text += [f"## {GRAPHS[0]} against {GRAPHS[1]}, both with the rule", "", markdown(s)]
    text += [f"User cost (agent + reduction) ratio: {ratio:.2f}x; agent alone: {agent:.2f}x.", ""]
    (HERE / "compare.json").write_text(json.dumps(out, indent=1) + "\n")
    (HERE / "compare.md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
