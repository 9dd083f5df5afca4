"""What each lever of a CPU training run costs per trajectory (``benchmarks/sft/cpu/``).

Times one optimizer step (forward and backward of every trajectory, then AdamW) per trajectory
of the same questions, under each lever alone and combined: whole passages vs the 2-sentence
budget (two synthesis files of the same questions), padded micro-batches of 2 vs one sequence a
forward (no padding at all), LoRA on every layer vs the last N. The settings are timed in turns
(``reps`` rounds of all of them) and the median is kept, so a machine that gets busier halfway
slows every setting alike. A plain PEFT loop rather than TRL's trainer: what differs between the
settings is the model's work, which is what the trainer spends its time on.

Padding-free batches (TRL's ``padding_free``) are not a lever here: with SDPA attention on the
CPU, transformers 5.19 attended across the joined sequences (the second sequence's logits off by
up to 28 in a check), so only FlashAttention makes them correct.

Run: ``python -m lab.experiments.sft.levers --whole W.jsonl --budget B.jsonl --out DIR``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from lab.base import Experiment
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.paths import source_commit

__all__ = ["SETTINGS", "measure", "same_questions"]

SETTINGS: dict[str, tuple[str, int, int | None]] = {
    "whole passages, micro-batch 2, all layers": ("whole", 2, None),
    "2 sentences, micro-batch 2, all layers": ("budget", 2, None),
    "2 sentences, micro-batch 1, all layers": ("budget", 1, None),
    "2 sentences, micro-batch 2, last 15 layers": ("budget", 2, 15),
    "2 sentences, micro-batch 1, last 15 layers": ("budget", 1, 15),
    "2 sentences, micro-batch 1, last 8 layers": ("budget", 1, 8),
}
"""Setting -> (which file, sequences per forward, LoRA on the last N layers or all)."""


def same_questions(
    whole: list[dict[str, Any]], budget: list[dict[str, Any]], n: int, policy: str = "parallel"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return up to ``n`` trajectories of ``policy`` that both files hold, in the same order."""
    mine = {str(r["id"]): r for r in budget if r["policy"] == policy}
    ids = [str(r["id"]) for r in whole if r["policy"] == policy and str(r["id"]) in mine][:n]
    by_id = {str(r["id"]): r for r in whole if r["policy"] == policy}
    return [by_id[i] for i in ids], [mine[i] for i in ids]


def measure(files: dict[str, list[list[int]]], reps: int, model_name: str) -> dict[str, Any]:
    """Median seconds per trajectory of one optimizer step under every setting of SETTINGS.

    Args:
        files: ``whole``/``budget`` -> token ids of the same trajectories.
        reps: Rounds over all the settings.
        model_name: The base model (an embedded name).
    """
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.config import SFTRunConfig
    from langgraph_parallel.train.lora import lora_config

    torch.manual_seed(0)
    setups = {}
    for name, (file, _, layers) in SETTINGS.items():
        base = AutoModelForCausalLM.from_pretrained(model_folder(model_name), dtype=torch.float32)
        peft = get_peft_model(base, lora_config(SFTRunConfig(out="-", lora_layers=layers), base))
        trainable = [p for p in peft.parameters() if p.requires_grad]
        setups[name] = (peft, torch.optim.AdamW(trainable, lr=1e-5), files[file])
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(reps):
        for name, (model, optimizer, seqs) in setups.items():
            micro = SETTINGS[name][1]
            start = time.perf_counter()
            for i in range(0, len(seqs), micro):
                batch = seqs[i : i + micro]
                width = max(map(len, batch))
                ids = torch.tensor([s + [0] * (width - len(s)) for s in batch])
                mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in batch])
                model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100))[
                    "loss"
                ].backward()
            optimizer.step()
            optimizer.zero_grad()
            times[name].append((time.perf_counter() - start) / len(seqs))
    first = statistics.median(times[next(iter(SETTINGS))])
    return {
        name: {
            "s_per_trajectory": round(statistics.median(values), 3),
            "vs_first": round(statistics.median(values) / first, 3),
            "tokens_mean": round(statistics.fmean(map(len, files[SETTINGS[name][0]])), 1),
        }
        for name, values in times.items()
    }


def main(argv: list[str] | None = None) -> int:
    """Time the levers on two synthesis files of the same questions; write ``summary.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--whole", required=True, help="train sft --synthesize-only file")
    parser.add_argument("--budget", required=True, help="the same, with --passage-sentences 2")
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=6, help="trajectories (both files hold them)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--model", default="smollm2")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.encode import encode_transcript

    fmt = "one trajectory per line (train sft --synthesize-only)"
    whole, budget = same_questions(
        read_rows(args.whole, what="trajectory file", fmt=fmt),
        read_rows(args.budget, what="trajectory file", fmt=fmt),
        args.n,
    )
    tokenizer = AutoTokenizer.from_pretrained(model_folder(args.model))
    files = {
        name: [encode_transcript(r["messages"], tokenizer)[0] for r in rows]
        for name, rows in (("whole", whole), ("budget", budget))
    }
    summary = {
        "commit": source_commit(),
        "machine": machine(),
        "model": args.model,
        "trajectories": len(whole),
        "ids": [r["id"] for r in whole],
        "reps": args.reps,
        "settings": measure(files, args.reps, args.model),
    }
    Experiment.write_tables(Path(args.out), "levers", summary, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
