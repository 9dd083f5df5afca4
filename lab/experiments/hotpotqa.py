"""ParallelSearch vs the sequential baseline on HotpotQA, untrained, on the embedded engine.

``langgraph-parallel bench run parallel-search`` runs (or resumes) ``bench`` with the graphs
``direct,sequential,parallel-search`` on a seeded sample of the bundled HotpotQA distractor
questions (``--limit``, default 200), then writes ``parallel_search.md``/``.json`` next to the
harness outputs: per question class, mean LLM calls, turns, sub-queries, EM, F1, tokens and wall
time for both agents, the ratio of ParallelSearch's LLM calls to the sequential agent's, the
decomposition rate (questions whose agent ran at least one turn with two or more sub-queries)
and the invalid-step rate.

Setting ``constrained_ablation`` N also runs ParallelSearch without constrained decoding on the
first N questions (into OUT/unconstrained) to measure what the engine's structured outputs
change. (Its committed results, ``benchmarks/hotpotqa200``, were made by the script this
replaced, ``tools/bench_parallel_search.py``, with the same settings.)
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.paths import checkout_dir
from lab.provenance import commits_of, pct, shown_command
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of, share_of
from langgraph_parallel.paths import repo_data_dir

__all__ = ["EXPERIMENT", "analyse", "markdown", "render_hotpotqa200"]

AGENTS = ("sequential", "parallel-search")
KEYS = (
    "n",
    "llm_calls",
    "turns",
    "sub_queries",
    "decomposition_rate",
    "invalid_steps",
    "answered",
    "em",
    "f1",
    "tokens",
    "cached_prompt_tokens",
    "wall_s",
)


def dataset() -> str:
    """Return the bundled HotpotQA sample every HotpotQA experiment draws from."""
    return str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per class and graph: means, decomposition and answered rates; the LLM-call ratios."""
    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for graph in {r["graph"] for r in rows}:
        for cls in ("parallelizable", "sequential", "all"):
            part = [r for r in rows if r["graph"] == graph and cls in ("all", r["class"])]
            table[cls][graph] = {
                "n": len(part),
                **{k: mean_of(part, k) for k in ("llm_calls", "turns", "sub_queries", "em", "f1")},
                "tokens": mean_of(part, "prompt_tokens") + mean_of(part, "completion_tokens"),
                "cached_prompt_tokens": mean_of(part, "cached_prompt_tokens"),
                "wall_s": mean_of(part, "wall_s"),
                "decomposition_rate": share_of(part, lambda r: (r.get("parallel_turns") or 0) > 0),
                "invalid_steps": mean_of(part, "invalid_steps"),
                "answered": share_of(part, lambda r: r["answer"] is not None),
            }
    ratios = {
        cls: (g["parallel-search"]["llm_calls"] / g["sequential"]["llm_calls"])
        for cls, g in table.items()
        if {"parallel-search", "sequential"} <= set(g) and g["sequential"]["llm_calls"]
    }
    return {"by_class": table, "llm_call_ratio_parallel_over_sequential": ratios}


def markdown(result: dict[str, Any], command: str) -> str:
    """Return the tables of ``parallel_search.md``."""
    lines = [
        "# ParallelSearch vs sequential (HotpotQA distractor, embedded engine)",
        "",
        f"Command: `{command}`",
        "",
    ]
    for cls, graphs in result["by_class"].items():
        lines += [
            f"## {cls}",
            "",
            "| graph | " + " | ".join(KEYS) + " |",
            "|---" * (len(KEYS) + 1) + "|",
        ]
        for graph, m in sorted(graphs.items()):
            cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in KEYS]
            lines.append(f"| {graph} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("LLM-call ratio, parallel-search / sequential:")
    for cls, ratio in result["llm_call_ratio_parallel_over_sequential"].items():
        lines.append(f"- {cls}: {ratio:.1%}")
    return "\n".join(lines) + "\n"


def _run(run: Run) -> None:
    s = run.settings
    common = {"dataset": dataset(), "seed": 0, "model": s["model"], "concurrency": s["concurrency"]}
    graphs = tuple(s["graphs"].split(","))
    run.bench(BenchSpec(**common, limit=run.limit, graphs=graphs, out=str(run.out)))
    if s["constrained_ablation"]:
        ablation = run.out / "unconstrained"
        run.bench(
            BenchSpec(
                **common,
                limit=s["constrained_ablation"],
                graphs=("parallel-search-unconstrained",),
                out=str(ablation),
            )
        )
    rows = [r for r in results_in(run.out) if r["graph"] in AGENTS]
    result = {**analyse(rows), "command": run.command}
    Experiment.write_tables(run.out, "parallel_search", result, markdown(result, run.command))


EXPERIMENT = Experiment(
    name="parallel-search",
    about="ParallelSearch vs the sequential agent and closed book, untrained smollm2, HotpotQA",
    out="benchmarks/hotpotqa200",
    run=_run,
    limit=200,
    settings={
        "model": "smollm2",
        "graphs": "direct,sequential,parallel-search",
        "concurrency": 6,
        "constrained_ablation": 60,
    },
)


def _answered(rows: list[dict[str, Any]]) -> str:
    return pct(share_of(rows, lambda r: r["answer"] is not None))


def render_hotpotqa200(root: Path | None = None) -> str:
    """Render the untrained agents on 200 questions (README block ``hotpotqa200-results``)."""
    root = root or checkout_dir() / "benchmarks" / "hotpotqa200"
    result: dict[str, Any] = json.loads((root / "parallel_search.json").read_text())
    rows = results_in(root)
    direct = [r for r in rows if r["graph"] == "direct"]
    by_class = result["by_class"]
    n_par, n_seq = (by_class[c]["sequential"]["n"] for c in ("parallelizable", "sequential"))
    lines = [
        f"**ParallelSearch vs the sequential Search-R1 agent** — {len(direct)} HotpotQA "
        f"distractor questions ({n_par} comparison = parallelizable, {n_seq} bridge = "
        "sequential), untrained `smollm2` with the few-shot prompt, same engine, same index, "
        f"`max_turns=4`, `top_k=3`; made by {shown_command(result['command'])}, rows written at "
        f"{commits_of(root / 'run.json')}:",
        "",
        "| class | graph | LLM calls | turns | any `##` turn "
        "| answered | EM | F1 | prompt+completion tokens | cached prompt tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cls in ("parallelizable", "sequential"):
        for graph in ("sequential", "parallel-search"):
            m = by_class[cls][graph]
            lines.append(
                f"| {cls} | {graph} | {m['llm_calls']:.2f} | {m['turns']:.2f} | "
                f"{pct(m['decomposition_rate'])} | {pct(m['answered'])} | {m['em']:.3f} | "
                f"{m['f1']:.3f} | {m['tokens']:.0f} | {m['cached_prompt_tokens']:.0f} | "
                f"{m['wall_s']:.1f} |"
            )
    answered = sum(r["answer"] is not None for r in direct)
    tokens = mean_of(direct, "prompt_tokens") + mean_of(direct, "completion_tokens")
    lines += [
        f"| all | direct (no retrieval) | 1.00 | 0 | - | {answered / len(direct):.1%} "
        f"({answered}/{len(direct)}) | {mean_of(direct, 'em'):.3f} | "
        f"{mean_of(direct, 'f1'):.3f} | {tokens:.0f} | "
        f"{mean_of(direct, 'cached_prompt_tokens'):.0f} | {mean_of(direct, 'wall_s'):.1f} |",
        "",
    ]
    ratio = result["llm_call_ratio_parallel_over_sequential"]
    decomposed = sum(
        (r.get("parallel_turns") or 0) > 0 for r in rows if r["graph"] == "parallel-search"
    )
    lines.append(
        f"ParallelSearch used **{ratio['parallelizable']:.1%}** of the sequential agent's LLM "
        f"calls on parallelizable questions ({ratio['sequential']:.1%} on sequential ones); it "
        f"ran a `##` turn on {decomposed} of {len(direct)} questions."
    )
    unconstrained = results_in(root / "unconstrained")
    ids = {r["id"] for r in unconstrained}
    constrained = [r for r in rows if r["graph"] == "parallel-search" and r["id"] in ids]
    if len(constrained) == len(unconstrained):
        lines += [
            "",
            "**Constrained decoding** (vLLM structured outputs with `action_regex`, on by default "
            f"for the embedded model), ParallelSearch on the same {len(ids)} questions with and "
            f"without it: {_answered(constrained)} vs {_answered(unconstrained)} of "
            f"runs answer, {mean_of(constrained, 'invalid_steps'):.2f} vs "
            f"{mean_of(unconstrained, 'invalid_steps'):.2f} invalid steps per question, "
            f"{mean_of(constrained, 'llm_calls'):.2f} vs "
            f"{mean_of(unconstrained, 'llm_calls'):.2f} LLM calls "
            "(`benchmarks/hotpotqa200/unconstrained/`).",
        ]
    return "\n".join(lines)
