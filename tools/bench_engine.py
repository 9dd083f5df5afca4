"""Benchmark the in-process engine: concurrent vs sequential calls, and prefix-cache reuse.

Usage:
    .venv/bin/python tools/bench_engine.py --repeats 5 --out benchmarks/engine

Writes ``engine.json`` and ``engine.md``. Concurrency: 4 calls issued at once from 4 threads
(what LangGraph does with 4 ``Send`` branches) against the same 4 calls one after another,
greedy, fixed output length; the ratio is concurrent wall time / sequential wall time (lower is
better). Prefix cache: a second prompt sharing a long prefix with the first, cached prompt tokens
as reported by the engine.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langgraph_parallel.apps.bench_cli import source_commit
from langgraph_parallel.models.vllm_chat import ChatVLLM

PROMPTS = [f"Question {i}: name a famous scientist and say why.\nAnswer:" for i in range(4)]
PREFIX = "Background: " + " ".join(f"fact {i} is about topic {i % 7}." for i in range(80))


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", default="benchmarks/engine")
    args = parser.parse_args()

    model = ChatVLLM(model=args.model, max_tokens=args.tokens, logprobs=True)
    model.invoke("warm up", max_tokens=4)

    def call(prompt: str) -> None:
        # ignore_eos keeps every output at exactly `tokens` tokens, so both modes do equal work
        model.invoke(prompt, ignore_eos=True)

    def sequential() -> None:
        for p in PROMPTS:
            call(p)

    def concurrent() -> None:
        with ThreadPoolExecutor(len(PROMPTS)) as pool:
            list(pool.map(call, PROMPTS))

    rows = []
    for _ in range(args.repeats):
        seq, conc = timed(sequential), timed(concurrent)
        rows.append({"sequential_s": seq, "concurrent_s": conc, "ratio": conc / seq})

    first = model.invoke(PREFIX + "\nQuestion one?", max_tokens=4).usage_metadata
    second = model.invoke(PREFIX + "\nQuestion two?", max_tokens=4).usage_metadata
    result = {
        "command": " ".join([".venv/bin/python", *sys.argv]),
        "commit": source_commit(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "model": args.model,
        "calls": len(PROMPTS),
        "tokens_per_call": args.tokens,
        "runs": rows,
        "median_sequential_s": statistics.median(r["sequential_s"] for r in rows),
        "median_concurrent_s": statistics.median(r["concurrent_s"] for r in rows),
        "median_ratio": statistics.median(r["ratio"] for r in rows),
        "prefix_cache": {
            "prompt_tokens": second["input_tokens"],
            "cached_prompt_tokens_first": first["input_token_details"]["cache_read"],
            "cached_prompt_tokens_second": second["input_token_details"]["cache_read"],
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "engine.json").write_text(json.dumps(result, indent=2) + "\n")
    pc = result["prefix_cache"]
    (out / "engine.md").write_text(
        "# In-process engine: concurrency and prefix cache\n\n"
        f"Command: `{result['command']}`\n\n"
        f"{len(PROMPTS)} calls x {args.tokens} generated tokens, {args.model}, greedy, "
        f"{args.repeats} repeats (median).\n\n"
        "| mode | wall s |\n|---|---|\n"
        f"| sequential | {result['median_sequential_s']:.2f} |\n"
        f"| concurrent (4 threads) | {result['median_concurrent_s']:.2f} |\n"
        f"| ratio concurrent/sequential | {result['median_ratio']:.2f} |\n\n"
        f"Prefix cache: second prompt of {pc['prompt_tokens']} tokens sharing a long prefix: "
        f"{pc['cached_prompt_tokens_second']} cached "
        f"(first call: {pc['cached_prompt_tokens_first']}).\n"
    )
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
