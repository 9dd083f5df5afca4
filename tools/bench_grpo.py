"""Policies compared on held-out questions with ParallelSearch: before and after GRPO.

Usage:
    .venv/bin/python tools/bench_grpo.py --models sft=smollm2-parallel,grpo=runs/grpo/adapter \
        --limit 300 --wiki-limit 50 --concurrency 6 --out benchmarks/rl/sft_grpo

Runs ``langgraph-parallel bench --graphs parallel-search`` once per model, each in its own
process and resumable (``OUT/<dataset>/<name>``), on the bundled HotpotQA evaluation sample
(held out from SFT and GRPO by id) and on the 2Wiki sample over its own paragraphs (never
trained on; the corpus ``tools/bench_sft.py`` builds). Then writes ``OUT/grpo.md``/``.json``:
per dataset, class and model, the first-search decomposition rate (of the questions that
searched), LLM calls, turns, answered rate, EM and F1; and, against the first model, how many
questions each other model turned from wrong to right and from right to wrong (greedy
decoding, so a change is the weights', not sampling noise).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench_sft import HOTPOT, WIKI, analyse, run_resuming, wiki_corpus

from langgraph_parallel.eval.harness import RESULTS_FILE, load_results

COLUMNS = ("n", "first_search_decomposed", "llm_calls", "turns", "answered", "em", "f1")


def changes(rows: list[dict[str, Any]], first: str, other: str) -> dict[str, int]:
    """Questions ``other`` got right that ``first`` got wrong, and the reverse, by class."""
    em = {(r["graph"], r["id"]): r["em"] for r in rows}
    out: dict[str, int] = {}
    for r in rows:
        if r["graph"] != first or (other, r["id"]) not in em:
            continue
        before, after = em[(first, r["id"])], em[(other, r["id"])]
        key = "gained" if after > before else "lost" if after < before else None
        if key:
            out[f"{r['class']}_{key}"] = out.get(f"{r['class']}_{key}", 0) + 1
    return out


def markdown(result: dict[str, Any]) -> str:
    """The tables of ``grpo.md``."""
    named = ", ".join(f"{k} = `{v}`" for k, v in result["models"].items())
    lines = ["# Policies before and after GRPO, ParallelSearch graph, held-out questions", "",
             f"Command: `{result['command']}`", "", f"Models: {named}", ""]  # fmt: skip
    for dataset, part in result["datasets"].items():
        lines += [f"## {dataset}", ""]
        for cls, models in part["by_class"].items():
            lines += [f"### {cls}", "", "| model | " + " | ".join(COLUMNS) + " |",
                      "|---" * (len(COLUMNS) + 1) + "|"]  # fmt: skip
            for name in result["models"]:
                if name in models:
                    m = models[name]
                    cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in COLUMNS]
                    lines.append(f"| {name} | " + " | ".join(cells) + " |")
            lines.append("")
        for name, diff in part["changes"].items():
            text = ", ".join(f"{k} {v}" for k, v in sorted(diff.items())) or "none"
            lines.append(f"- EM changes, {name} against {next(iter(result['models']))}: {text}")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", required=True, help="name=model,... (first = reference)")
    parser.add_argument("--limit", type=int, default=300, help="HotpotQA questions")
    parser.add_argument("--wiki-limit", type=int, default=50, help="2Wiki questions (0: skip)")
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--seed", default="0")
    parser.add_argument("--out", default="benchmarks/rl/sft_grpo")
    args = parser.parse_args()
    models = dict(item.split("=", 1) for item in args.models.split(","))
    out = Path(args.out)
    runs = {"hotpotqa": (HOTPOT, args.limit, None)}
    if args.wiki_limit:
        corpus = wiki_corpus(args.wiki_limit, args.seed, out / "2wiki")
        runs["2wiki"] = (WIKI, args.wiki_limit, str(corpus))
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", *sys.argv]),
        "models": models,
        "datasets": {},
    }
    first = next(iter(models))
    for dataset_name, (dataset, limit, corpus) in runs.items():
        rows = []
        for name, model in models.items():
            folder = out / dataset_name / name
            command = ["bench", "--dataset", dataset, "--limit", str(limit), "--seed", args.seed,
                       "--model", model, "--graphs", "parallel-search", "--concurrency",
                       str(args.concurrency), "--out", str(folder)]  # fmt: skip
            run_resuming(command + (["--corpus", corpus] if corpus else []))
            rows += [{**r, "graph": name} for r in load_results(folder / RESULTS_FILE)]
        part = analyse(rows)
        part.pop("parallel_over_sequential", None)
        part["changes"] = {name: changes(rows, first, name) for name in models if name != first}
        result["datasets"][dataset_name] = part
    (out / "grpo.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "grpo.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
