"""Cold-start SFT: LoRA on synthetic trajectories of our own graph (``train sft``).

``sft(SFTRunConfig(...))`` reads gold plans (:mod:`.gold`) from benchmark files, drops every
question of the held-out evaluation sample, picks the same number of parallelizable and
sequential questions, synthesises a ``parallel`` and a ``sequential`` trajectory for each by
running the real graph on a scripted teacher (:mod:`.synth`), keeps the questions both policies
kept, and trains one LoRA adapter per policy with TRL's ``SFTTrainer`` (loss only on the model's
steps: the dataset is pre-tokenized with a ``completion_mask``). Both policies see the same
questions (also when ``--policies`` trains one of them now and the other later), so
ParallelSearch-vs-Search-R1 compares equally trained models, as in the paper.

An adapter folder holds float16 weights, ``adapter_config.json`` and the card (base model,
command, data files and counts, excluded ids, settings, log); ``ask --model FOLDER`` merges it.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import ADAPTER_CARD_KEYS, write_adapter
from langgraph_parallel.paths import portable_path, repo_data_dir, shared_data_dir
from langgraph_parallel.train.gold import POLICIES, GoldQuestion, Policy, gold_questions, read_rows

DEFAULT_DATASETS = ("hotpotqa_dev_distractor_subset.jsonl.gz",)


@dataclass(frozen=True, kw_only=True)
class SFTRunConfig:
    """Settings of ``langgraph-parallel train sft``.

    Attributes:
        datasets: Question files with supporting facts and contexts.
        out: Output folder: ``data.jsonl`` (the trajectories) and one adapter folder per policy.
        policies: Which policies to train (``parallel``, ``sequential``).
        model: Base model: an embedded name or a model folder.
        per_class: Questions per class (parallelizable, sequential); ``None``: all.
        exclude: Question files whose ids are never trained on (the evaluation sample).
        corpus: Corpus to search; ``None``: the bundled index for HotpotQA, else the rows' own.
        epochs: Passes over the data.
        learning_rate: Peak AdamW learning rate (cosine decay after the warm-up).
        warmup_steps: Optimizer steps of linear warm-up from 0 (the first one learns nothing).
        batch_size: Sequences per optimizer step.
        micro_batch: Sequences per forward pass (2 was ~1.8x faster per sequence than 8 on a
            2-core CPU; a GPU takes the whole batch).
        lora_rank: LoRA rank (alpha = 2 x rank), on every linear layer.
        max_turns: Model steps of the graph (a plan needing more is skipped).
        top_k: Documents per sub-query, as at inference.
        seed: Question sampling and trainer seed.
    """

    datasets: tuple[str, ...] = field(
        default_factory=lambda: tuple(str(shared_data_dir() / d) for d in DEFAULT_DATASETS)
    )
    out: str
    policies: tuple[Policy, ...] = POLICIES
    model: str = "smollm2"
    per_class: int | None = 150
    exclude: tuple[str, ...] = field(
        default_factory=lambda: (str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),)
    )
    corpus: str | None = None
    epochs: float = 1.0
    learning_rate: float = 5e-4
    warmup_steps: int = 3
    batch_size: int = 8
    micro_batch: int = 2
    lora_rank: int = 16
    max_turns: int = 4
    top_k: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        unknown = set(self.policies) - set(POLICIES)
        if unknown or not self.policies:
            raise UserError(f"--policies takes {', '.join(POLICIES)} (got {sorted(unknown)}).")
        if self.batch_size % self.micro_batch:
            raise UserError("--batch-size must be a multiple of --micro-batch.")


def excluded_ids(paths: tuple[str, ...]) -> list[str]:
    """Ids of every question in the held-out files (sorted, for the card)."""
    return sorted({str(row["id"]) for path in paths for row in read_rows(path)})


def pick_questions(config: SFTRunConfig) -> list[GoldQuestion]:
    """Gold questions minus the excluded ids, ``per_class`` of each class, shuffled."""
    held_out = set(excluded_ids(config.exclude))
    golds = [g for path in config.datasets for g in gold_questions(path) if g.id not in held_out]
    random.Random(config.seed).shuffle(golds)
    by_class: dict[str, list[GoldQuestion]] = {}
    for gold in golds:
        by_class.setdefault(gold.question_class, []).append(gold)
    picked = [g for rows in by_class.values() for g in rows[: config.per_class]]
    if not picked:
        raise UserError(f"no usable training question in {', '.join(config.datasets)}.")
    return picked


def synthesize_all(config: SFTRunConfig, golds: list[GoldQuestion]) -> list[dict[str, Any]]:
    """Trajectories of the chosen policies for the questions that *every* policy kept."""
    from langgraph_parallel.train.synth import MemoSearcher, synthesize

    search = MemoSearcher(searcher_for(config, golds))
    kept = {
        policy: synthesize(golds, policy, search, max_turns=config.max_turns, top_k=config.top_k)
        for policy in POLICIES
    }
    common = set.intersection(*({r["id"] for r in records} for records in kept.values()))
    return [r for policy in config.policies for r in kept[policy] if r["id"] in common]


def searcher_for(config: SFTRunConfig, golds: list[GoldQuestion]) -> Any:
    """Open the bundled index for HotpotQA; else an index of the questions' own paragraphs."""
    from langgraph_parallel.retrieval.indexes import corpus_index

    if config.corpus or all(g.dataset == "hotpotqa" for g in golds):
        return corpus_index(config.corpus)
    from langgraph_parallel.train.contexts import context_corpus

    return corpus_index(str(context_corpus(g.context for g in golds)))


def sft(config: SFTRunConfig, *, command: str = "") -> dict[str, Path]:
    """Synthesise, then train one adapter per policy; returns policy -> adapter folder."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    records = synthesize_all(config, pick_questions(config))
    if not records:
        raise UserError("no trajectory survived synthesis (see train/synth.py for the filters).")
    with (out / "data.jsonl").open("w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    synth_s = time.time() - started
    folders: dict[str, Path] = {}
    for policy in config.policies:
        rows = [r for r in records if r["policy"] == policy]
        folders[policy] = train_policy(config, policy, rows, out / policy, command, synth_s)
    return folders


def train_policy(
    config: SFTRunConfig,
    policy: Policy,
    records: list[dict[str, Any]],
    folder: Path,
    command: str,
    synth_s: float,
) -> Path:
    """Train one LoRA adapter on ``records`` and write it with its card into ``folder``."""
    try:
        import torch
        from datasets import Dataset
        from peft import LoraConfig
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UserError(f"training needs: pip install 'langgraph-parallel[train]' ({exc})") from exc
    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.log import MetricsLog
    from langgraph_parallel.train.synth import encode_transcript

    base = model_folder(config.model)
    tokenizer = AutoTokenizer.from_pretrained(base)
    rows = []
    for record in records:
        ids, mask = encode_transcript(record["messages"], tokenizer)
        rows.append({"input_ids": ids, "completion_mask": mask})
    gpu = torch.cuda.is_available()
    bf16 = gpu and torch.cuda.is_bf16_supported()
    model = AutoModelForCausalLM.from_pretrained(
        base, dtype=torch.bfloat16 if bf16 else torch.float32
    )
    micro = config.batch_size if gpu else config.micro_batch
    args = SFTConfig(
        output_dir=str(folder / "trainer"),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=config.batch_size // micro,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=config.warmup_steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=config.seed,
        use_cpu=not gpu,
        bf16=bf16,
        completion_only_loss=True,
        max_length=None,
        # TRL turns checkpointing on by default; on a CPU its recompute tripled the step time.
        gradient_checkpointing=gpu,
    )
    lora = LoraConfig(
        r=config.lora_rank,
        lora_alpha=2 * config.lora_rank,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    folder.mkdir(parents=True, exist_ok=True)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[MetricsLog(folder / "metrics.jsonl")],
    )
    started = time.time()
    trainer.train()
    classes: dict[str, int] = {}
    for record in records:
        classes[record["question_class"]] = classes.get(record["question_class"], 0) + 1
    card = {
        "base_model": config.model,
        "policy": policy,
        "prompt_style": "raw",
        "raw_prompt": "rules",
        "method": "LoRA SFT on synthetic trajectories of the real graph (scripted gold teacher)",
        "command": command,
        "data": {
            "files": [portable_path(f) for f in config.datasets],
            "trajectories": len(records),
            "by_class": classes,
            "tokens": sum(len(r["input_ids"]) for r in rows),
            "loss_tokens": sum(sum(r["completion_mask"]) for r in rows),
        },
        "excluded": {
            "files": [portable_path(f) for f in config.exclude],
            "ids": excluded_ids(config.exclude),
        },
        "config": {
            k: v for k, v in asdict(config).items() if k not in ("out", "exclude", "datasets")
        },
        "train": {
            "device": "cuda" if gpu else "cpu",
            "synthesis_s": round(synth_s, 1),
            "train_s": round(time.time() - started, 1),
            "optimizer_steps": trainer.state.global_step,
        },
    }
    assert set(ADAPTER_CARD_KEYS) <= set(card)
    return write_adapter(trainer.model, folder, card)
