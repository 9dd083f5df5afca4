"""The passage type every searcher returns, and its Search-R1 text rendering."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = ["Passage", "Ranking", "format_passages", "ranked_passages"]

NO_RESULTS = "No results."


@dataclass(frozen=True)
class Passage:
    """One retrieved paragraph.

    Attributes:
        id: Stable identifier of the paragraph in its corpus (``""`` when the source has none).
        title: Title of the page the paragraph comes from.
        text: The paragraph body, without the title.
        score: Similarity to the query as reported by the searcher; higher is closer. Scores of
            different searchers are not comparable.

    """

    id: str
    title: str
    text: str
    score: float = 0.0


Ranking = list[tuple[int, float]]
"""Passage positions in an index's corpus with their scores, best first."""


def ranked_passages(
    passages: Sequence[Passage], rankings: Sequence[Ranking]
) -> list[list[Passage]]:
    """Turn each ranking over ``passages`` into the passages it names, scored, best first."""
    return [[replace(passages[j], score=score) for j, score in ranking] for ranking in rankings]


def format_passages(passages: Sequence[Passage]) -> str:
    """Render passages the way Search-R1 shows them to the model.

    Args:
        passages: Passages in rank order.

    Returns:
        One ``Doc {rank}(Title: {title}) {text}`` line per passage (``Doc {rank} {text}`` for
        an untitled one), ranks starting at 1, joined by newlines; ``"No results."`` for an
        empty sequence so the model never sees an empty observation.

    """
    if not passages:
        return NO_RESULTS
    return "\n".join(
        f"Doc {rank}(Title: {p.title}) {p.text}" if p.title else f"Doc {rank} {p.text}"
        for rank, p in enumerate(passages, start=1)
    )
