"""The trained policies' analysis: per dataset, class and graph means, ratios, and their tables.

Shared by the ``sft`` experiment (three graphs, each on its policy) and the ``grpo`` one (one
graph, several policies, each analysed as a "graph" named after it).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab.paired import PairedDifference, PairedRatio, paired_by_class, ratio_by_class
from lab.paths import checkout_dir
from lab.provenance import pct, shown_command
from langgraph_parallel.eval.summary import mean_of, share_of

__all__ = [
    "GRAPH_MODELS",
    "analyse",
    "markdown",
    "models_of",
    "paired_lines",
    "ratio_text",
    "render_sft",
]

KEYS = (
    "llm_calls",
    "turns",
    "sub_queries",
    "em",
    "f1",
    "prompt_tokens",
    "completion_tokens",
    "wall_s",
)
GRAPH_MODELS = {
    "direct": "smollm2",
    "sequential": "smollm2-sequential",
    "parallel-search": "smollm2-parallel",
}
"""Each graph's model in the ``sft`` experiment (the registry's defaults when it was declared;
results written before the run recorded its models ran these)."""
PAIRS = (("parallel-search", "direct"), ("sequential", "direct"), ("parallel-search", "sequential"))
"""The EM comparisons the experiment reports, each with its paired interval."""


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per class and graph means, the first-search decomposition rate and the ratios."""
    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for graph in sorted({r["graph"] for r in rows}):
        for cls in ("parallelizable", "sequential", "all"):
            part = [r for r in rows if r["graph"] == graph and cls in ("all", r["class"])]
            searched = [r for r in part if r.get("turns")]
            table[cls][graph] = {
                "n": len(part),
                **{k: mean_of(part, k) for k in KEYS},
                "searched": share_of(part, lambda r: r.get("turns")),
                "first_search_decomposed": mean_of(searched, "first_turn_parallel"),
                "answered": share_of(part, lambda r: r["answer"] is not None),
            }
    ratios = {}
    for cls, graphs in table.items():
        if {"parallel-search", "sequential"} <= set(graphs):
            par, seq = graphs["parallel-search"], graphs["sequential"]
            ratios[cls] = {k: par[k] / seq[k] if seq[k] else None for k in ("llm_calls", "turns")}
    by_graph = {g: [r for r in rows if r["graph"] == g] for g in table["all"]}
    paired = {
        f"{a} - {b}": {
            cls: asdict(d) for cls, d in paired_by_class(by_graph[a], by_graph[b]).items()
        }
        for a, b in PAIRS
        if a in by_graph and b in by_graph
    }
    intervals: dict[str, dict[str, Any]] = defaultdict(dict)
    if {"parallel-search", "sequential"} <= set(by_graph):
        for key in ("llm_calls", "turns"):
            by_cls = ratio_by_class(by_graph["parallel-search"], by_graph["sequential"], key)
            for cls, ratio in by_cls.items():
                intervals[cls][key] = asdict(ratio)
    return {
        "by_class": dict(table),
        "parallel_over_sequential": ratios,
        "ratio_intervals": dict(intervals),
        "paired_em": paired,
    }


def ratio_text(part: dict[str, Any], cls: str, key: str, *, n: bool = False) -> str:
    """``0.71x [0.64, 0.78]``: ``parallel-search``'s ``key`` over ``sequential``'s on ``cls``.

    A table written before the intervals were (no ``ratio_intervals``) gives the ratio alone.
    """
    recorded = part.get("ratio_intervals", {}).get(cls, {}).get(key)
    if recorded:
        return PairedRatio.from_dict(recorded).interval(n=n)
    return f"{part['parallel_over_sequential'][cls][key]:.2f}x"


def paired_lines(dataset: str, part: dict[str, Any]) -> list[str]:
    """One line per paired EM comparison and class: difference, interval, n, wins/losses."""
    lines = []
    for pair, by_class in part.get("paired_em", {}).items():
        for cls in ("parallelizable", "sequential", "all"):
            if cls not in by_class:
                continue
            d = PairedDifference.from_dict(by_class[cls])
            lines.append(
                f"- {dataset}, {cls}: EM `{pair.replace(' - ', '` - `')}` {d.a:.3f} - "
                f"{d.b:.3f} = {d.interval()}"
                + ("" if d.excludes_zero else ": the interval includes zero")
            )
    return lines


def models_of(result: dict[str, Any]) -> dict[str, str]:
    """Return the model each graph ran on (results from before runs recorded it: the defaults)."""
    return result.get("models") or dict(GRAPH_MODELS)


def markdown(result: dict[str, Any]) -> str:
    """Return the tables of ``sft.md``."""
    cols = [
        "n",
        "llm_calls",
        "turns",
        "searched",
        "first_search_decomposed",
        "answered",
        "em",
        "f1",
        "prompt_tokens",
        "completion_tokens",
        "wall_s",
    ]
    lines = [
        "# Trained policies (SFT adapters) on the embedded engine",
        "",
        f"Command: `{result['command']}`",
        "",
        "Models: "
        + ", ".join(f"{g} = {m}" for g, m in models_of(result).items())
        + " (direct: closed book).",
        "",
    ]
    for dataset, part in result["datasets"].items():
        lines += [f"## {dataset}", ""]
        for cls, graphs in part["by_class"].items():
            lines += [
                f"### {cls}",
                "",
                "| graph | " + " | ".join(cols) + " |",
                "|---" * (len(cols) + 1) + "|",
            ]
            for graph, m in graphs.items():
                cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in cols]
                lines.append(f"| {graph} | " + " | ".join(cells) + " |")
            lines.append("")
        for cls, ratio in part["parallel_over_sequential"].items():
            text = ", ".join(
                f"{k} {ratio_text(part, cls, k, n=True)}" for k, v in ratio.items() if v is not None
            )
            lines.append(f"- parallel-search / sequential, {cls}: {text}")
        lines += [*paired_lines(dataset, part), ""]
    saving = result["prompt_tokens"]
    lines.append(
        f"First prompt: {saving['few_shot']:.0f} tokens few-shot vs {saving['rules']:.0f} "
        f"rules-only ({saving['saved']:.0f} prefill tokens saved per question)."
    )
    return "\n".join(lines) + "\n"


def render_sft(path: Path | None = None) -> str:
    """Render the trained policies' table (README block ``sft-results``)."""
    path = path or checkout_dir() / "benchmarks" / "sft" / "sft.json"
    result: dict[str, Any] = json.loads(path.read_text())
    lines = [
        f"Made by {shown_command(result['command'])}"
        f" (`benchmarks/sft/`): each graph on its own default "
        "model, `max_turns=4`, `top_k=3`; HotpotQA over the bundled corpus, 2Wiki (never "
        "trained on) over an index of the sampled questions' own paragraphs.",
        "",
        "| dataset | class | graph (model) | n | LLM calls | search turns | first search "
        "decomposed | answered | EM | F1 | prompt+completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    models = {**GRAPH_MODELS, "direct": "smollm2, closed book"}
    for dataset, part in result["datasets"].items():
        for cls in ("parallelizable", "sequential"):
            for graph in ("parallel-search", "sequential", "direct"):
                m = part["by_class"][cls].get(graph)
                if m is None:
                    continue
                decomposed = pct(m["first_search_decomposed"]) if m["searched"] else "-"
                lines.append(
                    f"| {dataset} | {cls} | {graph} ({models[graph]}) | {m['n']} | "
                    f"{m['llm_calls']:.2f} | {m['turns']:.2f} | {decomposed} | "
                    f"{pct(m['answered'])} | {m['em']:.3f} | {m['f1']:.3f} | "
                    f"{m['prompt_tokens'] + m['completion_tokens']:.0f} | {m['wall_s']:.1f} |"
                )
    lines.append("")
    for dataset, part in result["datasets"].items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        if ratio:
            calls, turns = (ratio_text(part, "parallelizable", k) for k in ("llm_calls", "turns"))
            recorded = part.get("ratio_intervals", {}).get("parallelizable", {})
            how = (
                f" (ratios of means, 95% paired bootstrap over the questions, "
                f"n={recorded['llm_calls']['n']})"
                if "llm_calls" in recorded
                else ""
            )
            lines.append(
                f"- {dataset}, parallelizable questions: `parallel-search` used "
                f"**{calls}** the LLM calls and **{turns}** the search turns of "
                f"`sequential`{how}."
            )
    for dataset, part in result["datasets"].items():
        lines += paired_lines(dataset, part)
    saving = result["prompt_tokens"]
    lines.append(
        f"- The trained policies' rules-only prompt is {saving['rules']:.0f} tokens instead of "
        f"the few-shot {saving['few_shot']:.0f}: {saving['saved']:.0f} fewer prefill tokens "
        "per question."
    )
    return "\n".join(lines)
