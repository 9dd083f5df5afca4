"""The engine alone, on the serving experiment's own server: prefill and decode tokens per second.

For each level's concurrency N, :func:`measure_engine` sends ``max(N, 8)`` prompts, N at a
time, of the level's mean prompt length per model call (bundled-corpus passages in the
``Doc i(Title: ...)`` form of an observation, each prompt different from its first token so
none reads another's cache), twice, the prefix cache emptied before each: once for 1 token
each (the prefill batch) and once for ``1 + decode_tokens`` tokens each (``ignore_eos``, so
each request decodes exactly that many). Like the agent's steps the requests are greedy and
ask for each token's logprob with no alternatives; unlike them they have no action grammar, so
the grammar's cost counts against the agent, not the engine (runs before 2026-11-26 asked both
for the top 16). :func:`~.serving_ceiling.engine_rates` turns the two
batches into rates; the raw figures go to ``serving.json`` with them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lab.experiments.serving.serving_ceiling import engine_rates
from lab.experiments.serving.serving_metrics import post_json, reset_prefix_cache

__all__ = ["PROBE_REQUESTS", "complete", "measure_engine", "measure_levels", "probe_prompts"]

PROBE_REQUESTS = 8
"""Fewest requests per timed batch (a level of N runs sends ``max(N, 8)``, N at a time)."""

CHARS_PER_TOKEN = 4.0
"""About how many characters of English passage text make one token; the figures reported are
the server's own token counts, so this only sizes the prompts."""

TOP_LOGPROBS = 0
"""What ``parallel-search``'s steps ask for (:func:`~langgraph_parallel.agent.step.step_options`;
ParallelMuse's, whose uncertainty reads them, ask for 16)."""


def probe_prompts(count: int, tokens: float, passages: Sequence[str] | None = None) -> list[str]:
    """Return ``count`` different prompts of about ``tokens`` tokens each.

    Args:
        count: How many prompts.
        tokens: Their length in tokens, about.
        passages: Text to cut them from, used in turn (default: the bundled corpus's passages
            as an observation shows them).
    """
    if passages is None:
        from langgraph_parallel.retrieval.corpus import bundled_corpus_path, load_corpus
        from langgraph_parallel.retrieval.documents import format_passages

        docs = load_corpus(bundled_corpus_path(), limit=max(count, 1) * 40)
        passages = [format_passages([doc]) for doc in docs]
    size = max(int(tokens * CHARS_PER_TOKEN), 1)
    prompts, at = [], 0
    for i in range(count):
        # A number first: no two prompts share their first cache block.
        text = f"Request {i}.\n"
        while len(text) < size:
            text += passages[at % len(passages)] + "\n"
            at += 1
        prompts.append(text[:size])
    return prompts


def complete(base: str, model: str, prompt: str, max_tokens: int) -> dict[str, int]:
    """Send one ``/v1/completions`` request; return its prompt, cached and completion tokens."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "logprobs": TOP_LOGPROBS,
        "ignore_eos": True,  # vLLM's: decode exactly max_tokens
    }
    usage = post_json(base + "/v1/completions", body)["usage"]
    details = usage.get("prompt_tokens_details") or {}
    return {
        "prompt_tokens": int(usage["prompt_tokens"]),
        "cached_prompt_tokens": int(details.get("cached_tokens") or 0),
        "completion_tokens": int(usage["completion_tokens"]),
    }


def timed_batch(
    base: str, model: str, prompts: Sequence[str], workers: int, max_tokens: int
) -> dict[str, Any]:
    """Send every prompt, ``workers`` at a time; return the summed usage and the wall time."""
    begin = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        usages = list(pool.map(lambda p: complete(base, model, p, max_tokens), prompts))
    wall = time.perf_counter() - begin
    totals = {key: sum(u[key] for u in usages) for key in usages[0]} if usages else {}
    return {"requests": len(usages), "max_tokens": max_tokens, **totals, "wall_s": round(wall, 3)}


def measure_engine(
    base: str, model: str, concurrency: int, prompt_tokens: float, decode_tokens: int
) -> dict[str, Any]:
    """Measure the server's prefill and decode rates with ``concurrency`` requests at once.

    Args:
        base: The server's address (``http://host:port``, no ``/v1``).
        model: The name it serves.
        concurrency: Requests in flight at once.
        prompt_tokens: Prompt length, about (the level's mean prompt per model call).
        decode_tokens: Tokens each request of the decode batch decodes beyond the first.

    Returns:
        ``concurrency``, ``prompt_tokens_target``, the ``prefill`` and ``decode`` batches'
        figures (requests, max_tokens, prompt/cached/completion tokens, wall_s) and the two
        rates of :func:`~.serving_ceiling.engine_rates`.
    """
    prompts = probe_prompts(max(concurrency, PROBE_REQUESTS), prompt_tokens)
    reset_prefix_cache(base)
    prefill = timed_batch(base, model, prompts, concurrency, 1)
    reset_prefix_cache(base)  # the same prompts again, prefilled again
    decode = timed_batch(base, model, prompts, concurrency, 1 + decode_tokens)
    return {
        "concurrency": concurrency,
        "prompt_tokens_target": round(prompt_tokens),
        "prefill": prefill,
        "decode": decode,
        **engine_rates(prefill, decode),
    }


def measure_levels(
    base: str, model: str, levels: Sequence[Mapping[str, Any]], decode_tokens: int
) -> list[dict[str, Any]]:
    """Measure the engine at each level's concurrency, with that level's prompt length."""
    found = []
    for level in levels:
        probe = measure_engine(
            base, model, level["concurrency"], level["prompt_tokens_per_call"], decode_tokens
        )
        print("engine", json.dumps(probe), flush=True)
        found.append(probe)
    return found
