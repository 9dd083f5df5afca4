"""A GRPO run as a chain of time-limited pieces: checkpoints at a time budget, resumed by the next.

A lent GPU comes in commands of at most 10 minutes, so ``train grpo --time-budget S`` ends its
piece after about ``S`` seconds of training with a checkpoint under ``OUT/trainer/`` (the LoRA
adapter, optimizer, scheduler, RNG states and trainer state: transformers' own checkpoint), and
``--resume`` hands the newest to ``Trainer.train(resume_from_checkpoint=...)`` in the next piece.
The checkpoint's :class:`~.resume.RunRecord` (shared with ``train sft``) records the training
questions' hash and the settings that shape a step; a checkpoint of other questions or settings
is refused with the fix named, and the record's wall time sums the pieces.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.train.grpo_config import TrainConfig
from langgraph_parallel.train.resume import Start, last_checkpoint, resume_from

__all__ = ["RESUME_KEYS", "ChainCheckpoints", "plan_piece", "questions_sha256", "run_settings"]

RESUME_KEYS = (
    "model",
    "steps",
    "questions_per_step",
    "group_size",
    "micro_batch",
    "learning_rate",
    "warmup_steps",
    "lora",
    "beta",
    "temperature",
    "max_turns",
    "max_tokens",
    "top_k",
    "seed",
    "reward",
    "gold_mix",
)
"""Settings a resumed piece must share with the run it continues (they shape every step)."""


def run_settings(config: TrainConfig) -> dict[str, Any]:
    """Return the settings a checkpoint must agree with (JSON values)."""
    settings = {key: getattr(config, key) for key in RESUME_KEYS}
    return {**settings, "reward": asdict(config.reward)}


def questions_sha256(questions: list[Question]) -> str:
    """SHA-256 of the training questions' ids in training order (what the sampler draws from)."""
    return hashlib.sha256("\n".join(q.id for q in questions).encode()).hexdigest()


def plan_piece(config: TrainConfig, sha256: str) -> Start:
    """Where this piece starts: the newest checkpoint with ``--resume``, else from the start.

    Raises:
        UserError: A fresh run over an unfinished one's checkpoints, or a checkpoint of other
            questions or settings, each naming the fix.
    """
    trainer_dir = Path(config.out) / "trainer"
    checkpoint = last_checkpoint(trainer_dir)
    restart = f"delete {trainer_dir} to start again"
    if not config.resume:
        if checkpoint is not None:
            raise UserError(
                f"{checkpoint} is a checkpoint of an unfinished run: add --resume to continue "
                f"it, or {restart}."
            )
        return Start()
    if checkpoint is None:
        return Start()
    return resume_from(
        checkpoint,
        sha256=sha256,
        settings=run_settings(config),
        made_by="train grpo",
        other_data="other questions (sha256 {theirs}, these {ours}): repeat --dataset, "
        f"--exclude, --dev, --limit and --seed of the run it continues, or {restart}",
    )


class ChainCheckpoints(TrainerCallback):
    """Save a checkpoint every ``save_steps``, at the last step, and when the budget is spent.

    The budget check runs after each step: the piece ends when the next step, judged by the
    longest so far, would end past ``budget_s`` seconds of training, counting what the
    callbacks after this one still spend at the step (``after``: the dev pass).

    Args:
        budget_s: Seconds of training this piece may take (``None``: no limit).
        save_steps: Steps between checkpoints (0: none but the last and the budget's).
        after: Step -> seconds the later callbacks will take at its end (default: none).
    """

    def __init__(
        self,
        budget_s: float | None,
        save_steps: int = 0,
        after: Callable[[int], float] | None = None,
    ) -> None:
        self.budget_s, self.save_steps = budget_s, save_steps
        self.after = after or (lambda step: 0.0)
        # The piece's clock starts here, so the trainer's set-up and the dev pass before the
        # first step count against the budget.
        self.began = self.last = time.monotonic()
        self.longest = 0.0
        self.steps = 0
        self.stopped_by_budget = False

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start the step's clock: a step's time is its own, not the dev pass before it."""
        self.last = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """Ask for a checkpoint where one is due; stop the piece when the budget is spent."""
        now = time.monotonic()
        self.longest = max(self.longest, now - self.last)
        self.steps += 1
        if self.save_steps and state.global_step % self.save_steps == 0:
            control.should_save = True
        if state.global_step >= state.max_steps:
            control.should_save = True
            return control
        step = state.global_step
        # This step's dev pass (still to run), then the next step with its own.
        ends = now - self.began + self.after(step) + self.longest + self.after(step + 1)
        if self.budget_s is not None and ends > self.budget_s:
            control.should_save = True
            control.should_training_stop = True
            self.stopped_by_budget = True
        return control
