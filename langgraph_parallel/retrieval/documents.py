"""The passage type every searcher returns, and its Search-R1 text rendering.

:func:`format_passages` is the one place a passage becomes observation text, so the
per-passage budget (``passage_sentences``: the title and the first N sentences) applies
identically wherever an observation is made: the graphs at inference, ParallelMuse rollouts and
the training synthesis, which runs the same graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from langgraph_parallel.retrieval.sentences import sentence_ends

__all__ = [
    "Passage",
    "Ranking",
    "format_passages",
    "listed_once",
    "ranked_passages",
    "shown_text",
]

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
        sentence_ends: Offsets in ``text`` where each of the corpus's own sentences ends
            (see :func:`~.sentences.marked_sentence_ends`); empty when the source marks none,
            and :func:`~.sentences.sentence_ends` finds them when a budget needs them.

    """

    id: str
    title: str
    text: str
    score: float = 0.0
    sentence_ends: tuple[int, ...] = field(default=(), repr=False)


Ranking = list[tuple[int, float]]
"""Passage positions in an index's corpus with their scores, best first."""


def ranked_passages(
    passages: Sequence[Passage], rankings: Sequence[Ranking]
) -> list[list[Passage]]:
    """Turn each ranking over ``passages`` into the passages it names, scored, best first."""
    return [[replace(passages[j], score=score) for j, score in ranking] for ranking in rankings]


def listed_once(lists: Sequence[Sequence[Passage]]) -> list[list[Passage]]:
    """Keep each passage in only one of ``lists``: the one that ranks it highest (first on ties).

    The sub-queries of one search often find the same paragraph; listed once, under the
    sub-query that ranks it highest, it costs its tokens once and every sub-query keeps its own
    best hits. Passages are the same when their ids are (without ids: their titles and texts).
    """
    best: dict[object, tuple[int, int]] = {}
    for i, passages in enumerate(lists):
        for rank, passage in enumerate(passages):
            key = _identity(passage)
            best[key] = min(best.get(key, (rank, i)), (rank, i))
    return [
        [p for rank, p in enumerate(passages) if best[_identity(p)] == (rank, i)]
        for i, passages in enumerate(lists)
    ]


def _identity(passage: Passage) -> object:
    return passage.id or (passage.title, passage.text)


def shown_text(passage: Passage, passage_sentences: int | None = None) -> str:
    """Return the part of ``passage.text`` an observation shows: its first N sentences.

    The cut is a prefix of the text, byte for byte, with no ellipsis: a marker would add tokens
    to every observation, and the model could not act on it (the rest is never shown).

    Args:
        passage: The passage.
        passage_sentences: Sentences to keep; ``None`` keeps the whole text. A passage with at
            most that many sentences is returned unchanged.

    Raises:
        ValueError: ``passage_sentences`` is below 1.
    """
    if passage_sentences is None:
        return passage.text
    if passage_sentences < 1:
        raise ValueError(f"passage_sentences must be at least 1 or None (got {passage_sentences}).")
    ends = passage.sentence_ends or sentence_ends(passage.text)
    if passage_sentences >= len(ends):
        return passage.text
    return passage.text[: ends[passage_sentences - 1]]


def format_passages(passages: Sequence[Passage], *, passage_sentences: int | None = None) -> str:
    """Render passages the way Search-R1 shows them to the model.

    Args:
        passages: Passages in rank order.
        passage_sentences: Show each passage's title and its first N sentences
            (:func:`shown_text`); ``None`` (default) shows whole passages.

    Returns:
        One ``Doc {rank}(Title: {title}) {text}`` line per passage (``Doc {rank} {text}`` for
        an untitled one), ranks starting at 1, joined by newlines; ``"No results."`` for an
        empty sequence so the model never sees an empty observation.

    """
    if not passages:
        return NO_RESULTS
    lines = []
    for rank, p in enumerate(passages, start=1):
        text = shown_text(p, passage_sentences)
        lines.append(f"Doc {rank}(Title: {p.title}) {text}" if p.title else f"Doc {rank} {text}")
    return "\n".join(lines)
