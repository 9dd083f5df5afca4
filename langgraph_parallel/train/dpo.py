"""Preference optimisation on the policy's own samples (``train dpo``): TRL's DPO on the LoRA.

SFT on the right samples teaches the form of what the policy did right; a preference pair of
the same question (the best right sample against a wrong one, :func:`.from_samples.preference_pair`)
also teaches which of two answers to give. Written on TRL's ``DPOTrainer``: the policy's own
adapter trains, and TRL copies it as the frozen reference (a ``ref`` adapter), so the implicit
reward is measured against the policy that was sampled, not against the untrained base.

What is ours, and why:

- **The pair as text.** Both samples begin with the same prompt (the rules and the question) and
  often the same first steps; the pair's prompt is their common leading messages, chosen and
  rejected the rest (:func:`pair_row`).
- **Only the model's tokens count** (:class:`ModelTokenCollator`). The rest of a trajectory is
  retrieved passages, which differ between the two samples; TRL's collator counts every token
  after the prompt, which would reward the policy for the likelihood of passages it never wrote.
  The collator keeps TRL's batching and zeroes the completion mask outside the model's steps.
- **Resumable** as ``train sft``: checkpoints every ``save_steps`` with the run's record
  (:class:`~.resume.RunRecord`), a finished adapter's card marks it done.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import portable_path
from langgraph_parallel.train import train_extra
from langgraph_parallel.train.gold import POLICIES, Policy

__all__ = [
    "PAIRS_FILE",
    "DPORunConfig",
    "dpo",
    "model_token_mask",
    "pair_row",
    "preference_collator",
    "write_pairs",
]

PAIRS_FILE = "pairs.jsonl"
RESUME_KEYS = (
    "init",
    "beta",
    "rpo_alpha",
    "epochs",
    "learning_rate",
    "warmup_steps",
    "batch_size",
    "seed",
)


@dataclass(frozen=True, kw_only=True)
class DPORunConfig:
    """Settings of ``langgraph-parallel train dpo``.

    Attributes:
        from_samples: ``train sample`` folders of the policy.
        out: Output folder: ``pairs.jsonl``, ``pairs.json`` and the adapter in ``<policy>/``.
        policy: The policy trained (the one the folders sampled).
        init: The adapter that trains and is the reference (the model the folders sampled).
        beta: DPO's temperature: how far the policy may move from the reference.
        rpo_alpha: Weight of the chosen side's negative log-likelihood (per token) added to
            the DPO loss, RPO (arXiv 2404.19733); 0 is plain DPO. Meant to keep DPO from
            widening the margin by lowering the chosen samples' likelihood too (at 1.0 on 73
            pairs of the policy's own samples it did not: ``benchmarks/rl/dpo2``).
        epochs: Passes over the pairs.
        learning_rate: Peak AdamW learning rate (cosine decay after the warm-up).
        warmup_steps: Optimizer steps of linear warm-up.
        batch_size: Pairs per optimizer step.
        micro_batch: Pairs per forward pass (each is two sequences, plus the reference's pass;
            2 pairs of ~1,000-token trajectories held 13.9 GB on the 2-core CPU).
        seed: Trainer seed.
        save_steps: Optimizer steps between checkpoints (0: none).
        resume: Continue an interrupted run in ``out``.
    """

    from_samples: tuple[str, ...]
    out: str
    policy: Policy
    init: str
    beta: float = 0.1
    rpo_alpha: float = 0.0
    epochs: float = 1.0
    learning_rate: float = 5e-5
    warmup_steps: int = 2
    batch_size: int = 8
    micro_batch: int = 1
    seed: int = 0
    save_steps: int = 10
    resume: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise UserError(f"--policies takes {' or '.join(POLICIES)} (got {self.policy!r}).")
        if not self.from_samples:
            raise UserError("train dpo needs --from-samples FOLDER (a train sample folder).")
        if self.batch_size % self.micro_batch:
            raise UserError("--batch-size must be a multiple of --micro-batch.")
        if self.beta <= 0:
            raise UserError(f"--beta must be above 0 (got {self.beta}).")
        if self.rpo_alpha < 0:
            raise UserError(f"--rpo-alpha must be 0 (plain DPO) or above (got {self.rpo_alpha}).")


def _joined(messages: Sequence[Mapping[str, str]]) -> tuple[str, list[list[int]]]:
    """Return the messages' joined text and the character spans of the model's steps in it."""
    text, spans = "", []
    for message in messages:
        if message["role"] == "assistant":
            spans.append([len(text), len(text) + len(message["content"])])
        text += message["content"]
    return text, spans


def pair_row(chosen: Mapping[str, Any], rejected: Mapping[str, Any]) -> dict[str, Any]:
    """Return a preference pair as TRL reads it, with the model's spans of each side."""
    a, b = list(chosen["messages"]), list(rejected["messages"])
    shared = 0
    while shared < min(len(a), len(b)) - 1 and a[shared] == b[shared]:
        shared += 1
    prompt, _ = _joined(a[:shared])
    chosen_text, chosen_spans = _joined(a[shared:])
    rejected_text, rejected_spans = _joined(b[shared:])
    return {
        "id": str(chosen["id"]),
        "question_class": chosen["class"],
        "prompt": prompt,
        "chosen": chosen_text,
        "rejected": rejected_text,
        "chosen_spans": chosen_spans,
        "rejected_spans": rejected_spans,
        "chosen_sample": int(chosen["sample"]),
        "rejected_sample": int(rejected["sample"]),
        "chosen_reward": float(chosen["reward"]["total"]),
        "rejected_reward": float(rejected["reward"]["total"]),
    }


def write_pairs(
    out: Path, folders: Sequence[str], policy: Policy, *, held_out: set[str], command: str = ""
) -> tuple[list[dict[str, Any]], str]:
    """Write ``out/pairs.jsonl`` (question-id order) and ``out/pairs.json``; return rows, sha256.

    Raises:
        UserError: No question has both a right and a wrong sample, or a folder is refused.
    """
    from langgraph_parallel.train.from_samples import (
        describe,
        preference_pair,
        sample_folders,
        sample_rows,
    )

    runs = sample_folders(folders, policy)
    by_question = sample_rows(folders, held_out=held_out)
    rows = [
        pair_row(*pair)
        for qid in sorted(by_question)
        if (pair := preference_pair(by_question[qid], policy)) is not None
    ]
    if not rows:
        raise UserError(
            f"--from-samples: none of {len(by_question)} questions has both a right and a wrong "
            "sample; sample more (train sample --limit/--samples)."
        )
    out.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    (out / PAIRS_FILE).write_bytes(data)
    classes: dict[str, int] = {}
    for row in rows:
        classes[row["question_class"]] = classes.get(row["question_class"], 0) + 1
    meta = {
        "command": command,
        **describe(folders, runs),
        "questions": len(by_question),
        "pairs": len(rows),
        "by_class": classes,
    }
    (out / "pairs.json").write_text(json.dumps(meta, indent=2) + "\n")
    return rows, hashlib.sha256(data).hexdigest()


def model_token_mask(
    tokenizer: Any, prompt: str, completion: str, spans: Sequence[Sequence[int]], ids: list[int]
) -> list[int]:
    """Return 1 for each token of ``ids`` (the completion's, as TRL split it) the model wrote.

    ``ids`` are the tail of ``tokenizer(prompt + completion)`` (TRL may add an end-of-sequence
    token, which no span covers); a token is the model's when it starts inside a span.

    Raises:
        ValueError: The tokenizer splits the text otherwise than TRL did.
    """
    encoded = tokenizer(prompt + completion, return_offsets_mapping=True, add_special_tokens=False)
    full, offsets = list(encoded["input_ids"]), list(encoded["offset_mapping"])
    start = len(full) - len(ids)
    if start < 0 or full[start:] != ids:
        raise ValueError("the completion's tokens are not the tail of the pair's tokens")
    at = len(prompt)
    return [
        int(any(a <= begin - at < b for a, b in spans)) if end > begin else 0
        for begin, end in offsets[start:]
    ]


def preference_collator(tokenizer: Any) -> Any:
    """Return TRL's preference collator whose completion mask keeps only the model's tokens."""
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    class ModelTokenCollator(DataCollatorForPreference):
        """TRL's preference collator, its completion mask limited to the model's own tokens."""

        def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
            import torch

            out: dict[str, Any] = super().torch_call(examples)
            mask = torch.zeros_like(out["completion_mask"])
            for side, offset in (("chosen", 0), ("rejected", len(examples))):
                for i, ex in enumerate(examples):
                    ids = list(ex[f"{side}_ids"])
                    tokens = model_token_mask(
                        tokenizer, ex["prompt"], ex[side], ex[f"{side}_spans"], ids
                    )
                    at = len(ex["prompt_ids"])
                    mask[offset + i, at : at + len(tokens)] = torch.tensor(tokens)
            out["completion_mask"] = out["completion_mask"] * mask
            return out

    return ModelTokenCollator(pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)


def dpo(config: DPORunConfig, *, command: str = "") -> Path:
    """Write the pairs, then train the policy's adapter with DPO; return the adapter folder.

    Raises:
        UserError: No pair, a refused folder, or a checkpoint of another run (``--resume``).
    """
    with train_extra():
        from datasets import Dataset
        from transformers import AutoTokenizer
        from trl import DPOConfig, DPOTrainer
    from langgraph_parallel.models.adapters import MODEL_CARD, write_adapter
    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.device import TrainingDevice
    from langgraph_parallel.train.log import MetricsLog
    from langgraph_parallel.train.resume import (
        RunRecord,
        Start,
        check_fresh,
        clear_checkpoints,
        plan_start,
    )
    from langgraph_parallel.train.sample_pool import evaluation_ids
    from langgraph_parallel.train.start import inherit, lineage, load_policy, start_adapter

    folder = Path(config.out) / config.policy
    if not config.resume:
        check_fresh({config.policy: folder})
    rows, sha256 = write_pairs(
        Path(config.out),
        config.from_samples,
        config.policy,
        held_out=evaluation_ids(),
        command=command,
    )
    settings = {
        **{k: getattr(config, k) for k in RESUME_KEYS},
        "processes": int(os.environ.get("WORLD_SIZE", "1")),
    }
    start = plan_start(folder, sha256=sha256, settings=settings) if config.resume else Start()
    if start is None:
        return folder
    if start_adapter(config.init) is None:
        raise UserError(
            f"--init {config.init} is not a trained adapter: DPO moves a trained policy "
            "(smollm2-parallel, a train sft folder), its own copy the reference."
        )
    init, excluded = inherit(config.init, {"files": [], "ids": []})
    device = TrainingDevice.here()
    tokenizer = AutoTokenizer.from_pretrained(model_folder(str(init["base_model"])))
    model, _ = load_policy(config.init, lora=True, dtype=device.dtype)
    args = DPOConfig(
        output_dir=str(folder / "trainer"),
        beta=config.beta,
        # TRL's "sft" term is the chosen side's mean token NLL: with "sigmoid" it is RPO
        **(
            {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, config.rpo_alpha]}
            if config.rpo_alpha
            else {"loss_type": ["sigmoid"]}
        ),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.micro_batch,
        gradient_accumulation_steps=config.batch_size // config.micro_batch,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=config.warmup_steps,
        max_length=None,
        remove_unused_columns=False,  # the collator reads the prompt, sides and spans
        **(
            {"save_strategy": "steps", "save_steps": config.save_steps}
            if config.save_steps
            else {"save_strategy": "no"}
        ),
        **device.trainer_settings(config.seed),
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MODEL_CARD).unlink(missing_ok=True)
    run = RunRecord(sha256, settings, start.train_s, start.resumed)
    trainer = DPOTrainer(
        model=model,
        args=args,
        data_collator=preference_collator(tokenizer),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[MetricsLog(folder / "metrics.jsonl"), run],
    )
    began = time.monotonic()
    trainer.train(resume_from_checkpoint=str(start.checkpoint) if start.checkpoint else None)
    policy_model: Any = trainer.model
    if "ref" in getattr(policy_model, "peft_config", {}):
        policy_model.delete_adapter("ref")  # TRL's frozen copy: not part of the policy
    card = {
        "base_model": init["base_model"],
        "policy": config.policy,
        **{k: init.get(k) for k in ("prompt_style", "raw_prompt", "passage_sentences")},
        "method": "DPO on the policy's own samples (best right against a wrong one, TRL)",
        "command": command,
        "data": {
            "files": [portable_path(f) for f in config.from_samples],
            "pairs_file": PAIRS_FILE,
            "sha256": sha256,
            "pairs": len(rows),
            "ids": sorted({row["id"] for row in rows}),
        },
        "excluded": {**excluded, "ids": sorted({*excluded["ids"], *evaluation_ids()})},
        **lineage(init),
        "config": {k: v for k, v in asdict(config).items() if k not in ("out", "resume")},
        "train": {
            **device.card(),
            "commit": run.commit,
            "train_s": round(run.elapsed(), 1),
            "piece_s": round(time.monotonic() - began, 1),
            "resumed": start.resumed,
            "optimizer_steps": trainer.state.global_step,
        },
    }
    write_adapter(policy_model, folder, card)
    clear_checkpoints(folder)
    return folder
