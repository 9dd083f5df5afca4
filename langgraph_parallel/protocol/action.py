"""The tags of the action language, and :class:`Action`, what one model step decided.

Shared by the parser (:mod:`.parse`, :mod:`.tool_calls`) and by ParallelMuse's region spans
(:func:`~langgraph_parallel.parallel_muse.regions.region_spans`), which finds elements the
same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ACTION_TAGS",
    "DEFAULT_MAX_PARALLEL_QUERIES",
    "QUERY_SEPARATOR",
    "STOP_SEQUENCES",
    "Action",
    "elements",
    "invalid",
    "unique_queries",
]

STOP_SEQUENCES = ("</search>", "</answer>")
DEFAULT_MAX_PARALLEL_QUERIES = 4
QUERY_SEPARATOR = "##"
ACTION_TAGS = ("search", "answer", "tool_call")


@dataclass(frozen=True)
class Action:
    """The action of one model step.

    Attributes:
        kind: ``"search"``, ``"answer"`` or ``"invalid"``.
        queries: De-duplicated, non-empty sub-queries of a search, in the order written (not yet
            capped; see :func:`cap_queries`).
        answer: The stripped final answer of an ``"answer"`` action.
        think: The last complete ``<think>`` body before the action, stripped; ``None`` if absent
            or empty.
        raw: The step text as given.
        error: Why an ``"invalid"`` action is invalid.

    """

    kind: Literal["search", "answer", "invalid"]
    queries: tuple[str, ...] = ()
    answer: str | None = None
    think: str | None = None
    raw: str = ""
    error: str | None = None


def invalid(text: str, think: str | None, error: str) -> Action:
    """Return an ``"invalid"`` action for ``text`` that says why (``error``)."""
    return Action("invalid", think=think, raw=text, error=error)


def unique_queries(pieces: Iterable[str]) -> list[str]:
    """Return clean sub-queries: spaces squashed, empties and case-insensitive repeats dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for piece in pieces:
        query = " ".join(piece.split())
        if query and query.casefold() not in seen:
            seen.add(query.casefold())
            out.append(query)
    return out


def elements(text: str, tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Complete ``<tag>...</tag>`` elements as ``(tag, start, end)``, left to right, disjoint."""
    found: list[tuple[str, int, int]] = []
    next_open = {tag: text.find(f"<{tag}>") for tag in tags}
    while True:
        live = [(pos, tag) for tag, pos in next_open.items() if pos >= 0]
        if not live:
            return found
        start, tag = min(live)
        close = text.find(f"</{tag}>", start + len(tag) + 2)
        if close < 0:
            # No later opening of this tag can be closed either; forgetting it keeps this linear.
            next_open[tag] = -1
            continue
        end = close + len(tag) + 3
        found.append((tag, start, end))
        for other, pos in next_open.items():
            if 0 <= pos < end:
                next_open[other] = text.find(f"<{other}>", end)
