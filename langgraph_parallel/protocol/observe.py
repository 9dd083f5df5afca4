"""What the model reads back: the ``<information>`` block of a turn, and the invalid-step note.

Retrieved text is data, never protocol: a passage (a web page through Tavily, a user's corpus)
that contains ``</information>``, ``<answer>`` or ``<search>`` would otherwise close the block
early or plant an action in the transcript, which the model reads and which the reward and
ParallelMuse's regions parse. :func:`inert` writes the ``<`` of such a tag as ``&lt;`` (the
bundled HotpotQA corpus has none, so its observations are unchanged).

The model's control tokens (``<|im_end|>``, ``<|endoftext|>``, ...) are another layer: which
strings they are depends on the tokenizer, which only the chat model knows, so ``ChatVLLM`` and
``ChatVLLMServer`` make them inert in every outside message when they render the prompt
(:mod:`langgraph_parallel.models.special_tokens`), this block included.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["INVALID_ACTION_OBSERVATION", "format_observation", "inert", "skipped_note"]

_PROTOCOL_TAG = re.compile(
    r"<(?=\s*/?\s*(?:think|search|answer|information|tool_call)\b)", re.IGNORECASE
)

INVALID_ACTION_OBSERVATION = (
    "\nMy previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer between "
    "<answer> and </answer>. Let me try again.\n"
)


def format_observation(
    results: Sequence[tuple[str, str]], skipped: Sequence[str] = (), *, limit: int | None = None
) -> str:
    r"""Format the results of one turn's sub-queries as the ``<information>`` block.

    Every sub-query gets a ``[query]`` header, even when there is only one, so the model sees one
    layout. Skipped sub-queries are named, never dropped silently. Protocol tags inside the
    results are made :func:`inert`.

    Args:
        results: ``(sub_query, formatted_docs)`` in the order the model wrote the sub-queries.
        skipped: Sub-queries over the per-turn limit.
        limit: The per-turn limit quoted in the note; defaults to ``len(results)``.

    Returns:
        ``"\n\n<information>[q1]\ndocs1\n...</information>\n\n"``.

    """
    lines = [
        f"[{inert(query)}]\n{inert(docs.strip()) or 'No results.'}\n" for query, docs in results
    ]
    if skipped:
        lines.append(inert(skipped_note(skipped, len(results) if limit is None else limit)))
    return f"\n\n<information>{''.join(lines) or 'No results.'}</information>\n\n"


def inert(text: str) -> str:
    """Return ``text`` with every protocol tag's ``<`` written ``&lt;`` (data, not protocol)."""
    return _PROTOCOL_TAG.sub("&lt;", text)


def skipped_note(skipped: Sequence[str], limit: int) -> str:
    r"""Return the line naming sub-queries over the per-turn ``limit``, ending with ``"\n"``."""
    return f"Not searched (limit of {limit} sub-queries per turn): {' ## '.join(skipped)}\n"
