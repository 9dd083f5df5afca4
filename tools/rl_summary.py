"""Summarise a GRPO run's metrics.jsonl: reward components and rollout behaviour, early vs late.

Usage:
    .venv/bin/python tools/rl_summary.py runs/rl/metrics.jsonl --window 10 > benchmarks/rl/curve.md

Prints a markdown table of the mean of each logged quantity over the first and the last
``--window`` steps, and how many steps had any reward spread inside their group (a group whose
rollouts all score the same gives GRPO no gradient).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_parallel.train.log import read_metrics  # noqa: E402

KEYS = (
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


def mean_of(rows: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return f"{sum(values) / len(values):.3f} (n={len(values)})" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics", type=Path)
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args()
    rows = read_metrics(args.metrics)
    if not rows:
        sys.exit(f"error: no training steps in {args.metrics}")
    first, last = rows[: args.window], rows[-args.window :]
    spread = sum(1 for r in rows if (r.get("reward_std") or 0) > 0)
    print(f"# GRPO run: {len(rows)} steps, first vs last {args.window}\n")
    print(f"Steps whose group had any reward spread (a gradient): {spread} of {len(rows)}.\n")
    late = f"steps {last[0]['step']}-{last[-1]['step']}"
    print(f"| quantity | steps {first[0]['step']}-{first[-1]['step']} | {late} |")
    print("|---|---|---|")
    for key in KEYS:
        print(f"| {key} | {mean_of(first, key)} | {mean_of(last, key)} |")


if __name__ == "__main__":
    main()
