"""Title lookup: which passages a query names, and how the hybrid index ranks them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from langgraph_parallel.retrieval import HybridIndex, Passage
from langgraph_parallel.retrieval.documents import Ranking
from langgraph_parallel.retrieval.titles import TitleMatcher, normalize_title

PASSAGES = [
    Passage("p0", "Scott Carson", "Scott Carson is an English goalkeeper."),
    Passage("p1", "Scott Derrickson", "Scott Derrickson is an American director."),
    Passage("p2", "Ed Wood (film)", "Ed Wood is a 1994 film."),
    Passage("p3", "Ed Wood", "Edward Wood Jr. was an American filmmaker."),
    Passage("p4", "Jean-Loup Chrétien", "Jean-Loup Chrétien is a French astronaut."),
    Passage("p5", "", "An untitled paragraph."),
    Passage("p6", "Babycham", "Babycham is a perry."),
]


def test_normalize_title_folds_case_accents_and_punctuation() -> None:
    assert normalize_title("Jean-Loup  Chrétien") == "jean loup chretien"
    assert normalize_title("ﬁlm: ED WOOD!") == "film ed wood"
    assert normalize_title("?!") == ""


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Scott Derrickson", {1: 1.0}),
        ("  scott DERRICKSON ", {1: 1.0}),
        ("jean loup chretien", {4: 1.0}),
        # An exact title leaves pages sharing only its base name (other entities) alone.
        ("Ed Wood", {3: 1.0}),
        ("Ed Wood (film)", {2: 1.0}),
        # Without an exact title, a match up to a parenthetical counts half: a parenthetical
        # the policy made up still finds the page, a bare name finds its disambiguated pages.
        ("Babycham (film)", {6: 0.5}),
        ("Jean-Loup Chrétien (astronaut)", {4: 0.5}),
        ("ed wood!", {3: 1.0}),
        ("Ed Wood (director)", {3: 0.5, 2: 0.5}),
        ("Scott", {}),
        ("Scott Derrickson nationality", {}),
        ("", {}),  # never the untitled passage
        ("()", {}),
    ],
)
def test_matches_names_the_passages_with_that_title(query: str, expected: dict) -> None:
    assert TitleMatcher(PASSAGES).matches(query) == expected


class FixedRankings:
    """A ranking half that returns fixed rankings per query."""

    def __init__(self, rankings: dict[str, Ranking]) -> None:
        self.passages = PASSAGES
        self.rankings = rankings

    def ranked(self, queries: Sequence[str], depth: int) -> list[Ranking]:
        return [self.rankings.get(q, [])[:depth] for q in queries]


def test_a_named_page_comes_first_even_when_neither_ranking_has_it() -> None:
    # Both halves prefer the goalkeeper, and the dense half has never heard of Derrickson.
    lexical = FixedRankings({"Scott Derrickson": [(0, 3.0), (4, 1.0)]})
    dense = FixedRankings({"Scott Derrickson": [(0, 0.9), (4, 0.1)], "Ed Wood": [(2, 0.5)]})
    hybrid = HybridIndex(lexical, dense)
    hits = hybrid.ranked(["Scott Derrickson", "Ed Wood", "Scott"], 3)
    # Derrickson joins with the full bonus (2.0), level with the goalkeeper top of both
    # rankings (1.0 + 1.0); a tie goes to the named page.
    assert hits[0] == [(1, 2.0), (0, 2.0), (4, 0.0)]
    # "Ed Wood": the page of that name (bonus 2.0), then the film on its fused score alone.
    assert hits[1] == [(3, 2.0), (2, 1.0)]
    assert hits[2] == []
    off = HybridIndex(lexical, dense, title_weight=0.0)
    assert off.titles is None
    assert off.ranked(["Scott Derrickson", "Ed Wood"], 3) == [[(0, 2.0), (4, 0.0)], [(2, 1.0)]]
