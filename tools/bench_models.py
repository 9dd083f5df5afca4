"""Models compared on the same questions: by default SmolLM2-135M-Instruct vs Gemma-3-270M.

Usage:
    .venv/bin/python tools/bench_models.py --limit 60 --out benchmarks/models
    # before/after GRPO training, on questions held out from training:
    .venv/bin/python tools/bench_models.py --models smollm2,runs/rl/model \
        --graphs parallel-search --limit 100 --out benchmarks/rl/eval

Runs ``langgraph-parallel bench`` with the sequential and ParallelSearch graphs once per model
(each in OUT/<model>, resumable) on the same seeded HotpotQA sample, then writes
``OUT/models.md``/``.json``: per model and question class, LLM calls, turns, decomposition rate,
invalid steps, answered rate, EM and F1. The project's default model is the one this table
shows better at the ParallelSearch protocol (see docs/guides/models.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_parallel_search import DATASET, analyse, markdown

from langgraph_parallel.apps.cli import main as cli_main
from langgraph_parallel.eval.harness import RESULTS_FILE, load_results

MODELS = ("smollm2", "gemma3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--out", default="benchmarks/models")
    parser.add_argument("--models", default=",".join(MODELS), help="names or model folders")
    parser.add_argument("--graphs", default="sequential,parallel-search")
    parser.add_argument("--seed", default="0", help="question sample seed")
    args = parser.parse_args()
    command = " ".join([".venv/bin/python", *sys.argv])
    results = {}
    sections = [f"# Models on ParallelSearch\n\nCommand: `{command}`\n"]
    for model in args.models.split(","):
        out = Path(args.out) / Path(model).name
        code = cli_main(["bench", "--dataset", DATASET, "--limit", str(args.limit),
                         "--seed", args.seed, "--model", model,
                         "--concurrency", str(args.concurrency), "--graphs", args.graphs,
                         "--out", str(out)])  # fmt: skip
        if code:
            sys.exit(code)
        results[model] = analyse(load_results(out / RESULTS_FILE))
        body = markdown(results[model], command).split("\n", 4)[4]  # drop its title and command
        sections.append(f"## {model}\n\n" + body.replace("## ", "### "))
    Path(args.out, "models.json").write_text(json.dumps(results, indent=2) + "\n")
    Path(args.out, "models.md").write_text("\n".join(sections))
    print("\n".join(sections))


if __name__ == "__main__":
    main()
