"""The blocks of the GRPO runs: each its training log and its held-out evaluation.

From the untrained base (``benchmarks/rl``) and from the SFT policy (``benchmarks/rl/sft_grpo``).
The training runs are ``langgraph-parallel train grpo``'s; their evaluations the experiments
``models`` (``benchmarks/rl/eval``) and ``grpo``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.paths import checkout_dir
from lab.provenance import pct, shown_command
from langgraph_parallel.eval.summary import mean_of, mean_present
from langgraph_parallel.train.reward_curve import read_metrics

__all__ = ["render_rl", "render_rl_sft"]


def render_rl(root: Path | None = None) -> str:
    """Render the GRPO run from the untrained base and its evaluation (block ``rl-results``)."""
    root = root or checkout_dir() / "benchmarks" / "rl"
    run: dict[str, Any] = json.loads((root / "run.json").read_text())
    steps = read_metrics(root / "metrics.jsonl")
    window = 10
    first, last = (mean_of(part, "reward") for part in (steps[:window], steps[-window:]))
    bridge = sum("rollout/decomposition_rate/sequential" in s for s in steps)
    group = run["config"]["group_size"]
    decomposed = sum(
        round(s.get(k, 0.0) * group) for s in steps for k in s if k.startswith("rollout/decomp")
    )
    minutes = sum(s.get("step_time", 0.0) for s in steps) / 60
    evals = json.loads((root / "eval" / "models.json").read_text())
    before, after = (evals[m]["by_class"]["all"]["parallel-search"] for m in evals)
    split = {k: m["decomposition_rate"] * m["n"] for k, m in (("before", before), ("after", after))}
    return (
        f"**GRPO training** (`benchmarks/rl/`, {len(steps)} steps x {group} rollouts of the "
        "ParallelSearch graph, untrained SmolLM2 full fine-tune on CPU, "
        f"{minutes:.0f} min of steps): the reward rose from {first:.2f} to {last:.2f} (mean of "
        f"the first vs last {window} steps), and {decomposed} of {len(steps) * group} training "
        f"rollouts wrote a `##` decomposition. The sample was {bridge} bridge questions of "
        f"{len(steps)}. On {before['n']} held-out questions the trained model searches "
        f"{after['turns']:.2f} vs {before['turns']:.2f} turns, answers {pct(after['answered'])} "
        f"vs {pct(before['answered'])}, decomposes on {split['after']:.0f} vs "
        f"{split['before']:.0f} questions and scores EM "
        f"{after['em']:.3f} vs {before['em']:.3f}."
    )


def render_rl_sft(root: Path | None = None) -> str:
    """Render GRPO from the SFT policy: training and held-out before/after (``rl-sft-results``)."""
    root = root or checkout_dir() / "benchmarks" / "rl" / "sft_grpo"
    run: dict[str, Any] = json.loads((root / "train" / "run.json").read_text())
    steps = read_metrics(root / "train" / "metrics.jsonl")
    config, half = run["config"], len(steps) // 2
    minutes = sum(s.get("step_time", 0.0) for s in steps) / 60

    def rate(part: list[dict[str, Any]], cls: str) -> str:
        key = f"rollout/decomposition_rate/{cls}"
        mean = mean_present(part, key)
        return "-" if mean is None else pct(mean)

    early, late = steps[:half], steps[half:]
    result: dict[str, Any] = json.loads((root / "grpo.json").read_text())
    names = list(result["models"])
    lines = [
        f"**GRPO from the SFT policy** (`benchmarks/rl/sft_grpo/`): {shown_command(run['command'])}"
        f", "
        f"{len(steps)} steps x {config['group_size']} rollouts, LoRA continuing "
        f"`{config['model']}`'s adapter, {minutes:.0f} min of steps on 2 CPU cores "
        "(`train/reward_curve.png`). Reward, first vs second half of the steps: "
        f"{mean_of(early, 'reward'):.2f} -> {mean_of(late, 'reward'):.2f}; the rollouts' first "
        f"search decomposed on {rate(early, 'parallelizable')} -> "
        f"{rate(late, 'parallelizable')} of comparison and {rate(early, 'sequential')} -> "
        f"{rate(late, 'sequential')} of bridge questions; EM {mean_of(early, 'rollout/em'):.2f}"
        f" -> {mean_of(late, 'rollout/em'):.2f}.",
        "",
        f"Held out, greedy, `parallel-search`: {shown_command(result['command'])} "
        "(" + ", ".join(f"{k} = `{v}`" for k, v in result["models"].items()) + ").",
        "",
        "| dataset | class | model | n | first search decomposed | LLM calls | search turns "
        "| answered | EM | F1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, part in result["datasets"].items():
        for cls in ("parallelizable", "sequential"):
            for name in names:
                m = part["by_class"][cls].get(name)
                if m:
                    lines.append(
                        f"| {dataset} | {cls} | {name} | {m['n']} "
                        f"| {pct(m['first_search_decomposed'])} | {m['llm_calls']:.2f} "
                        f"| {m['turns']:.2f} | {pct(m['answered'])} | {m['em']:.3f} "
                        f"| {m['f1']:.3f} |"
                    )
    lines.append("")
    for dataset, part in result["datasets"].items():
        for name, diff in part["changes"].items():
            text = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(diff.items()))
            lines.append(f"- {dataset}, {name} against {names[0]}: EM {text or 'unchanged'}.")
    return "\n".join(lines)
