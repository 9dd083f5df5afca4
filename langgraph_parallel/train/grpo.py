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
(:func:`~langgraph_parallel.train.gold_mix.mix_gold`); the logged rollout metrics leave those out.

The same command trains a larger model on a GPU: pass its folder as ``--model``. On a GPU lent
in short windows a run is a chain of pieces (``--time-budget``, ``--resume``:
:mod:`.grpo_chain`) that keeps the adapter of its best dev step (``--dev``: :mod:`.grpo_dev`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.models.folders import folder_raw_prompt, model_folder
from langgraph_parallel.paths import portable_path
from langgraph_parallel.prompts import raw_prompt
from langgraph_parallel.train import log, reward_curve, train_extra
from langgraph_parallel.train.grpo_config import TrainConfig, held_out_ids, training_questions
from langgraph_parallel.train.grpo_rewards import reward_functions
from langgraph_parallel.train.policy import save_model
from langgraph_parallel.train.start import adapter_card, load_policy, save_adapter


def train(config: TrainConfig, *, command: str = "") -> Path:
    """Run GRPO (or one piece of a chained run) and save the policy; returns its folder.

    The folder is the merged ``model/``, or ``adapter/`` with ``merge=False``.

    Raises:
        UserError: The ``train`` extra is missing, or the settings cannot work.
    """
    with train_extra():
        from datasets import Dataset
        from transformers import AutoTokenizer
        from trl import GRPOConfig, GRPOTrainer
    from langgraph_parallel.retrieval.indexes import corpus_index
    from langgraph_parallel.train.device import TrainingDevice
    from langgraph_parallel.train.gold_mix import gold_transcripts
    from langgraph_parallel.train.grpo_chain import (
        ChainCheckpoints,
        plan_piece,
        questions_sha256,
        run_settings,
    )
    from langgraph_parallel.train.grpo_dev import DevEval
    from langgraph_parallel.train.resume import RunRecord
    from langgraph_parallel.train.rollout import GraphRollout

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    questions = training_questions(config)
    sha256 = questions_sha256(questions)
    start = plan_piece(config, sha256)  # refuses a wrong --resume before any loading
    path = model_folder(config.model)
    kind = folder_raw_prompt(path)
    prompts = {raw_prompt(q.question, True, kind): q.question for q in questions}
    gold = {}
    if config.gold_mix:
        gold = gold_transcripts(
            config.dataset_files,
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
    device = TrainingDevice.here()
    model, peft_config = load_policy(config.model, lora=config.lora, dtype=device.dtype)
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
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=config.warmup_steps,
        beta=config.beta,
        temperature=config.temperature,
        save_strategy="no",  # ChainCheckpoints asks for each checkpoint
        **device.trainer_settings(config.seed),
    )
    run = {"command": command, "config": asdict(config), "questions": len(questions)}
    (out / "run.json").write_text(json.dumps(run, indent=2, default=str) + "\n")
    search = corpus_index(config.corpus)
    graph_settings: dict[str, Any] = {
        "max_turns": config.max_turns,
        "max_tokens": config.max_tokens,
        "top_k": config.top_k,
        "raw_prompt": kind,
        "decoding": config.decoding,
    }
    record = RunRecord(sha256, run_settings(config), start.train_s, start.resumed)

    def card(step: int) -> dict[str, Any]:
        made = adapter_card(
            config.model,
            raw_prompt=kind,
            command=command,
            data={
                "files": [portable_path(f) for f in config.dataset_files],
                "pool": len(questions),  # drawn from, shuffled by TRL's sampler
                "questions_seen": step * config.questions_per_step,
            },
            excluded={
                "files": [portable_path(f) for f in (config.exclude, config.dev) if f],
                "ids": sorted(held_out_ids(config)),
            },
        )
        train: dict[str, Any] = device.card()
        train.update(step=step, commit=record.commit, train_s=round(record.elapsed(), 1))
        return {**made, "train": {**train, "resumed": start.resumed}}

    dev = None
    if config.dev:
        dev = DevEval(
            load_questions(config.dev),
            search,
            tokenizer=tokenizer,
            out=out,
            every=config.dev_every,
            card=card,
            graph_settings=graph_settings,
        )
    # The chain decides after each step whether the next fits, counting the dev passes.
    chain = ChainCheckpoints(
        config.time_budget_s, config.save_steps, after=dev.cost if dev is not None else None
    )
    callbacks: list[Any] = [log.MetricsLog(out / "metrics.jsonl"), record, chain]
    if dev is not None:
        callbacks.append(dev)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=list[Any](reward_functions(config.reward)),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=GraphRollout(prompts, search, gold=gold, **graph_settings),
        peft_config=peft_config,
        callbacks=callbacks,
    )
    checkpoint = str(start.checkpoint) if start.checkpoint else None
    trainer.train(resume_from_checkpoint=checkpoint)
    steps = trainer.state.global_step
    # Before the merge below folds the adapter in.
    save_adapter(trainer.model, out / "adapter", card(steps))
    reward_curve.plot_rewards(out / "metrics.jsonl", out / "reward_curve.png")
    if not config.merge:
        return out / "adapter"
    return save_model(trainer.model, tokenizer, out / "model", base=config.model, kind=kind)
