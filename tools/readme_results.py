"""Generate README result blocks from the committed benchmark files.

Usage:
    .venv/bin/python tools/readme_results.py          # rewrite the blocks in README.md
    .venv/bin/python tools/readme_results.py --check  # exit 1 if a block is stale

Each block sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in README.md and is
rendered only from its benchmark file, so a figure in the README is always the file's figure;
``tests/unit/test_readme_results.py`` fails when a block and its file disagree.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def render_sft(path: Path = REPO / "benchmarks" / "sft" / "sft.json") -> str:
    """The trained policies' table (``tools/bench_sft.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    lines = [
        f"Made by `{result['command']}` (`benchmarks/sft/`): each graph on its own default "
        "model, `max_turns=4`, `top_k=3`; HotpotQA over the bundled corpus, 2Wiki (never "
        "trained on) over an index of the sampled questions' own paragraphs.",
        "",
        "| dataset | class | graph (model) | n | LLM calls | search turns | first search "
        "decomposed | answered | EM | F1 | prompt+completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    models = {
        "parallel-search": "smollm2-parallel",
        "sequential": "smollm2-sequential",
        "direct": "smollm2, closed book",
    }
    for dataset, part in result["datasets"].items():
        for cls in ("parallelizable", "sequential"):
            for graph in ("parallel-search", "sequential", "direct"):
                m = part["by_class"][cls].get(graph)
                if m is None:
                    continue
                decomposed = _pct(m["first_search_decomposed"]) if m["searched"] else "-"
                lines.append(
                    f"| {dataset} | {cls} | {graph} ({models[graph]}) | {m['n']} | "
                    f"{m['llm_calls']:.2f} | {m['turns']:.2f} | {decomposed} | "
                    f"{_pct(m['answered'])} | {m['em']:.3f} | {m['f1']:.3f} | "
                    f"{m['prompt_tokens'] + m['completion_tokens']:.0f} | {m['wall_s']:.1f} |"
                )
    lines.append("")
    for dataset, part in result["datasets"].items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        if ratio:
            lines.append(
                f"- {dataset}, parallelizable questions: `parallel-search` used "
                f"**{ratio['llm_calls']:.2f}x** the LLM calls and **{ratio['turns']:.2f}x** the "
                "search turns of `sequential`."
            )
    saving = result["prompt_tokens"]
    lines.append(
        f"- The trained policies' rules-only prompt is {saving['rules']:.0f} tokens instead of "
        f"the few-shot {saving['few_shot']:.0f}: {saving['saved']:.0f} fewer prefill tokens "
        "per question."
    )
    return "\n".join(lines)


def render_parallel_muse(
    path: Path = REPO / "benchmarks" / "parallel_muse" / "parallel_muse.json",
) -> str:
    """ParallelMuse vs independent rollouts (``tools/bench_parallel_muse.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    summary, settings = result["summary"], result["settings"]
    rows = [r for r in result["rows"] if r["system"] == "parallel-muse"]
    n = len(rows)
    per_fork = 3  # samples per branch point: the bench's setting
    points = [-(-r["branches"] // per_fork) for r in rows]  # a point gets up to per_fork
    forks = {k: points.count(k) for k in (0, 1, 2)}
    lines = [
        f"Made by `{result['command']}` ({n} HotpotQA questions, budget "
        f"{settings['budget']}, prefix cache emptied before every system's run): partial rollout "
        f"(1 initial rollout, up to {per_fork} samples at each of the 2 most uncertain "
        "exploration steps, the rest of the budget as fresh rollouts) vs independent rollouts. "
        f"It forked at 2 points on {forks[2]} questions, at 1 point on {forks[1]} and not at all "
        f"on {forks[0]} (SmolLM2's trajectories are 1-2 steps). Means per question:",
        "",
        "| system | LLM calls | prompt tokens | cached | uncached prefill | generated "
        "| exploration | prefilled+generated | wall s | EM / F1 select | EM / F1 majority "
        "| EM / F1 weighted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system, label in (("parallel-muse", "parallel-muse"), ("rollouts", "independent")):
        m = summary[system]
        joins = " | ".join(
            f"{m['em_' + j]:.3f} / {m['f1_' + j]:.3f}" for j in ("select", "majority", "weighted")
        )
        lines.append(
            f"| {label} | {m['llm_calls']:.1f} | {m['prompt_tokens']:.0f} | "
            f"{m['cached_prompt_tokens']:.0f} | {m['uncached_prompt_tokens']:.0f} | "
            f"{m['completion_tokens']:.0f} | {m['exploration_tokens']:.0f} | "
            f"{m['prefill_plus_generated']:.0f} | {m['wall_s']:.1f} | {joins} |"
        )
    rel = summary["relative"]
    lines += [
        "",
        f"Partial rollout changed prefilled+generated tokens by "
        f"**{rel['prefill_plus_generated']:+.1%}** and exploration tokens by "
        f"{rel['exploration_tokens']:+.1%}; reports and the analyst cost "
        f"{summary['parallel-muse']['report_tokens']:.0f} tokens per question.",
    ]
    return "\n".join(lines)


def render_reliability(path: Path = REPO / "benchmarks" / "reliability.json") -> str:
    """The fault-injection totals (``tools/bench_reliability.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    rows = result["rows"]
    total = {k: sum(r[k] for r in rows) for k in ("cases", "faults_injected", "completed")}
    crashes = sum(r["crashes"] for r in rows)
    muse = [r for r in rows if r["graph"] == "parallel-muse"]
    forked = sum(r["forked"] or 0 for r in muse)
    return (
        f"**Reliability** (`benchmarks/reliability.md`, `{result['command']}`, fake model and "
        f"flaky searcher): {total['cases']:,} runs with fuzzed model output (unclosed/nested "
        "tags, hundreds of `##`, huge and non-UTF-8-safe text, broken JSON tool calls), 30% "
        "search faults (raise, time out, return nothing or garbage), 30% model faults "
        "(transient ones retried by the nodes' `RetryPolicy`, context-too-long ones reported), "
        "recursion limits from 2 to 60, and failing ParallelMuse branches (independent rollouts "
        f"and the fork graph, which forked in {forked} of its {sum(r['cases'] for r in muse)} "
        f"runs): {total['faults_injected']:,} faults injected, {total['completed']:,} runs "
        f"completed with an answer or a stated `stop_reason`, **{crashes} crashes**."
    )


BLOCKS: dict[str, Callable[[], str]] = {
    "reliability-results": render_reliability,
    "sft-results": render_sft,
    "muse-results": render_parallel_muse,
}
"""README block name -> renderer."""


def block(text: str, name: str) -> str | None:
    """The current content of block ``name`` in ``text`` (``None`` if it has no such block)."""
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    return match.group(1).removesuffix("\n") if match else None


def rewrite(text: str) -> str:
    """``text`` with every block re-rendered."""
    for name, render in BLOCKS.items():
        if block(text, name) is None:
            raise SystemExit(f"README.md has no <!-- {name}:start --> block")
        body = render()
        text = re.sub(
            rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
            lambda m, body=body: m.group(1) + body + "\n" + m.group(2),
            text,
            flags=re.S,
        )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    args = parser.parse_args()
    text = README.read_text()
    new = rewrite(text)
    if args.check:
        sys.exit(0 if new == text else 1)
    README.write_text(new)


if __name__ == "__main__":
    main()
