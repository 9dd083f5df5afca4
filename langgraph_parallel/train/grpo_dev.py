"""The dev evaluation of a GRPO run: greedy answers on held-out questions, the best step kept.

RL policies can get worse while the reward still climbs (Search-R1 runs collapse), so the
adapter to ship is the one of the step that answers a held-out dev split best, not the last.
Before the first step, every ``dev_every`` steps and at the run's last step the policy answers
the dev questions greedily through the same graph as the rollouts; each evaluation is a line of
``OUT/dev.jsonl`` and, when its EM beats every earlier one (a tie keeps the earlier), the
adapter is written to ``OUT/best/`` with the step and EM in its card. A resumed piece reads the
earlier lines first.

The greedy pass did not repeat itself exactly on a GPU: at the first H100 piece's step 1,
whose learning rate was 0 (unchanged weights), it scored 15/64 against 14/64 before the step,
presumably from batched bfloat16 numerics. A difference of a question or two is noise.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.rewards import score_steps
from langgraph_parallel.train.policy import PolicyChatModel
from langgraph_parallel.train.rollout import run_rollouts
from langgraph_parallel.train.start import save_adapter

__all__ = ["DEV_LOG", "DevEval"]

DEV_LOG = "dev.jsonl"


class DevEval(TrainerCallback):
    """Evaluate on the dev questions before training and every ``every`` steps; keep the best.

    Args:
        questions: The dev questions (held out from training).
        search: The searcher the rollouts use.
        tokenizer: The policy's tokenizer.
        out: The run's output folder (``dev.jsonl``, ``best/``).
        every: Steps between evaluations.
        card: Returns the adapter card for a step (the evaluation is added to it).
        graph_settings: ``max_turns``, ``max_tokens``, ``top_k`` and ``raw_prompt`` of the
            rollouts (their ``decoding`` is not used: the dev pass decodes unmerged).
    """

    def __init__(
        self,
        questions: list[Question],
        search: Any,
        *,
        tokenizer: Any,
        out: Path,
        every: int,
        card: Callable[[int], dict[str, Any]],
        graph_settings: dict[str, Any],
    ) -> None:
        self.questions, self.search, self.tokenizer = questions, search, tokenizer
        self.out, self.every, self.card = Path(out), every, card
        self.settings = dict(graph_settings)
        self.best: float | None = None
        self.done: set[int] = set()
        self.seconds = 0.0
        """How long the last evaluation took (0 before the first)."""

    def cost(self, step: int) -> float:
        """Seconds this callback will spend at the end of ``step`` (a dev pass, or none)."""
        return self.seconds if step % self.every == 0 and step not in self.done else 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Read an earlier piece's evaluations; evaluate the starting policy on a fresh run."""
        log = self.out / DEV_LOG
        rows = read_rows(log, what="dev log") if log.is_file() else []
        # A resumed piece redoes the steps after its checkpoint: their lines go.
        rows = [r for r in rows if r["step"] <= state.global_step]
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
        self.done = {int(r["step"]) for r in rows}
        self.best = max((float(r["em"]) for r in rows), default=None)
        self.seconds = float(rows[-1].get("seconds", 0.0)) if rows else 0.0
        if state.global_step not in self.done:
            self.evaluate(kwargs["model"], state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Evaluate every ``every`` steps."""
        if state.global_step % self.every == 0:
            self.evaluate(kwargs["model"], state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Evaluate the run's last step if it was not (a piece cut by its budget is not).

        A dev pass of 64 questions took 72-107 s on an H100, close to a step's time: a piece
        of a chain that ended on its budget leaves its last step to the evaluation every
        ``every`` steps of the pieces after it.
        """
        if state.global_step >= state.max_steps and state.global_step not in self.done:
            self.evaluate(kwargs["model"], state.global_step)

    def evaluate(self, model: Any, step: int) -> dict[str, Any]:
        """Answer the dev questions greedily; log the result and keep the adapter if best."""
        began = time.monotonic()
        policy = getattr(model, "module", model)
        chat = PolicyChatModel(
            policy=policy,
            tokenizer=self.tokenizer,
            temperature=0.0,
            max_tokens=self.settings["max_tokens"],
            raw_prompt=self.settings["raw_prompt"],
            # Unmerged whatever the rollouts use: merging LoRA into bfloat16 weights rounds
            # away part of it (17% of the shipped adapter's update, relative), and the dev
            # figures must compare across pieces, windows and machines.
            decoding="plain",
        )
        graph = create_parallel_search_graph(
            chat,
            self.search,
            max_turns=self.settings["max_turns"],
            max_tokens=self.settings["max_tokens"],
            top_k=self.settings["top_k"],
            prompt_style="raw",
            constrain=False,
        )
        states = run_rollouts(graph, chat, [q.question for q in self.questions])
        row: dict[str, Any] = {"step": step, "n": len(self.questions)}
        scored = [
            (
                q.question_class,
                score_steps(
                    [str(m.content) for m in s["transcript"][1:] if m.type == "ai"],
                    q.answers,
                    q.question_class,
                ),
            )
            for q, s in zip(self.questions, states, strict=True)
        ]
        row["em"] = sum(r.correct for _, r in scored) / max(1, len(scored))
        for qclass in sorted({c for c, _ in scored}):
            rows = [r for c, r in scored if c == qclass]
            row[f"em/{qclass}"] = sum(r.correct for r in rows) / len(rows)
            row[f"decomposed/{qclass}"] = sum(bool(r.decomposed) for r in rows) / len(rows)
        self.seconds = time.monotonic() - began
        row["seconds"] = round(self.seconds, 1)
        if self.best is None or row["em"] > self.best:
            self.best = row["em"]
            card = {**self.card(step), "dev": {k: row[k] for k in ("step", "n", "em")}}
            save_adapter(policy, self.out / "best", card)
            row["best"] = True
        with (self.out / DEV_LOG).open("a") as f:
            f.write(json.dumps(row) + "\n")
        self.done.add(step)
        return row
