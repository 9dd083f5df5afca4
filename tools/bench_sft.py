"""The trained policies against each other and against closed-book answering.

Usage:
    .venv/bin/python tools/bench_sft.py --limit 100 --wiki-limit 50 --concurrency 6 \
        --out benchmarks/sft --update-cards

Runs ``langgraph-parallel bench`` once per graph on its default model (``parallel-search`` on
``smollm2-parallel``, ``sequential`` on ``smollm2-sequential``, ``direct`` on the untrained
``smollm2``), each in its own process, on two samples, resumable:

- ``OUT/hotpotqa/<graph>``: a seeded sample of the bundled HotpotQA evaluation questions (held
  out from training by id) over the bundled corpus;
- ``OUT/2wiki/<graph>``: a seeded sample of 2WikiMultihopQA (never trained on: out of domain)
  over a corpus made of those questions' own paragraphs (gold and distractors of every sampled
  question, mixed into one index).

``--model GRAPH=MODEL`` runs a graph on a candidate policy instead (an adapter folder from
``train sft``), to compare it with the shipped ones before shipping it.

Then writes ``OUT/sft.md``/``.json``: per dataset, class and graph, LLM calls, search turns, the
decomposition rate of the first search (of the questions that searched), answered rate, EM, F1,
tokens and wall time; the calls and turns ratios of ``parallel-search`` to ``sequential`` on
parallelizable questions; and the prompt tokens the rules-only prompt saves over the few-shot one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_parallel_search import mean

from langgraph_parallel.apps.registry import default_model
from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.eval.harness import RESULTS_FILE, load_results
from langgraph_parallel.paths import repo_data_dir, shared_data_dir

HOTPOT = str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
WIKI = str(shared_data_dir() / "2wikimultihopqa_dev_sample500.jsonl.gz")
GRAPHS = "direct,sequential,parallel-search"
KEYS = ("llm_calls", "turns", "sub_queries", "em", "f1", "prompt_tokens", "completion_tokens",
        "wall_s")  # fmt: skip


def run_resuming(command: list[str], attempts: int = 3) -> None:
    """Run ``langgraph-parallel COMMAND`` in a child process, resuming after a crash.

    One process per graph and model: a run that loaded three in-process vLLM-CPU engines died
    with ``double free or corruption`` after 95 questions (docs/guides/evaluation.md); the harness
    resumes from the rows already written.
    """
    for _ in range(attempts):
        done = subprocess.run([sys.executable, "-m", "langgraph_parallel.apps.cli", *command])
        if done.returncode == 0:
            return
        if done.returncode == 2:  # a user error: running again cannot help
            break
    sys.exit(f"bench failed: {' '.join(command)}")


def wiki_corpus(limit: int, seed: str, out: Path) -> Path:
    """Write the paragraphs of the sampled 2Wiki questions as the corpus they are searched in."""
    from langgraph_parallel.train.contexts import context_corpus
    from langgraph_parallel.train.gold import read_rows

    chosen = {q.id for q in load_questions(WIKI, limit=limit, seed=int(seed))}
    contexts = [
        {p["title"]: "".join(p.get("sentences") or []).strip() for p in row.get("context") or []}
        for row in read_rows(WIKI)
        if str(row["id"]) in chosen
    ]
    return context_corpus(contexts, out)


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per class and graph means, the first-search decomposition rate and the ratios."""
    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for graph in sorted({r["graph"] for r in rows}):
        for cls in ("parallelizable", "sequential", "all"):
            part = [r for r in rows if r["graph"] == graph and cls in ("all", r["class"])]
            searched = [r for r in part if r.get("turns")]
            table[cls][graph] = {
                "n": len(part),
                **{k: mean(part, k) for k in KEYS},
                "searched": len(searched) / len(part) if part else 0.0,
                "first_search_decomposed": (
                    mean(searched, "first_turn_parallel") if searched else 0.0
                ),
                "answered": mean([{"a": int(r["answer"] is not None)} for r in part], "a"),
            }
    ratios = {}
    for cls, graphs in table.items():
        if {"parallel-search", "sequential"} <= set(graphs):
            par, seq = graphs["parallel-search"], graphs["sequential"]
            ratios[cls] = {k: par[k] / seq[k] if seq[k] else None for k in ("llm_calls", "turns")}
    return {"by_class": dict(table), "parallel_over_sequential": ratios}


def prompt_saving() -> dict[str, float]:
    """Mean prompt tokens of the few-shot and the rules-only first prompt on the HotpotQA sample."""
    from transformers import AutoTokenizer

    from langgraph_parallel.models.embedded import embedded_model_dir
    from langgraph_parallel.prompts import few_shot_prompt, rules_prompt

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir("smollm2"))
    questions = [q.question for q in load_questions(HOTPOT)]
    few = mean([{"n": len(tokenizer.encode(few_shot_prompt(q, True)))} for q in questions], "n")
    rules = mean([{"n": len(tokenizer.encode(rules_prompt(q, True)))} for q in questions], "n")
    return {"few_shot": few, "rules": rules, "saved": few - rules}


def update_cards(result: dict[str, Any], out: Path) -> None:
    """Record each shipped policy's figures in its adapter card (``benchmarks`` key)."""
    from langgraph_parallel.models.adapters import MODEL_CARD, read_card
    from langgraph_parallel.models.embedded import ADAPTERS_DIR
    from langgraph_parallel.paths import portable_path

    keys = ("n", "llm_calls", "turns", "first_search_decomposed", "answered", "em", "f1")
    for name, graph in (
        ("smollm2-parallel", "parallel-search"),
        ("smollm2-sequential", "sequential"),
    ):
        folder = ADAPTERS_DIR / name
        card = read_card(folder)
        card["benchmarks"] = {
            "command": result["command"],
            "file": portable_path(out / "sft.json"),
            "graph": graph,
            "figures": {
                dataset: {
                    cls: {k: round(graphs[graph][k], 4) for k in keys}
                    for cls, graphs in part["by_class"].items()
                    if graph in graphs
                }
                for dataset, part in result["datasets"].items()
            },
        }
        (folder / MODEL_CARD).write_text(json.dumps(card, indent=2) + "\n")


def graph_models(pairs: list[str]) -> dict[str, str]:
    """Each graph's model: its default, or the one a ``GRAPH=MODEL`` pair names.

    Raises:
        ValueError: For a pair that names no known graph or no model.
    """
    models = {graph: default_model(graph) for graph in GRAPHS.split(",")}
    for pair in pairs:
        graph, _, model = pair.partition("=")
        if graph not in models or not model:
            raise ValueError(f"--model takes GRAPH=MODEL, GRAPH one of {GRAPHS} (got {pair!r})")
        models[graph] = model
    return models


def models_of(result: dict[str, Any]) -> dict[str, str]:
    """The model each graph ran on (results written before ``--model`` ran the defaults)."""
    return result.get("models") or {g: default_model(g) for g in GRAPHS.split(",")}


def markdown(result: dict[str, Any]) -> str:
    """The tables of ``sft.md``."""
    cols = ["n", "llm_calls", "turns", "searched", "first_search_decomposed", "answered", "em",
            "f1", "prompt_tokens", "completion_tokens", "wall_s"]  # fmt: skip
    lines = ["# Trained policies (SFT adapters) on the embedded engine", "",
             f"Command: `{result['command']}`", "",
             "Models: " + ", ".join(f"{g} = {m}" for g, m in models_of(result).items())
             + " (direct: closed book).", ""]  # fmt: skip
    for dataset, part in result["datasets"].items():
        lines += [f"## {dataset}", ""]
        for cls, graphs in part["by_class"].items():
            lines += [f"### {cls}", "", "| graph | " + " | ".join(cols) + " |",
                      "|---" * (len(cols) + 1) + "|"]  # fmt: skip
            for graph, m in graphs.items():
                cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in cols]
                lines.append(f"| {graph} | " + " | ".join(cells) + " |")
            lines.append("")
        for cls, ratio in part["parallel_over_sequential"].items():
            text = ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items() if v is not None)
            lines.append(f"- parallel-search / sequential, {cls}: {text}")
        lines.append("")
    saving = result["prompt_tokens"]
    lines.append(
        f"First prompt: {saving['few_shot']:.0f} tokens few-shot vs {saving['rules']:.0f} "
        f"rules-only ({saving['saved']:.0f} prefill tokens saved per question)."
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=100, help="HotpotQA questions")
    parser.add_argument("--wiki-limit", type=int, default=60, help="2Wiki questions (0: skip)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", default="0")
    parser.add_argument("--out", default="benchmarks/sft")
    parser.add_argument(
        "--update-cards", action="store_true", help="write the figures into the shipped cards"
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="GRAPH=MODEL",
        help="run GRAPH on MODEL instead of its default (a candidate adapter folder: "
        "parallel-search=runs/x/parallel); repeatable",
    )
    args = parser.parse_args()
    try:
        models = graph_models(args.model)
    except ValueError as exc:
        parser.error(str(exc))
    if args.update_cards and any(models[g] != default_model(g) for g in models):
        parser.error("--update-cards writes the shipped cards: run it on the default models only")
    out = Path(args.out)
    runs = {"hotpotqa": (HOTPOT, args.limit, None)}
    if args.wiki_limit:
        corpus = wiki_corpus(args.wiki_limit, args.seed, out / "2wiki")
        runs["2wiki"] = (WIKI, args.wiki_limit, str(corpus))
    result: dict[str, Any] = {"command": " ".join([".venv/bin/python", *sys.argv]),
                              "models": models, "datasets": {}}  # fmt: skip
    for name, (dataset, limit, corpus) in runs.items():
        rows = []
        for graph in GRAPHS.split(","):
            folder = out / name / graph
            command = ["bench", "--dataset", dataset, "--limit", str(limit), "--seed", args.seed,
                       "--model", models[graph], "--graphs", graph, "--concurrency",
                       str(args.concurrency), "--out", str(folder)]  # fmt: skip
            run_resuming(command + (["--corpus", corpus] if corpus else []))
            rows += load_results(folder / RESULTS_FILE)
        result["datasets"][name] = analyse(rows)
    result["prompt_tokens"] = prompt_saving()
    (out / "sft.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "sft.md").write_text(markdown(result))
    if args.update_cards:
        update_cards(result, out)
    print(markdown(result))


if __name__ == "__main__":
    main()
