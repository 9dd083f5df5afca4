"""How close the serving levels come to what the engine alone can do: the question ceiling.

A question costs the engine its prompt tokens that the prefix cache does not hold (prefilled
at the engine's prefill rate) and its completion tokens (decoded at the engine's decode rate
with that many requests running at once). Both rates are measured on the same server by
:mod:`.serving_probe`; the tokens per question come from the level's own rows. So::

    ceiling_q_per_s = 1 / (uncached_prompt_tokens / prefill_tok_per_s
                           + completion_tokens / decode_tok_per_s)

and a level's throughput divided by it says how much of the engine the agent loop uses (the
rest goes to retrieval, the graph's Python, the waits between a question's turns, and the
structured-output grammar, which the probe's free text does not pay). Cached prompt tokens
count as free: reading them back costs a fraction of a prefill. The ceiling is not a strict
bound: vLLM's chunked prefill runs decode steps in the same batch as a prefill, so the two
overlap and a level may come slightly above it.

Everything here is arithmetic on recorded figures, so it is tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ceiling_q_per_s", "engine_rates", "level_ceiling", "question_tokens"]


def question_tokens(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Return a level's mean tokens per question and the mean prompt of one model call.

    Args:
        rows: The level's result rows (``prompt_tokens``, ``cached_prompt_tokens``,
            ``completion_tokens`` and ``llm_calls`` each).

    Returns:
        ``prompt_tokens``, ``cached_prompt_tokens``, ``uncached_prompt_tokens`` and
        ``completion_tokens`` per question (means over every row, as throughput counts every
        question), and ``prompt_tokens_per_call`` (all prompt tokens over all model calls:
        the prompt length the prefill probe sends).
    """
    n = max(len(rows), 1)
    prompt = sum(r["prompt_tokens"] for r in rows)
    cached = sum(r["cached_prompt_tokens"] for r in rows)
    completion = sum(r["completion_tokens"] for r in rows)
    calls = sum(r["llm_calls"] for r in rows)
    return {
        "prompt_tokens": round(prompt / n, 1),
        "cached_prompt_tokens": round(cached / n, 1),
        "uncached_prompt_tokens": round((prompt - cached) / n, 1),
        "completion_tokens": round(completion / n, 1),
        "prompt_tokens_per_call": round(prompt / calls, 1) if calls else 0.0,
    }


def ceiling_q_per_s(
    uncached_prompt_tokens: float,
    completion_tokens: float,
    prefill_tok_per_s: float,
    decode_tok_per_s: float,
) -> float:
    """Return the questions per second the engine could serve if it did nothing else.

    Args:
        uncached_prompt_tokens: Prompt tokens per question the prefix cache did not hold.
        completion_tokens: Completion tokens per question.
        prefill_tok_per_s: The engine's prefill rate (uncached prompt tokens per second).
        decode_tok_per_s: The engine's decode rate at the level's concurrency (completion
            tokens per second, all requests together).

    Raises:
        ValueError: A rate that is not positive, a negative token count, or a question of
            no tokens (which has no ceiling).
    """
    if not (prefill_tok_per_s > 0 and decode_tok_per_s > 0):
        raise ValueError(
            f"rates must be positive, got prefill {prefill_tok_per_s!r}, "
            f"decode {decode_tok_per_s!r} tok/s"
        )
    if uncached_prompt_tokens < 0 or completion_tokens < 0:
        raise ValueError("token counts must not be negative")
    seconds = uncached_prompt_tokens / prefill_tok_per_s + completion_tokens / decode_tok_per_s
    if seconds == 0:
        raise ValueError("a question of no tokens has no ceiling")
    return 1.0 / seconds


def engine_rates(prefill: Mapping[str, Any], decode: Mapping[str, Any]) -> dict[str, float | None]:
    """Return prefill and decode tok/s from the probe's two timed batches.

    Both batches send the same prompts with the prefix cache emptied before each; the first
    asks for 1 token each, the second for more. So the first is (almost) all prefill, and the
    second's extra time is the extra tokens' decoding: prefill and the requests' overhead
    cancel in the difference.

    Args:
        prefill: ``prompt_tokens``, ``cached_prompt_tokens`` and ``wall_s`` of the 1-token batch.
        decode: ``completion_tokens`` and ``wall_s`` of the longer batch; ``prefill`` also
            carries its ``completion_tokens``.

    Returns:
        ``prefill_tok_per_s`` and ``decode_tok_per_s``; ``None`` for a rate the figures cannot
        give (no time, or a decode batch no slower than the prefill one: noise on a busy
        machine).
    """
    uncached = prefill["prompt_tokens"] - prefill["cached_prompt_tokens"]
    extra_tokens = decode["completion_tokens"] - prefill["completion_tokens"]
    extra_s = decode["wall_s"] - prefill["wall_s"]
    return {
        "prefill_tok_per_s": round(uncached / prefill["wall_s"], 1)
        if prefill["wall_s"] > 0 and uncached > 0
        else None,
        "decode_tok_per_s": round(extra_tokens / extra_s, 1)
        if extra_s > 0 and extra_tokens > 0
        else None,
    }


def level_ceiling(level: Mapping[str, Any], rates: Mapping[str, Any]) -> dict[str, float | None]:
    """Return a level's question ceiling and the share of it the level reached.

    Args:
        level: A level of ``serving.json`` (``uncached_prompt_tokens``, ``completion_tokens``,
            ``throughput_q_per_s``).
        rates: The engine's rates at the level's concurrency (:func:`engine_rates`).

    Returns:
        ``ceiling_q_per_s`` and ``of_ceiling`` (throughput / ceiling), both ``None`` when a
        rate or the level's tokens are missing.
    """
    prefill, decode = rates.get("prefill_tok_per_s"), rates.get("decode_tok_per_s")
    uncached, completion = level.get("uncached_prompt_tokens"), level.get("completion_tokens")
    if not (prefill and decode) or uncached is None or completion is None:
        return {"ceiling_q_per_s": None, "of_ceiling": None}
    if uncached + completion <= 0:  # a level of failed questions only: nothing to bound
        return {"ceiling_q_per_s": None, "of_ceiling": None}
    ceiling = ceiling_q_per_s(uncached, completion, prefill, decode)
    return {
        "ceiling_q_per_s": round(ceiling, 3),
        "of_ceiling": round(level["throughput_q_per_s"] / ceiling, 3),
    }
