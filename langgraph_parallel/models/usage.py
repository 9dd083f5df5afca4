"""Read token counters from any chat model's reply, the same way for every backend."""

from __future__ import annotations

from typing import Any


def usage_counters(message: Any) -> dict[str, int]:
    """Return ``prompt_tokens``, ``cached_prompt_tokens`` and ``completion_tokens`` of a reply.

    Uses LangChain's standard ``usage_metadata``: ``ChatVLLM`` fills it from the engine and
    ``ChatOpenAI`` from the server's ``usage`` (``prompt_tokens_details.cached_tokens`` becomes
    ``input_token_details["cache_read"]``). Missing values count as zero, never as estimates.
    """
    usage = getattr(message, "usage_metadata", None) or {}
    details = usage.get("input_token_details") or {}
    return {
        "prompt_tokens": int(usage.get("input_tokens") or 0),
        "cached_prompt_tokens": int(details.get("cache_read") or 0),
        "completion_tokens": int(usage.get("output_tokens") or 0),
    }
