"""ParallelSearch vs the sequential baseline on HotpotQA, on the embedded engine.

Usage:
    .venv/bin/python tools/bench_parallel_search.py --limit 200 --concurrency 4 \
        --out benchmarks/hotpotqa200

Runs (or resumes) ``langgraph-parallel bench`` with the graphs ``direct,sequential,
parallel-search`` on a seeded sample of the bundled HotpotQA distractor questions, then writes
``parallel_search.md``/``.json`` next to the harness outputs: per question class, mean LLM calls,
turns, sub-queries, EM, F1, tokens and wall time for both agents, the ratio of ParallelSearch's
LLM calls to the sequential agent's, the decomposition rate (questions whose agent ran at least
one turn with two or more sub-queries) and the invalid-step rate.

``--constrained-ablation N`` also runs ParallelSearch without constrained decoding on the first
N questions (into OUT/unconstrained) to measure what the engine's structured outputs change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from langgraph_parallel.apps.cli import main as cli_main
from langgraph_parallel.eval.harness import RESULTS_FILE, load_results

DATASET = "data/hotpotqa_dev_sample300.jsonl.gz"
AGENTS = ("sequential", "parallel-search")


def mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(float(r.get(key) or 0) for r in rows) if rows else 0.0


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for graph in {r["graph"] for r in rows}:
        for cls in ("parallelizable", "sequential", "all"):
            part = [r for r in rows if r["graph"] == graph and cls in ("all", r["class"])]
            table[cls][graph] = {
                "n": len(part),
                **{k: mean(part, k) for k in ("llm_calls", "turns", "sub_queries", "em", "f1")},
                "tokens": mean(part, "prompt_tokens") + mean(part, "completion_tokens"),
                "cached_prompt_tokens": mean(part, "cached_prompt_tokens"),
                "wall_s": mean(part, "wall_s"),
                "decomposition_rate": mean(
                    [{"d": int((r.get("parallel_turns") or 0) > 0)} for r in part], "d"
                ),
                "invalid_steps": mean(part, "invalid_steps"),
                "answered": mean([{"a": int(r["answer"] is not None)} for r in part], "a"),
            }
    ratios = {
        cls: (g["parallel-search"]["llm_calls"] / g["sequential"]["llm_calls"])
        for cls, g in table.items()
        if {"parallel-search", "sequential"} <= set(g) and g["sequential"]["llm_calls"]
    }
    return {"by_class": table, "llm_call_ratio_parallel_over_sequential": ratios}


def markdown(result: dict[str, Any], command: str) -> str:
    keys = ["n", "llm_calls", "turns", "sub_queries", "decomposition_rate", "invalid_steps",
            "answered", "em", "f1", "tokens", "cached_prompt_tokens", "wall_s"]  # fmt: skip
    lines = ["# ParallelSearch vs sequential (HotpotQA distractor, embedded engine)", "",
             f"Command: `{command}`", ""]  # fmt: skip
    for cls, graphs in result["by_class"].items():
        lines += [f"## {cls}", "", "| graph | " + " | ".join(keys) + " |",
                  "|---" * (len(keys) + 1) + "|"]  # fmt: skip
        for graph, m in sorted(graphs.items()):
            cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in keys]
            lines.append(f"| {graph} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("LLM-call ratio, parallel-search / sequential:")
    for cls, ratio in result["llm_call_ratio_parallel_over_sequential"].items():
        lines.append(f"- {cls}: {ratio:.1%}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", default="benchmarks/hotpotqa200")
    parser.add_argument("--graphs", default="direct,sequential,parallel-search")
    parser.add_argument("--constrained-ablation", type=int, default=0)
    args = parser.parse_args()
    common = ["--dataset", DATASET, "--limit", str(args.limit), "--seed", "0", "--model",
              args.model, "--concurrency", str(args.concurrency)]  # fmt: skip
    code = cli_main(["bench", *common, "--graphs", args.graphs, "--out", args.out])
    if code:
        sys.exit(code)
    if args.constrained_ablation:
        ablation = Path(args.out) / "unconstrained"
        code = cli_main(["bench", "--dataset", DATASET, "--limit", str(args.constrained_ablation),
                         "--seed", "0", "--model", args.model, "--concurrency",
                         str(args.concurrency), "--graphs", "parallel-search-unconstrained",
                         "--out", str(ablation)])  # fmt: skip
        if code:
            sys.exit(code)
    rows = [r for r in load_results(Path(args.out) / RESULTS_FILE) if r["graph"] in AGENTS]
    result = analyse(rows)
    command = " ".join([".venv/bin/python", *sys.argv])
    result["command"] = command
    out = Path(args.out)
    (out / "parallel_search.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "parallel_search.md").write_text(markdown(result, command))
    print(markdown(result, command))


if __name__ == "__main__":
    main()
