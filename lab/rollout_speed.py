"""Time GRPO's rollout decoding under each generation mode, and retrieval, on one machine.

A GRPO step on the first lent H100 took ~130 s, nearly all of it rollouts (its
``benchmarks/rl/gpu_grpo/README.md``). This measures the parts a step is made of, with the
trainer's own model and code path (``PolicyChatModel._generate_batch``): one decoding batch of
128 first-turn prompts (the dev questions twice) under each
:data:`~langgraph_parallel.train.policy.Decoding` asked for (and ``eager``: merged, with
transformers' eager attention), each twice (the first pays any compilation), the static one
again at two other batch sizes and prompt widths (padded to its one shape) and after a
training-mode round trip (where a compiled graph may be rebuilt), and the retrieval of a
step's sub-queries.

Usage (the device runs it through ``tools/gpu_grpo.sh bench``)::

    python -m lab.rollout_speed [--rows 128] [--max-tokens 256] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

DEV = Path(__file__).resolve().parent.parent / "data" / "grpo_dev64.jsonl.gz"


def _emit(row: dict[str, Any], out: Path | None) -> None:
    print(json.dumps(row), flush=True)
    if out is not None:
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the timings; print one JSON line each (and append them to ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=128, help="prompts in a decoding batch")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens a step may decode")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--modes",
        default="merged,eager,static",
        help="decodings to time: plain, merged, static, and eager (merged, with transformers' "
        "eager attention instead of scaled_dot_product_attention)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.models.cpu import machine
    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.prompts import raw_prompt
    from langgraph_parallel.retrieval.indexes import corpus_index
    from langgraph_parallel.train.policy import PolicyChatModel
    from langgraph_parallel.train.start import load_policy

    gpu = torch.cuda.is_available()
    dtype = torch.bfloat16 if gpu and torch.cuda.is_bf16_supported() else torch.float32
    began = time.perf_counter()
    model, _ = load_policy("smollm2-parallel", lora=True, dtype=dtype)
    model.to("cuda" if gpu else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(model_folder("smollm2-parallel"))
    _emit({"what": "load", "s": round(time.perf_counter() - began, 2), **machine()}, args.out)
    questions = [q.question for q in load_questions(str(DEV))]
    prompts = [raw_prompt(q, True, "rules") for q in (questions * 64)[: args.rows]]
    options = {"stop": ("</search>", "</answer>", "\nQuestion:"), "max_tokens": args.max_tokens}

    width = PolicyChatModel.model_fields["static_shape"].default[1]

    def decode(mode: str, rows: list[str], label: str) -> None:
        chat = PolicyChatModel(
            policy=model,
            tokenizer=tokenizer,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            decoding="merged" if mode == "eager" else mode,  # type: ignore[arg-type]
            static_shape=(args.rows, width),  # what a training step's rollouts use
        )
        try:
            # On a new thread each time, as training's batches run on whichever rollout thread
            # leads them (per-thread state, such as CUDA graph trees, starts again).
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(chat._generate_batch, rows, options).result()
        except Exception as exc:  # a mode that fails here is a finding, not the end
            _emit({"what": label, "mode": mode, "error": repr(exc)[:300]}, args.out)
            return
        t = chat.timings()
        ms = 1000 * t["generate_s"] / max(1.0, t["decode_steps"])
        row = {"what": label, "mode": mode, "rows": len(rows), "s": round(t["generate_s"], 2)}
        row.update(decode_steps=t["decode_steps"], static_misses=t.get("static_misses", 0))
        _emit({**row, "ms_per_step": round(ms, 2)}, args.out)

    for mode in args.modes.split(","):
        if mode == "eager":
            model.set_attn_implementation("eager")
        decode(mode, prompts, "first")
        decode(mode, prompts, "again")
        if mode == "eager":
            model.set_attn_implementation("sdpa")
        if mode == "static":
            # Later turns: fewer rollouts, longer prompts (padded to the one static shape).
            for cut, label in ((4, "other shape"), (2, "third shape")):
                tail = " " + " ".join(questions[:cut])
                rows = [p + tail for p in prompts[: args.rows * cut // 8]]
                decode(mode, rows, label)
            model.train()
            model.gradient_checkpointing_enable()  # what the trainer hands a rollout
            decode(mode, prompts, "after train mode")

    index = corpus_index(None)
    queries = [part for q in questions * 2 for part in (q, q.split(",")[0])][: 2 * args.rows]
    index.batch_search(queries[:4], 3)  # loads the index and the query encoder
    for workers in (1, 16):
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda q: index.batch_search([q], 3), queries))
        row = {"what": "retrieval", "queries": len(queries), "threads": workers}
        _emit({**row, "s": round(time.perf_counter() - began, 2)}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
