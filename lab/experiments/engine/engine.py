"""The in-process engine: concurrent vs sequential calls, and prefix-cache reuse.

``langgraph-parallel bench run engine`` writes ``engine.json`` and ``engine.md``. Concurrency:
4 calls issued at once from 4 threads (what LangGraph does with 4 ``Send`` branches) against the
same 4 calls one after another, greedy, fixed output length, ``--limit`` repeats (median); the
ratio is concurrent wall time / sequential wall time (lower is better). Prefix cache: a second
prompt sharing a long prefix with the first, cached prompt tokens as reported by the engine.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from lab.base import Experiment, Run
from lab.paths import checkout_dir
from lab.provenance import at_commit, shown_command
from langgraph_parallel.paths import source_commit

__all__ = ["EXPERIMENT", "render_engine"]

PROMPTS = [f"Question {i}: name a famous scientist and say why.\nAnswer:" for i in range(4)]
PREFIX = "Background: " + " ".join(f"fact {i} is about topic {i % 7}." for i in range(80))


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _markdown(result: dict[str, Any], repeats: int) -> str:
    pc = result["prefix_cache"]
    return (
        "# In-process engine: concurrency and prefix cache\n\n"
        f"Command: `{result['command']}`\n\n"
        f"{len(PROMPTS)} calls x {result['tokens_per_call']} generated tokens, {result['model']}, "
        f"greedy, {repeats} repeats (median).\n\n"
        "| mode | wall s |\n|---|---|\n"
        f"| sequential | {result['median_sequential_s']:.2f} |\n"
        f"| concurrent (4 threads) | {result['median_concurrent_s']:.2f} |\n"
        f"| ratio concurrent/sequential | {result['median_ratio']:.2f} |\n\n"
        f"Prefix cache: second prompt of {pc['prompt_tokens']} tokens sharing a long prefix: "
        f"{pc['cached_prompt_tokens_second']} cached "
        f"(first call: {pc['cached_prompt_tokens_first']}).\n"
    )


def _run(run: Run) -> None:
    from langgraph_parallel.models.vllm_chat import ChatVLLM

    name, tokens, repeats = run.settings["model"], run.settings["tokens"], run.limit or 5
    run.uses(name)
    model = ChatVLLM(model=name, max_tokens=tokens, logprobs=True)
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
    for _ in range(repeats):
        seq, conc = _timed(sequential), _timed(concurrent)
        rows.append({"sequential_s": seq, "concurrent_s": conc, "ratio": conc / seq})
    first, second = (
        cast(dict[str, Any], model.invoke(PREFIX + f"\nQuestion {n}?", max_tokens=4).usage_metadata)
        for n in ("one", "two")
    )
    result = {
        "command": run.command,
        "commit": source_commit(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "model": name,
        "calls": len(PROMPTS),
        "tokens_per_call": tokens,
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
    Experiment.write_tables(run.out, "engine", result, _markdown(result, repeats))


EXPERIMENT = Experiment(
    name="engine",
    about="the in-process engine: 4 concurrent vs sequential calls, prefix-cache reuse",
    out="benchmarks/engine",
    run=_run,
    limit=5,
    limit_means="repeats",
    settings={"model": "smollm2", "tokens": 64},
)


def render_engine(path: Path | None = None) -> str:
    """Render batching and prefix caching of the in-process engine (block ``engine-results``)."""
    path = path or checkout_dir() / "benchmarks" / "engine" / "engine.json"
    result: dict[str, Any] = json.loads(path.read_text())
    calls, cache = result["calls"], result["prefix_cache"]
    return (
        f"**Engine** (`benchmarks/engine/`, {shown_command(result['command'])}"
        f"{at_commit(result)}): {calls} "
        "concurrent calls "
        f"(what {calls} `Send` branches do) take **{result['median_ratio']:.2f}x** the wall time "
        f"of the same {calls} calls in sequence (median of {len(result['runs'])} runs; continuous "
        "batching in the one engine of the process); a second prompt sharing a long prefix had "
        f"{cache['cached_prompt_tokens_second']} of {cache['prompt_tokens']} prompt tokens served "
        "from the prefix cache."
    )
