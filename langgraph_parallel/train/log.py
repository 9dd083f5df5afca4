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

    When training begins the file is rewritten from the trainer state's log history: empty
    for a new run, and for one resumed from a checkpoint exactly the entries up to that
    checkpoint, so the steps an interrupted piece logged after its last checkpoint (which the
    resumed run does again) appear once. TRL's ``num_tokens`` is a counter of the process, not
    of the checkpoint: in a resumed piece it counts from zero again.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start the file over from the log history of the (restored) trainer state."""
        if not state.is_world_process_zero:
            return
        lines = [
            json.dumps({"step": entry["step"], **{k: v for k, v in entry.items() if k != "step"}})
            + "\n"
            for entry in state.log_history
        ]
        self.path.write_text("".join(lines))

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        """Write one line for a log event."""
        if not logs or not state.is_world_process_zero:  # several processes: one writes
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
        smooth = [_mean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]
        (line,) = ax.plot(steps, smooth, label=f"{label} (mean of {window})")
        ax.plot(steps, values, color=line.get_color(), alpha=0.2)
    ax.legend(fontsize=8)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
