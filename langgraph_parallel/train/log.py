"""Training log: one JSON line per logged step (read back and drawn by :mod:`.reward_curve`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


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
