"""A GRPO run's steps, read back from its metrics log: the reward curve and its summary.

Apart from :mod:`langgraph_parallel.train.log`, which writes the log from inside the trainer:
reading, drawing and summarising need neither transformers nor TRL (the results pages read
committed logs). ``langgraph-parallel train curve METRICS [--window N]`` prints the summary
(``benchmarks/rl/curve.md``).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.rewards import COMPONENTS

__all__ = ["SUMMARY_KEYS", "add_curve_parser", "curve_summary", "plot_rewards", "read_metrics"]


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Read the per-step entries of a metrics log (the final summary line is skipped)."""
    return [r for r in read_rows(path, what="metrics log") if "reward" in r]


def plot_rewards(path: Path, png: Path, window: int = 10) -> None:
    """Draw the reward and its components per step, and below them what the rollouts did.

    Upper panel: total reward and each component. Lower panel: first-search decomposition rate
    by question class, valid-format rate and EM of the policy's own rollouts. Faint lines are
    the steps, solid ones moving averages over ``window`` logged values; a step whose group
    had no question of a class has no point for that class.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(path)
    if not rows:
        return
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    rewards = {"total": "reward", **{name: f"rewards/{name}/mean" for name in COMPONENTS}}
    _draw(top, rows, rewards, window)
    top.set_ylabel("reward")
    top.set_title("GRPO on ParallelSearch rollouts: reward per step")
    behaviour = {
        "decomposed, parallelizable": "rollout/decomposition_rate/parallelizable",
        "decomposed, sequential": "rollout/decomposition_rate/sequential",
        "valid format": "rollout/valid_format",
        "EM": "rollout/em",
    }
    _draw(bottom, rows, behaviour, window)
    bottom.set_ylabel("share of the policy's rollouts")
    bottom.set_xlabel("optimizer step")
    bottom.set_ylim(-0.05, 1.05)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def _draw(ax: Any, rows: list[dict[str, Any]], series: dict[str, str], window: int) -> None:
    for label, key in series.items():
        points = [(r["step"], float(r[key])) for r in rows if r.get(key) is not None]
        if not points:
            continue
        steps = [s for s, _ in points]
        values = [v for _, v in points]
        smooth = [
            statistics.fmean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))
        ]
        (line,) = ax.plot(steps, smooth, label=f"{label} (mean of {window})")
        ax.plot(steps, values, color=line.get_color(), alpha=0.2)
    ax.legend(fontsize=8)


SUMMARY_KEYS = (
    "reward",
    "rewards/outcome/mean",
    "rewards/decomposition/mean",
    "rewards/search_count/mean",
    "rewards/format/mean",
    "rollout/search_rounds",
    "rollout/valid_format",
    "rollout/em",
    "rollout/decomposition_rate/parallelizable",
    "rollout/decomposition_rate/sequential",
    "completions/mean_length",
    "entropy",
    "step_time",
)
"""The logged quantities the summary compares, early against late."""


def _cell(rows: list[dict[str, Any]], key: str) -> str:
    # Imported here: ``train``'s parser imports this module, and the summaries import LangGraph.
    from langgraph_parallel.eval.summary import mean_present

    mean = mean_present(rows, key)
    count = sum(r.get(key) is not None for r in rows)
    return "-" if mean is None else f"{mean:.3f} (n={count})"


def curve_summary(rows: list[dict[str, Any]], window: int = 10) -> str:
    """Return the markdown summary of a run's steps: each quantity's mean early and late.

    Also how many steps had any reward spread inside their group (a group whose rollouts all
    score the same gives GRPO no gradient).
    """
    first, last = rows[:window], rows[-window:]
    spread = sum(1 for r in rows if (r.get("reward_std") or 0) > 0)
    lines = [
        f"# GRPO run: {len(rows)} steps, first vs last {window}",
        "",
        f"Steps whose group had any reward spread (a gradient): {spread} of {len(rows)}.",
        "",
        f"| quantity | steps {first[0]['step']}-{first[-1]['step']} "
        f"| steps {last[0]['step']}-{last[-1]['step']} |",
        "|---|---|---|",
    ]
    lines += [f"| {key} | {_cell(first, key)} | {_cell(last, key)} |" for key in SUMMARY_KEYS]
    return "\n".join(lines)


def _cmd_curve(args: argparse.Namespace) -> int:
    rows = read_metrics(args.metrics)
    if not rows:
        raise UserError(f"no training steps in {args.metrics}")
    print(curve_summary(rows, args.window))
    return 0


def add_curve_parser(kinds: Any) -> None:
    """Add ``train curve METRICS [--window N]`` to ``train``'s sub-parsers."""
    parser = kinds.add_parser("curve", help="summarise a GRPO run's metrics.jsonl, early vs late")
    parser.add_argument("metrics", type=Path, help="the run's metrics.jsonl")
    parser.add_argument("--window", type=int, default=10, help="steps at each end")
    parser.set_defaults(func=_cmd_curve)
