"""Training log: one JSON line per logged step, and the reward curve drawn from it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from langgraph_parallel.rewards import COMPONENTS


class MetricsLog(TrainerCallback):
    """Append every trainer log entry (with its step) to a JSONL file, fsynced.

    The entry holds TRL's ``rewards/<component>/mean``, ``reward``, ``loss`` and the
    ``rollout/...`` metrics the reward functions log (decomposition rate by question class,
    search rounds, EM, valid format).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.write_text("")

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        """Write one line for a log event."""
        if not logs:
            return
        with self.path.open("a") as f:
            f.write(json.dumps({"step": state.global_step, **logs}) + "\n")
            f.flush()
            os.fsync(f.fileno())


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Read the per-step entries of a metrics log (the final summary line is skipped)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [r for r in rows if "reward" in r]


def plot_rewards(path: Path, png: Path, window: int = 10) -> None:
    """Draw total reward and each component per step, with a moving average of ``window``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(path)
    if not rows:
        return
    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    series = {"total": [r["reward"] for r in rows]}
    for name in COMPONENTS:
        series[name] = [r.get(f"rewards/{name}/mean", 0.0) for r in rows]
    for name, values in series.items():
        smooth = [_mean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]
        (line,) = ax.plot(steps, smooth, label=f"{name} (mean of {window})")
        ax.plot(steps, values, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("reward")
    ax.set_title("GRPO on ParallelSearch rollouts: reward per step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
