"""GRPO training of the ParallelSearch behaviour with TRL's ``GRPOTrainer`` on our own rollouts.

``train(TrainConfig(...))`` draws questions, runs each ``group_size`` times through the
ParallelSearch graph on the current policy (:class:`~langgraph_parallel.train.rollout.
GraphRollout`), scores every rollout with the four-part reward of :mod:`langgraph_parallel.
rewards` (one TRL reward function per component, summed with weight 1) and lets TRL take a
policy-gradient step with group-normalised advantages. Retrieved tokens are masked out of the
loss (``env_mask``). The result is a model folder that ``ask --model DIR`` and ``bench --model
DIR`` load, plus ``metrics.jsonl`` and ``reward_curve.png``.

The usual start is an SFT policy (``--model smollm2-parallel`` or an adapter folder from ``train
sft``): from the untrained base no rollout ever decomposed, so the decomposition term never
fired. The rollouts then use the prompt the policy's card names (the short ``rules`` prompt).
Questions are balanced between parallelizable and sequential by default, and the
decomposition and search-count terms pay only with a valid answer (``require_answer``).
``--gold-mix`` puts a question's gold trajectory into a group where no rollout decomposed
(:func:`~langgraph_parallel.train.rollout.mix_gold`); the logged rollout metrics leave those out.

The same command trains a larger model on a GPU: pass its folder as ``--model``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question, load_questions
from langgraph_parallel.models.folders import folder_raw_prompt, model_folder
from langgraph_parallel.paths import portable_path
from langgraph_parallel.prompts import raw_prompt
from langgraph_parallel.rewards import RewardConfig
from langgraph_parallel.train import log, reward_curve
from langgraph_parallel.train.grpo_rewards import reward_functions
from langgraph_parallel.train.policy import save_model
from langgraph_parallel.train.start import adapter_card, load_policy, save_adapter


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Settings of one GRPO run (CLI: ``langgraph-parallel train``).

    Attributes:
        dataset: Training questions (normalised ``.jsonl(.gz)``).
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
    """

    dataset: str
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


def training_questions(config: TrainConfig) -> list[Question]:
    """Questions of ``config.dataset`` minus those in ``config.exclude``, shuffled and limited."""
    held_out = held_out_ids(config)
    questions = [
        q for q in load_questions(config.dataset, seed=config.seed) if q.id not in held_out
    ]
    if config.balanced:
        questions = _balanced(questions)
    questions = questions[: config.limit] if config.limit else questions
    if not questions:
        raise UserError(f"no training questions left in {config.dataset} after --exclude.")
    return questions


def held_out_ids(config: TrainConfig) -> set[str]:
    """Ids of the questions in ``config.exclude`` (none without it)."""
    return {q.id for q in load_questions(config.exclude)} if config.exclude else set()


def _balanced(questions: list[Question]) -> list[Question]:
    """Alternate parallelizable and sequential questions, as many of each as the rarer has."""
    parallel = [q for q in questions if q.question_class == "parallelizable"]
    sequential = [q for q in questions if q.question_class == "sequential"]
    return [q for pair in zip(parallel, sequential, strict=False) for q in pair]


def train(config: TrainConfig, *, command: str = "") -> Path:
    """Run GRPO and save the trained model; returns the model folder.

    Raises:
        UserError: The ``train`` extra is missing, or the settings cannot work.
    """
    try:
        import torch
        from datasets import Dataset
        from transformers import AutoTokenizer
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UserError(
            f"training needs the train extra: pip install 'langgraph-parallel[train]' ({exc})"
        ) from exc
    from langgraph_parallel.retrieval.indexes import corpus_index
    from langgraph_parallel.train.gold_mix import gold_transcripts
    from langgraph_parallel.train.rollout import GraphRollout

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    questions = training_questions(config)
    path = model_folder(config.model)
    kind = folder_raw_prompt(path)
    prompts = {raw_prompt(q.question, True, kind): q.question for q in questions}
    gold = {}
    if config.gold_mix:
        gold = gold_transcripts(
            config.dataset,
            [q.question for q in questions if q.question_class == "parallelizable"],
            set(prompts),
            kind,
            corpus=config.corpus,
            max_turns=config.max_turns,
            top_k=config.top_k,
        )
    dataset = Dataset.from_list(
        [
            {
                "prompt": raw_prompt(q.question, True, kind),
                "answers": list(q.answers),
                "question_class": q.question_class,
            }
            for q in questions
        ]
    )
    tokenizer = AutoTokenizer.from_pretrained(path)
    gpu = torch.cuda.is_available()
    bf16 = gpu and torch.cuda.is_bf16_supported()
    model, peft_config = load_policy(
        config.model, lora=config.lora, dtype=torch.bfloat16 if bf16 else torch.float32
    )
    rollouts = config.questions_per_step * config.group_size
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        max_steps=config.steps,
        # One generation batch (every rollout of a step) per optimizer step, its loss taken in
        # micro-batches: TRL's generation_batch_size = micro_batch x accumulation steps.
        per_device_train_batch_size=config.micro_batch or rollouts,
        gradient_accumulation_steps=rollouts // (config.micro_batch or rollouts),
        num_generations=config.group_size,
        learning_rate=config.learning_rate,
        beta=config.beta,
        temperature=config.temperature,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=config.seed,
        use_cpu=not gpu,
        bf16=bf16,
        # Saves memory for a large model on a GPU; on a CPU the recompute only costs time.
        # Rollouts switch it off while they generate either way (policy.generation_mode).
        gradient_checkpointing=gpu,
    )
    run = {"command": command, "config": asdict(config), "questions": len(questions)}
    (out / "run.json").write_text(json.dumps(run, indent=2, default=str) + "\n")
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=list[Any](reward_functions(config.reward)),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=GraphRollout(
            prompts,
            corpus_index(config.corpus),
            max_turns=config.max_turns,
            max_tokens=config.max_tokens,
            top_k=config.top_k,
            raw_prompt=kind,
            gold=gold,
        ),
        peft_config=peft_config,
        callbacks=[log.MetricsLog(out / "metrics.jsonl")],
    )
    trainer.train()
    card = adapter_card(
        config.model,
        raw_prompt=kind,
        command=command,
        data={
            "files": [portable_path(config.dataset)],
            "pool": len(questions),  # drawn from, shuffled by TRL's sampler
            "questions_seen": config.steps * config.questions_per_step,
        },
        excluded={
            "files": [portable_path(config.exclude)] if config.exclude else [],
            "ids": sorted(held_out_ids(config)),
        },
    )
    save_adapter(trainer.model, out / "adapter", card)  # before the merge below folds it in
    saved = save_model(trainer.model, tokenizer, out / "model", base=config.model, kind=kind)
    reward_curve.plot_rewards(out / "metrics.jsonl", out / "reward_curve.png")
    return saved
