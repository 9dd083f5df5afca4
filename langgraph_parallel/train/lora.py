"""Train one LoRA adapter on recorded trajectories with TRL's ``SFTTrainer`` (``train sft``).

The dataset is pre-tokenized with a ``completion_mask`` (:func:`~.encode.encode_transcript`),
so the loss is on the model's own steps only. On a CUDA machine it trains in bf16 with
gradient checkpointing and the whole batch per forward; on a CPU in float32, ``micro_batch``
sequences per forward and no checkpointing. Several GPUs: TRL's own launcher,
``accelerate launch --num_processes N -m langgraph_parallel.apps.cli train sft --data FILE ...``
(:func:`batch_split` keeps ``batch_size`` per optimizer step; one process writes the adapter).
The adapter is written with its card (``models.adapters.write_adapter``: data ids, commit,
machine, wall time); a checkpoint every ``save_steps`` steps lets ``--resume`` continue.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import ADAPTER_CARD_KEYS, MODEL_CARD, write_adapter
from langgraph_parallel.train import train_extra

if TYPE_CHECKING:
    from langgraph_parallel.train.config import SFTRunConfig
    from langgraph_parallel.train.gold import Policy
    from langgraph_parallel.train.resume import Start


def batch_split(batch_size: int, micro_batch: int, world: int, *, gpu: bool) -> tuple[int, int]:
    """Sequences per forward and accumulation steps so a step takes ``batch_size`` sequences.

    Under ``accelerate launch`` each of ``world`` processes takes its share, so ``batch_size``
    stays the sequences per optimizer step whatever the number of processes; a GPU takes its
    whole share in one forward, a CPU ``micro_batch`` at a time.

    Raises:
        UserError: If the batch does not split evenly.
    """
    micro = batch_size // world if gpu else micro_batch
    if micro < 1 or batch_size % (micro * world):
        raise UserError(
            f"--batch-size {batch_size} does not split over {world} process(es) of {micro} "
            "sequence(s) a forward: make it a multiple of their product."
        )
    return micro, batch_size // (micro * world)


def serving_keys(synthesis: dict[str, Any]) -> dict[str, Any]:
    """Return the card keys that tell the graph how to serve the policy as it was trained.

    The raw ``rules`` prompt, and the observation budget the trajectories were made with
    (``passage_sentences``; ``None``: whole passages): the graph takes the model's by default.

    Args:
        synthesis: The synthesis settings of the trajectories (``data.json``'s ``config``).
    """
    return {
        "prompt_style": "raw",
        "raw_prompt": "rules",
        "passage_sentences": synthesis.get("passage_sentences"),
    }


def lora_config(config: SFTRunConfig, model: Any) -> Any:
    """Return a fresh LoRA of ``lora_rank`` on every linear layer, or the last ``lora_layers``.

    Adapting only the upper layers stops the backward pass at the lowest adapted one (the frozen
    layers below need no gradient), which is where a CPU run saves time.
    """
    from peft import LoraConfig

    layers = int(model.config.num_hidden_layers)
    top = config.lora_layers
    return LoraConfig(
        r=config.lora_rank,
        lora_alpha=2 * config.lora_rank,
        # PEFT takes a layer range only with named modules: every linear layer but the head.
        target_modules="all-linear" if top is None else linear_names(model),
        task_type="CAUSAL_LM",
        layers_to_transform=None if top is None else list(range(max(0, layers - top), layers)),
        layers_pattern=None if top is None else "layers",
    )


def linear_names(model: Any) -> list[str]:
    """Return the names of the model's linear layers but the head (PEFT's ``all-linear``)."""
    import torch

    return sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and "lm_head" not in name
        }
    )


def train_policy(
    config: SFTRunConfig,
    policy: Policy,
    records: list[dict[str, Any]],
    folder: Path,
    *,
    command: str,
    provenance: dict[str, Any],
    start: Start | None = None,
) -> Path:
    """Train one LoRA adapter on ``records`` and write it with its card into ``folder``.

    Args:
        config: The run's settings (model, optimisation, LoRA rank).
        policy: Which policy the records are.
        records: Trajectories of that policy (:mod:`~langgraph_parallel.train.trajectories`).
        folder: Where the adapter and its card go.
        command: The command line, for the card.
        provenance: Where the records came from, for the card: ``data`` (question files,
            file hash), ``excluded`` (held-out files and ids), ``synthesis`` (the synthesis
            settings), ``synthesis_s`` and ``method`` (the card's words for how it was made).
        start: The checkpoint to continue from (:func:`~.resume.plan_start`); ``None``: from
            scratch. Its checkpoints are removed once the adapter is written.
    """
    with train_extra():
        from datasets import Dataset
        from peft import LoraConfig
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.device import TrainingDevice
    from langgraph_parallel.train.encode import encode_transcript
    from langgraph_parallel.train.log import MetricsLog
    from langgraph_parallel.train.resume import (
        RunRecord,
        Start,
        clear_checkpoints,
        run_settings,
    )
    from langgraph_parallel.train.start import inherit, lineage, load_policy

    excluded = provenance["excluded"]
    init, excluded = inherit(config.init, excluded) if config.init else ({}, excluded)
    base_model = str(init.get("base_model") or config.model)
    tokenizer = AutoTokenizer.from_pretrained(model_folder(base_model))
    rows = []
    for record in records:
        ids, mask = encode_transcript(
            record["messages"], tokenizer, last_step_only=config.loss_steps == "last"
        )
        rows.append({"input_ids": ids, "completion_mask": mask})
    device = TrainingDevice.here()
    lora: LoraConfig | None = None
    if config.init:  # the start's own adapter trains (peft_config None: already a PEFT model)
        model, _ = load_policy(config.init, lora=True, dtype=device.dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_folder(base_model), dtype=device.dtype)
        lora = lora_config(config, model)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    micro, accumulation = batch_split(config.batch_size, config.micro_batch, world, gpu=device.gpu)
    args = SFTConfig(
        output_dir=str(folder / "trainer"),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=accumulation,
        learning_rate=config.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=config.warmup_steps,
        **(
            {"save_strategy": "steps", "save_steps": config.save_steps}
            if config.save_steps
            else {"save_strategy": "no"}
        ),
        completion_only_loss=True,
        max_length=None,
        **device.trainer_settings(config.seed),
    )
    folder.mkdir(parents=True, exist_ok=True)
    # The card marks a finished adapter (--resume skips it): an older one must not outlive the
    # start of this training.
    (folder / MODEL_CARD).unlink(missing_ok=True)
    start = start or Start()
    run = RunRecord(
        provenance["data"]["sha256"], run_settings(config), start.train_s, start.resumed
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[MetricsLog(folder / "metrics.jsonl"), run],
    )
    trainer.train(resume_from_checkpoint=str(start.checkpoint) if start.checkpoint else None)
    if not trainer.is_world_process_zero():  # one process writes the adapter
        return folder
    classes = dict(Counter(str(record["question_class"]) for record in records))
    card = {
        "base_model": base_model,
        "policy": policy,
        **serving_keys(provenance["synthesis"]),
        "method": provenance["method"],
        "command": command,
        "data": {
            **provenance["data"],
            "trajectories": len(records),
            "by_class": classes,
            "ids": sorted({str(record["id"]) for record in records}),
            "tokens": sum(len(r["input_ids"]) for r in rows),
            "loss_tokens": sum(sum(r["completion_mask"]) for r in rows),
        },
        "excluded": excluded,
        **lineage(init),
        "config": {
            **{
                k: v
                for k, v in asdict(config).items()
                if k not in ("out", "exclude", "datasets", "resume")
            },
            **provenance["synthesis"],
            # With ``init`` the base and rank are the start adapter's, not the command's.
            "model": base_model,
            "lora_rank": lora.r if lora else model.peft_config["default"].r,
        },
        "train": {
            **device.card(),
            "commit": run.commit,
            "synthesis_s": round(provenance["synthesis_s"], 1),
            # Every piece of a resumed run up to the checkpoint the next one continued from.
            "train_s": round(run.elapsed(), 1),
            "resumed": start.resumed,
            "optimizer_steps": trainer.state.global_step,
        },
    }
    assert set(ADAPTER_CARD_KEYS) <= set(card)
    write_adapter(trainer.model, folder, card)
    clear_checkpoints(folder)
    return folder
