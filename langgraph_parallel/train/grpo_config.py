"""The settings of ``langgraph-parallel train grpo`` and the questions a run trains on.

Their own module, as :mod:`.config` is for ``train sft``: the trainer (:mod:`.grpo`), the chain
of time-limited pieces (:mod:`.grpo_chain`) and the dev evaluation (:mod:`.grpo_dev`) read them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question, load_questions
from langgraph_parallel.rewards import RewardConfig
from langgraph_parallel.train.questions import names_readme_entity

if TYPE_CHECKING:  # the policy module imports LangChain, which the CLI's parser must not
    from langgraph_parallel.train.policy import Decoding

__all__ = ["TrainConfig", "held_out_ids", "training_questions"]


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Settings of one GRPO run (CLI: ``langgraph-parallel train``).

    Attributes:
        dataset: Training questions (normalised ``.jsonl(.gz)``), or several such files.
        out: Output folder: ``model/``, ``metrics.jsonl``, ``reward_curve.png``, ``run.json``.
        model: Starting policy: an embedded name (``smollm2-parallel`` by default), a model
            folder or an adapter folder from ``train sft``.
        steps: Optimizer steps.
        questions_per_step: Distinct questions per step.
        group_size: Rollouts per question (GRPO group; at least 2, 4+ recommended).
        micro_batch: Rollouts per loss forward and backward (``None``: a step's all). The
            rollouts still decode as one batch; fewer per forward bounds the memory of the
            vocabulary-wide logits of long transcripts (a 4-rollout step of the SFT policy
            peaked at ~20 GB on a CPU, enough to be killed beside a benchmark).
        learning_rate: AdamW learning rate.
        lora: Train a LoRA adapter: the start's own adapter when it has one (an SFT policy),
            else a new rank-16 one. Written to ``adapter/`` and merged into ``model/``.
        beta: KL coefficient to the starting model (0 = no reference model).
        temperature: Sampling temperature of the rollouts.
        max_turns: Model steps per rollout.
        max_tokens: Token limit of one step.
        top_k: Documents per sub-query.
        limit: Use this many questions of ``dataset`` (after shuffling with ``seed``).
        balanced: Keep as many sequential as parallelizable questions (the first run drew 43
            bridge questions of 50 and learned to search more instead of to decompose).
        exclude: A question file whose ids are held out (e.g. the evaluation sample).
        corpus: Corpus for the closed-corpus search (default: the bundled HotpotQA index).
        seed: Question shuffle and trainer seed.
        reward: Reward coefficients.
        gold_mix: Mix a parallelizable question's gold trajectory into its group when no
            rollout decomposed (needs gold plans in ``dataset`` and a ``rules``-prompt policy).
        warmup_steps: Optimizer steps of linear warm-up; the learning rate is constant after
            (a chain of pieces needs no end of schedule).
        dev: A question file held out from training and answered greedily every
            ``dev_every`` steps (and before the first); the adapter of the best step so far
            is written to ``OUT/best/`` (:mod:`.grpo_dev`).
        dev_every: Steps between dev evaluations.
        save_steps: Steps between checkpoints under ``OUT/trainer/`` (0: only when the time
            budget ends the piece, and at the last step).
        time_budget_s: End this piece after about this many seconds of training, with a
            checkpoint, so a run fits a command of limited length (:mod:`.grpo_chain`).
        resume: Continue from the newest checkpoint in ``OUT/trainer/``.
        merge: Also write the merged model folder ``OUT/model/`` (540 MB for SmolLM2).
        decoding: How rollouts decode (:data:`~.policy.Decoding`; dev passes decode ``plain``); a
            speed setting, so a resumed piece may change it.
    """

    dataset: str | tuple[str, ...]
    out: str
    model: str = "smollm2-parallel"
    steps: int = 50
    questions_per_step: int = 1
    group_size: int = 4
    micro_batch: int | None = None
    learning_rate: float = 5e-6
    lora: bool = False
    beta: float = 0.0
    # At 1.0 SmolLM2's steps were all malformed in a smoke run: every reward 0, no gradient.
    temperature: float = 0.7
    max_turns: int = 3
    max_tokens: int = 96
    top_k: int = 2
    limit: int | None = None
    balanced: bool = True
    exclude: str | None = None
    corpus: str | None = None
    seed: int = 0
    reward: RewardConfig = field(default_factory=RewardConfig)
    gold_mix: bool = False
    warmup_steps: int = 0
    dev: str | None = None
    dev_every: int = 10
    save_steps: int = 0
    time_budget_s: float | None = None
    resume: bool = False
    merge: bool = True
    decoding: Decoding = "plain"

    @property
    def dataset_files(self) -> tuple[str, ...]:
        """The training question files (``dataset`` as a tuple)."""
        return (self.dataset,) if isinstance(self.dataset, str) else tuple(self.dataset)

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise UserError("--group-size must be at least 2: GRPO compares rollouts of a group.")
        rollouts = self.questions_per_step * self.group_size
        if self.micro_batch is not None and (self.micro_batch < 1 or rollouts % self.micro_batch):
            raise UserError(
                f"--micro-batch must divide the {rollouts} rollouts of a step "
                "(--questions-per-step x --group-size)."
            )
        if self.steps < 1 or self.questions_per_step < 1:
            raise UserError("--steps and --questions-per-step must be at least 1.")
        if self.dev_every < 1 or self.save_steps < 0 or self.warmup_steps < 0:
            raise UserError("--dev-every must be at least 1; --save-steps, --warmup-steps >= 0.")


def training_questions(config: TrainConfig) -> list[Question]:
    """Questions of ``config.dataset`` minus held-out ones, shuffled, balanced and limited.

    Held out: the ``exclude`` and ``dev`` files' ids, and every question about the README
    question's people (:data:`~.questions.README_ENTITIES`), as in ``train sft``. Several files
    are pooled, then shuffled together (one file keeps its own shuffled order).
    """
    held_out = held_out_ids(config)
    files = config.dataset_files
    pooled = [q for path in files for q in load_questions(path, seed=config.seed)]
    if len(files) > 1:
        random.Random(config.seed).shuffle(pooled)
    questions = [
        q
        for q in pooled
        if q.id not in held_out and not names_readme_entity(q.question, *q.supporting_titles)
    ]
    if config.balanced:
        questions = _balanced(questions)
    questions = questions[: config.limit] if config.limit else questions
    if not questions:
        raise UserError(f"no training questions left in {', '.join(files)} after --exclude.")
    return questions


def held_out_ids(config: TrainConfig) -> set[str]:
    """Ids of the questions in ``config.exclude`` and ``config.dev`` (none without them)."""
    files = [f for f in (config.exclude, config.dev) if f]
    return {q.id for path in files for q in load_questions(path)}


def _balanced(questions: list[Question]) -> list[Question]:
    """Alternate parallelizable and sequential questions, as many of each as the rarer has."""
    parallel = [q for q in questions if q.question_class == "parallelizable"]
    sequential = [q for q in questions if q.question_class == "sequential"]
    return [q for pair in zip(parallel, sequential, strict=False) for q in pair]
