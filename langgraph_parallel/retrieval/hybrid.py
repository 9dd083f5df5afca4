"""Hybrid retrieval: the lexical (BM25) and dense (MiniLM) rankings of a query, fused.

Two fusions, both standard and both a few lines (no library ships them apart from a full search
engine, so they are written here):

- ``minmax`` (default): each ranking's scores over its top ``depth`` are scaled to [0, 1]
  (min-max), then summed with the weights; a passage missing from a ranking gets 0 from it.
- ``rrf``: reciprocal-rank fusion, ``sum_r weight_r / (rrf_k + rank_r)`` (Cormack et al. 2009).

The default was chosen by the ``retrieval`` experiment (``benchmarks/retrieval/``): on HotpotQA
questions outside the tuning set, min-max fusion with equal weights had the best gold-title
recall@3. Ties are broken by corpus position, so results are deterministic.

On top of the fusion, a passage whose title the query names (:mod:`~.titles`) gains
``title_weight`` (half for a match up to a parenthetical when no title matches exactly). The
default, 2.0, is the most two min-max rankings with equal weights can give, so an exact title
match comes first: it made the shipped policy's sub-queries find a gold page at rank 1 in 72% of
cases instead of 63% (``benchmarks/retrieval/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from langgraph_parallel.retrieval.documents import Passage, Ranking, ranked_passages
from langgraph_parallel.retrieval.titles import TitleMatcher

__all__ = ["Fusion", "HybridIndex", "RankedIndex", "fuse"]

Fusion = Literal["minmax", "rrf"]


class RankedIndex(Protocol):
    """An index over a list of passages that ranks them by position (dense or lexical)."""

    passages: list[Passage]

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        """Return ``(position, score)`` pairs per query, best first."""
        ...


def fuse(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    *,
    method: Fusion = "minmax",
    rrf_k: float = 60.0,
) -> Ranking:
    """Fuse several rankings of one query into one, best first (module docstring has the rules).

    Args:
        rankings: One ranking per index, each ``(position, score)`` best first.
        weights: One weight per ranking.
        method: ``minmax`` or ``rrf``.
        rrf_k: The RRF constant (only for ``rrf``).

    Returns:
        ``(position, fused score)`` for every passage in any ranking, best first, ties by
        position.
    """
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        if method == "rrf":
            parts = [(j, weight / (rrf_k + rank)) for rank, (j, _) in enumerate(ranking, start=1)]
        else:
            scores = [s for _, s in ranking]
            low, span = min(scores), max(scores) - min(scores)
            # One passage, or all tied: each counts fully.
            parts = [(j, weight * ((s - low) / span if span > 0 else 1.0)) for j, s in ranking]
        for j, part in parts:
            fused[j] = fused.get(j, 0.0) + part
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


class HybridIndex:
    """Search with a lexical and a dense index over the same passages and fuse the rankings.

    A :class:`~langgraph_parallel.retrieval.search.Searcher`; ``score`` is the fused score.

    Args:
        lexical: A :class:`~.lexical.BM25Index`.
        dense: A :class:`~.dense.CorpusIndex` over the same passages, in the same order.
        weights: ``(lexical, dense)`` weights.
        method: ``minmax`` or ``rrf``.
        depth: Passages taken from each ranking before fusing.
        rrf_k: The RRF constant.
        title_weight: Added to the fused score of a passage whose title the query names (half
            for a match up to a parenthetical, see :mod:`~.titles`); 0 turns the lookup off.

    Raises:
        ValueError: The two indexes hold different passages.
    """

    def __init__(
        self,
        lexical: RankedIndex,
        dense: RankedIndex,
        *,
        weights: tuple[float, float] = (1.0, 1.0),
        method: Fusion = "minmax",
        depth: int = 50,
        rrf_k: float = 60.0,
        title_weight: float = 2.0,
    ) -> None:
        ids = [p.id for p in lexical.passages]
        if len(ids) != len(dense.passages) or ids != [p.id for p in dense.passages]:
            raise ValueError(
                "HybridIndex needs both indexes built over the same corpus and limit "
                f"({len(lexical.passages)} lexical vs {len(dense.passages)} dense passages)."
            )
        if method not in ("minmax", "rrf"):
            raise ValueError(f"method must be minmax or rrf (got {method!r}).")
        self.lexical, self.dense = lexical, dense
        self.passages = lexical.passages
        self.weights, self.method, self.depth, self.rrf_k = weights, method, depth, rrf_k
        self.title_weight = title_weight
        self.titles = TitleMatcher(self.passages) if title_weight else None

    def __len__(self) -> int:
        return len(self.passages)

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        """Return the fused ranking per query, cut to ``depth``."""
        pool = max(depth, self.depth)
        lexical = self.lexical.ranked(queries, pool)
        dense = self.dense.ranked(queries, pool)
        return [
            self._with_titles(
                query, fuse([lex, den], self.weights, method=self.method, rrf_k=self.rrf_k)
            )[:depth]
            for query, lex, den in zip(queries, lexical, dense, strict=True)
        ]

    def _with_titles(self, query: str, ranking: Ranking) -> Ranking:
        """Add the title bonus to ``ranking`` (a named page joins it if neither ranking had it)."""
        matches = self.titles.matches(query) if self.titles is not None else {}
        if not matches:
            return ranking
        scores = dict(ranking)
        for position, strength in matches.items():
            scores[position] = scores.get(position, 0.0) + self.title_weight * strength
        # A tie goes to the page the query names.
        return sorted(scores.items(), key=lambda i: (-i[1], -matches.get(i[0], 0.0), i[0]))

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search several queries; one list per query, best first, ``score`` = fused score."""
        return ranked_passages(self.passages, self.ranked(queries, k))
