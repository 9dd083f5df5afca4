"""Exact title lookup: a query that names a page's title finds that page first.

The agent's sub-queries are mostly entity names, and the trained policies were taught to write
gold page titles (55% of the shipped policy's HotpotQA sub-queries equal a corpus title). The
fused ranking does not always put that page first: dense MiniLM does not know rare names, and its
confident miss can outweigh BM25's hit (for "Scott Derrickson", the hybrid index's top hit was
"Scott Carson", a goalkeeper, whose text the agent then read as the director's). Search engines
answer such queries with a title lookup (Wikipedia's "go to page"); no retrieval library we use
offers one apart from a full search engine, and it is a dictionary, so it is written here.

Titles and queries are compared after Unicode compatibility folding, accent and case removal,
and with punctuation turned into spaces. A query that names no title exactly may still name one
up to a trailing parenthetical on either side ("Ed Wood" and "Ed Wood (film)", "Babycham
(film)" and "Babycham"); such a match counts half. When a title matches exactly, pages that
share only its base name are other entities ("John de Burgh (bishop)" for "John de Burgh (died
1313)") and are not boosted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from langgraph_parallel.retrieval.documents import Passage

__all__ = ["TitleMatcher", "normalize_title"]

_PUNCTUATION = re.compile(r"[^\w\s]")
_TRAILING_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")
EXACT, BASE = 1.0, 0.5


def normalize_title(text: str) -> str:
    """Fold ``text`` for comparison: NFKD, no accents, casefolded, punctuation as spaces."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    return " ".join(_PUNCTUATION.sub(" ", folded).split())


def _base(text: str) -> str:
    return normalize_title(_TRAILING_PARENTHETICAL.sub("", text))


class TitleMatcher:
    """Which passages' titles a query names.

    Args:
        passages: The indexed passages; untitled ones never match.
    """

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._exact: dict[str, list[int]] = {}
        self._base: dict[str, list[int]] = {}
        for position, passage in enumerate(passages):
            for table, key in (
                (self._exact, normalize_title(passage.title)),
                (self._base, _base(passage.title)),
            ):
                if key:
                    table.setdefault(key, []).append(position)

    def matches(self, query: str) -> dict[int, float]:
        """Return ``{position: strength}``: 1.0 for an exact title, else 0.5 up to a (...)."""
        exact = self._exact.get(normalize_title(query))
        if exact:
            return dict.fromkeys(exact, EXACT)
        return dict.fromkeys(self._base.get(_base(query), []), BASE)
