"""Where in a step's text each functional region lies, for ParallelMuse uncertainty.

Regions (reasoning, exploration, answer) are read off the action language's elements, found
exactly as the parser finds them (:func:`~langgraph_parallel.protocol.action.elements`);
:mod:`~langgraph_parallel.parallel_muse.uncertainty` scores the tokens inside each region.
"""

from __future__ import annotations

from typing import Any

from langgraph_parallel.parallel_muse.uncertainty import Step
from langgraph_parallel.protocol.action import ACTION_TAGS, elements

__all__ = ["REGION_NAMES", "make_step", "region_spans"]

REGION_NAMES: tuple[str, ...] = ("reasoning", "exploration", "answer")
"""The keys of :func:`region_spans`, in the order a step is read."""


def region_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Character spans of the functional regions of a step, for ParallelMuse uncertainty.

    - ``"reasoning"``: bodies of complete ``<think>`` elements, minus any action element inside
      them; with no complete ``<think>``, the text before the first action element (the whole text
      if there is none), whitespace-trimmed.
    - ``"exploration"``: whole ``<search>...</search>`` and ``<tool_call>...</tool_call>``
      elements, tags included. Tool calls that are not in ``text`` have no span.
    - ``"answer"``: whole ``<answer>...</answer>`` elements.

    Args:
        text: The step text (for token-level use, the raw generated text).

    Returns:
        All three keys; spans are ``(start, end)`` into ``text``, non-empty, sorted, disjoint.

    """
    actions = elements(text, ACTION_TAGS)
    thinks = [(s + 7, e - 8) for _, s, e in elements(text, ("think",))]
    if thinks:
        reasoning = _subtract(thinks, [(s, e) for _, s, e in actions])
    else:
        reasoning = [_trim(text, 0, actions[0][1] if actions else len(text))]
    return {
        "reasoning": [(s, e) for s, e in reasoning if s < e],
        "exploration": [(s, e) for tag, s, e in actions if tag != "answer"],
        "answer": [(s, e) for tag, s, e in actions if tag == "answer"],
    }


def make_step(
    text: str,
    logprobs: list[dict[str, Any]],
    *,
    usage: dict[str, int],
    action: str,
    message_index: int,
    origin: str,
) -> Step:
    """Return the :class:`~.uncertainty.Step` of one model call, its regions read off ``text``.

    The one way a step is recorded, by our rollouts and by agents forked through their
    checkpointer alike, so the router scores both the same way.

    Args:
        text: The generated text, as the tokens of ``logprobs`` spell it.
        logprobs: OpenAI-style token logprobs (empty if the model gave none).
        usage: The call's token counters.
        action: ``search``, ``answer``, ``tool``, ``invalid`` or ``error``.
        message_index: Index of the step's message in its trajectory's messages.
        origin: Id of the trajectory whose model call produced it.
    """
    spans = region_spans(text)
    return Step(
        text=text,
        logprobs=logprobs,
        regions={name: [list(s) for s in found] for name, found in spans.items()},
        usage=usage,
        action=action,
        message_index=message_index,
        origin=origin,
    )


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    segment = text[start:end]
    return start + len(segment) - len(segment.lstrip()), end - len(segment) + len(segment.rstrip())


def _subtract(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of sorted disjoint ``spans`` outside sorted disjoint ``holes``, in one sweep."""
    out: list[tuple[int, int]] = []
    first = 0
    for start, end in spans:
        while first < len(holes) and holes[first][1] <= start:
            first += 1
        cursor = start
        index = first
        while index < len(holes) and holes[index][0] < end:
            out.append((cursor, holes[index][0]))
            cursor = max(cursor, holes[index][1])
            index += 1
        out.append((cursor, end))
    return [(s, e) for s, e in out if s < e]
