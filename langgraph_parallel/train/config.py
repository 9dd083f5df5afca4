"""The settings of ``langgraph-parallel train sft`` (:class:`SFTRunConfig`).

Their own module: synthesis (:mod:`.sft`), training (:mod:`.lora`), the question choice
(:mod:`.questions`) and resuming (:mod:`.resume`) all read them, and none of those needs the
others to do so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import repo_data_dir, shared_data_dir
from langgraph_parallel.train.gold import POLICIES, Policy

__all__ = ["DEFAULT_DATASETS", "SFTRunConfig"]

DEFAULT_DATASETS = ("hotpotqa_dev_distractor_subset.jsonl.gz",)


@dataclass(frozen=True, kw_only=True)
class SFTRunConfig:
    """Settings of ``langgraph-parallel train sft``.

    Attributes:
        datasets: Question files with supporting facts and contexts.
        out: Output folder: ``data.jsonl`` (the trajectories) and one adapter folder per policy.
        policies: Which policies to train (``parallel``, ``sequential``).
        model: Base model: an embedded name or a model folder.
        init: A trained adapter to keep training instead of a fresh LoRA on ``model``: an
            embedded policy (``smollm2-parallel``) or an adapter folder. Its base replaces
            ``model``, its rank ``lora_rank``; one policy, the adapter's own (a curriculum:
            chains after the HotpotQA cold start, on a CPU where retraining from zero is slow).
        per_class: Questions per class (parallelizable, sequential); ``None``: all.
        exclude: Question files whose ids are never trained on (the evaluation sample).
        corpus: Corpus to search; ``None``: the bundled index for HotpotQA, else the rows' own.
        data: A trajectory file of an earlier synthesis (``train sft --synthesize-only``) to
            train on instead of synthesising; ``datasets``, ``per_class``, ``corpus``,
            ``max_turns``, ``top_k`` and ``passage_sentences`` are then the file's (its
            ``data.json``), not these.
        from_samples: ``train sample`` folders of the policy to train on instead of
            synthesising (:mod:`.from_samples`): per question its best right sample
            (rejection-sampling fine-tuning); the run trains from ``init``, by default the
            model the folders sampled.
        yes_no_min_right: With ``from_samples``, keep a question whose gold answer is yes or
            no only when at least this many of its samples are right (1: any right sample;
            :func:`.from_samples.keeps`).
        loss_steps: Which of the model's steps the loss is on: ``all``, or ``last``, the
            reading that gives the answer. On the policy's own samples (``from_samples``)
            the search steps are text it already writes (token accuracy ~0.98); ``last``
            spends the update on the answer the sample got right (``benchmarks/sft/rsft4/``:
            within noise of the shipped policy).
        epochs: Passes over the data.
        learning_rate: Peak AdamW learning rate (cosine decay after the warm-up).
        warmup_steps: Optimizer steps of linear warm-up from 0 (the first one learns nothing).
        batch_size: Sequences per optimizer step.
        micro_batch: Sequences per forward pass (2 was ~1.8x faster per sequence than 8 on a
            2-core CPU; a GPU takes the whole batch).
        lora_rank: LoRA rank (alpha = 2 x rank), on every linear layer.
        lora_layers: Adapt only the last N decoder layers (``None``: all): the backward pass
            stops at the lowest adapted layer (``benchmarks/sft/levers/``).
        max_turns: Model steps of the graph (a plan needing more is skipped).
        top_k: Documents per sub-query, as at inference.
        passage_sentences: Observation budget of the synthesis: each passage shown as its title
            and first N sentences (``None``: whole passages). Recorded in ``data.json`` and in
            the adapters' cards, so the trained policy is shown the same at inference.
        seed: Question sampling and trainer seed.
        save_steps: Optimizer steps between checkpoints (0: none); 10 of the CPU recipe take
            about 11 minutes, the most an interruption loses.
        resume: Continue an interrupted run in ``out`` (:mod:`.resume`).
    """

    datasets: tuple[str, ...] = field(
        default_factory=lambda: tuple(str(shared_data_dir() / d) for d in DEFAULT_DATASETS)
    )
    out: str
    policies: tuple[Policy, ...] = POLICIES
    model: str = "smollm2"
    init: str | None = None
    per_class: int | None = 150
    exclude: tuple[str, ...] = field(
        default_factory=lambda: (str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),)
    )
    corpus: str | None = None
    data: str | None = None
    from_samples: tuple[str, ...] = ()
    yes_no_min_right: int = 1
    loss_steps: Literal["all", "last"] = "all"
    epochs: float = 1.0
    learning_rate: float = 5e-4
    warmup_steps: int = 3
    batch_size: int = 8
    micro_batch: int = 2
    lora_rank: int = 16
    lora_layers: int | None = None
    max_turns: int = 4
    top_k: int = 3
    passage_sentences: int | None = None
    seed: int = 0
    save_steps: int = 10
    resume: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.policies) - set(POLICIES)
        if unknown or not self.policies:
            raise UserError(f"--policies takes {', '.join(POLICIES)} (got {sorted(unknown)}).")
        if self.batch_size % self.micro_batch:
            raise UserError("--batch-size must be a multiple of --micro-batch.")
        if self.lora_layers is not None and self.lora_layers < 1:
            raise UserError("--lora-layers takes a number of top layers >= 1 (omit it for all).")
        if self.save_steps < 0:
            raise UserError("--save-steps takes a number of optimizer steps, or 0 for none.")
        if self.from_samples and (self.data or len(self.policies) != 1):
            raise UserError(
                "--from-samples trains one policy on its own samples: give one --policies "
                "(the policy the folders sampled) and no --data."
            )
        if self.yes_no_min_right < 1:
            raise UserError("--yes-no-min-right takes a number of right samples >= 1.")
        if self.yes_no_min_right > 1 and not self.from_samples:
            raise UserError(
                "--yes-no-min-right chooses among the policy's own samples: add "
                "--from-samples FOLDER, or drop it."
            )
        if self.loss_steps not in ("all", "last"):
            raise UserError(f"--loss-steps takes all or last (got {self.loss_steps!r}).")
        if self.passage_sentences is not None and self.passage_sentences < 1:
            raise UserError("--passage-sentences must be at least 1 (omit it for whole passages).")
