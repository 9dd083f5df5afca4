"""The action grammar as a regular expression, for engines' structured outputs."""

from __future__ import annotations

__all__ = ["THINK_MAX_CHARS", "action_regex", "answer_regex"]

THINK_MAX_CHARS = 300
"""Default bound of a ``<think>`` body in :func:`action_regex` (the trained policies' think
text is at most 280 characters: ``train.synth.THINK_BUDGET``)."""
# The other bounds of the structured-output regex (see action_regex).
_QUERY_MAX_CHARS = 120
_ANSWER_MAX_CHARS = 80
_ANSWER = f"<answer> ?[^ \\t\\r\\n<][^<\\n]{{0,{_ANSWER_MAX_CHARS - 1}}}</answer>"


def _think(max_chars: int) -> str:
    return f"(<think>[^<]{{0,{max_chars}}}</think>[ \\n]{{0,2}})?"


def action_regex(decompose: bool, think_max_chars: int = THINK_MAX_CHARS) -> str:
    """Build a regular expression for one valid step, for engines' structured output.

    It uses only groups, classes, alternation and bounded repeats (no lookarounds or backrefs), so
    Python ``re`` and vLLM's regex backends (xgrammar, outlines, guidance) accept it. Think text
    has no ``<`` and at most ``think_max_chars`` characters; a sub-query (at most 120
    characters) or an answer (at most 80) starts with a non-space character and has no ``<`` or
    newline; a sub-query has no ``#`` either. The bounds make a small model close its think and
    its action instead of rambling until ``max_tokens`` cuts the step (an invalid step).
    Compiling this pattern takes xgrammar 1-3 s on 2 cores, so
    :mod:`~langgraph_parallel.models.engine` raises vLLM's 5 s regex-compilation guard. The
    number of sub-queries is not limited here: :func:`cap_queries` reports the excess to the
    model.

    Args:
        decompose: Allow several sub-queries joined by ``##`` in one search (ParallelSearch);
            ``False`` allows exactly one (Search-R1).
        think_max_chars: Most characters of the ``<think>`` body (fewer generated tokens per
            step; see ``benchmarks/latency`` for what a shorter bound does to accuracy).

    Returns:
        The pattern, meant for ``re.fullmatch`` on the step text.

    """
    query = f"[^ \\t\\r\\n<#][^<#\\n]{{0,{_QUERY_MAX_CHARS - 1}}}"
    queries = f"{query}(## ?{query})*" if decompose else query
    return f"{_think(think_max_chars)}(<search> ?{queries}</search>|{_ANSWER})"


def answer_regex(think_max_chars: int = THINK_MAX_CHARS) -> str:
    """Build the answer-only part of :func:`action_regex`: an optional think, then an answer.

    The grammar of a step that may only answer (the agent's final step after a search at its
    last allowed turn): the same think and answer bounds as :func:`action_regex` without the
    ``<search>`` branch, so every text it matches also matches :func:`action_regex` and parses
    as an answer.

    Args:
        think_max_chars: Most characters of the ``<think>`` body.

    Returns:
        The pattern, meant for ``re.fullmatch`` on the step text.
    """
    return f"{_think(think_max_chars)}{_ANSWER}"
