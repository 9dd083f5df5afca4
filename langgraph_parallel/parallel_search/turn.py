"""One ParallelSearch turn: the sub-queries' cap, their search, errors, the observation, counters.

:class:`SearchTurn` is the one driver of a turn: :meth:`~SearchTurn.start` (this turn's
sub-queries and the earlier ones -> the searches to run, the cap applied here, once),
:meth:`~SearchTurn.read` (one sub-query's outcome -> its text) and :meth:`~SearchTurn.finish`
(the outcomes -> the observation, the counters, the artifact). The graph (``fan_out`` ->
one ``search`` branch per sub-query -> ``observe``) and the ``create_agent`` tool
(:mod:`.agent_tool`, one call) both call it, so the same policy reads byte-equal observations
and gets equal counters on both paths. Its rules: the cap and the note naming the
sub-queries over it (:func:`~langgraph_parallel.protocol.cap_queries`,
:func:`~langgraph_parallel.protocol.format_observation`), how a timed-out or failing
sub-query reads (:func:`timed_out`, :func:`failed`, :func:`error_observation`), how found
passages read (:func:`sub_query_text`), the rule that lists a passage found by several
sub-queries once (:func:`listed`; off by default on both paths, as the policies were trained
without it), the rule that a sub-query already searched in the conversation is not searched
again (:func:`repeated`, :data:`REPEATED`), the counters a turn adds (:func:`turn_counters`)
and the warning a failed search logs (:func:`log_search_error`).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_parallel.errors import clean_text, describe_error
from langgraph_parallel.parallel_search.context import SearchContext
from langgraph_parallel.protocol import cap_queries, format_observation
from langgraph_parallel.retrieval.documents import Passage, format_passages, listed_once

__all__ = [
    "LISTED_ELSEWHERE",
    "REPEATED",
    "SEARCH_POOL",
    "Outcome",
    "SearchTurn",
    "SubQueryText",
    "TurnEnd",
    "TurnStart",
    "error_observation",
    "failed",
    "listed",
    "log_search_error",
    "query_key",
    "repeated",
    "sub_query_text",
    "timed_out",
    "turn_counters",
]

SEARCH_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="lgp-search")
"""Where searches run (the graph's ``search`` node and the ``create_agent`` tool), so a hung
searcher can be abandoned after its timeout without blocking the graph."""

LISTED_ELSEWHERE = "Only documents listed under another sub-query."
"""A sub-query's text when every passage it found is listed under another sub-query."""

REPEATED = "Already searched earlier in this conversation; its documents are above."
"""A sub-query's text when the conversation searched it before (:func:`repeated`).

Measured why (issue 55): trajectories that searched one query four or five times filled their
context with the same passages and died of it. The repeat costs no search and a dozen tokens."""

_log = logging.getLogger(__name__)

Outcome = Sequence[Passage] | str
"""What one sub-query's search gave: its passages, or why there are none."""


def timed_out(timeout: float) -> str:
    """Return the error of a sub-query still unfinished after ``timeout`` seconds."""
    return f"search timed out after {timeout:g} s"


def failed(description: str) -> str:
    """Return the error of a sub-query whose search raised (``description`` says what)."""
    return f"search failed: {description}"


def error_observation(error: str) -> str:
    """Return what the model reads for a sub-query whose search failed (``error`` says how)."""
    return f"Search error ({error}); no documents."


@dataclass
class SubQueryText:
    """What the observation shows for one sub-query, and what its records keep.

    Attributes:
        text: The sub-query's part of the observation.
        titles: Titles of the passages shown (none after an error).
        error: Why there are no passages (``None`` when the search worked).
    """

    text: str
    titles: list[str] = field(default_factory=list)
    error: str | None = None


def sub_query_text(
    outcome: Outcome, *, passage_sentences: int | None, found: int | None = None
) -> SubQueryText:
    """Return how one sub-query's outcome reads in the observation.

    The searches behind it were checked (a searcher returning anything but passages fails the
    run: :func:`~langgraph_parallel.retrieval.search.checked_results`); a passage that still
    cannot be shown is reported like a failing tool, never raised.

    Args:
        outcome: Its passages (after :func:`listed`), or why there are none.
        passage_sentences: Show each passage's title and first N sentences (``None``: whole).
        found: How many passages its search found before :func:`listed` (``None``: as many as
            shown); a sub-query all of whose passages are listed elsewhere says so.
    """
    if not isinstance(outcome, str):
        try:
            text = format_passages(outcome, passage_sentences=passage_sentences)
            if not outcome and found:
                text = LISTED_ELSEWHERE
            return SubQueryText(clean_text(text), [clean_text(str(p.title)) for p in outcome])
        except Exception as exc:
            outcome = failed(describe_error(exc))
    return SubQueryText(error_observation(outcome), [], outcome)


def listed(outcomes: Sequence[Outcome], dedupe: bool) -> list[Outcome]:
    """Return the outcomes with each passage kept under one sub-query when ``dedupe``.

    The passage stays under the sub-query that ranks it highest
    (:func:`~langgraph_parallel.retrieval.documents.listed_once`); errors stay as they are.
    """
    found = [list(o) for o in outcomes if not isinstance(o, str)]
    if not dedupe or not found:
        return list(outcomes)
    try:
        kept = iter(listed_once(found))
    except Exception:  # a passage that cannot be read is reported per sub-query, by sub_query_text
        return list(outcomes)
    return [o if isinstance(o, str) else next(kept) for o in outcomes]


def query_key(query: str) -> str:
    """Return what makes two sub-queries the same search: the words, case and spacing aside."""
    return " ".join(query.split()).casefold()


def repeated(queries: Sequence[str], earlier: Iterable[str]) -> list[bool]:
    """Return, for each of this turn's ``queries``, whether ``earlier`` turns searched it."""
    seen = {query_key(q) for q in earlier}
    return [query_key(q) in seen for q in queries]


def turn_counters(sub_queries: int, repeats: int = 0, errors: int = 0) -> dict[str, int]:
    """Return the counters one searching turn adds.

    ``turns``, ``sub_queries`` (the turn's sub-queries after the cap, repeats included),
    ``parallel_turns`` (the turns that really fanned out: more than one sub-query),
    ``repeat_skips`` (sub-queries not searched again, :data:`REPEATED`) and ``search_errors``
    (sub-queries whose search raised or timed out, so the model read an error in place of
    documents). The last two only when there were some, so runs without them keep the
    counters they always had; read them with ``counters.get("search_errors", 0)``.
    """
    counters = {"turns": 1, "sub_queries": sub_queries, "parallel_turns": int(sub_queries > 1)}
    if repeats:
        counters["repeat_skips"] = repeats
    if errors:
        counters["search_errors"] = errors
    return counters


def log_search_error(query: str, error: str) -> None:
    """Log a sub-query whose search failed (``error`` says how) as a warning.

    The run goes on (the model reads the error), so without this line a broken or unreachable
    searcher would only show in the counters (``search_errors``) of a run that still answers.
    """
    _log.warning("sub-query %r got no documents, %s; the run goes on", query, error)


@dataclass(frozen=True)
class TurnStart:
    """A turn's searches to run: what :meth:`SearchTurn.start` decided.

    Attributes:
        number: The turn's number in the question (1 for its first search).
        queries: The sub-queries of the turn, after the cap, in the model's order.
        skipped: Those over the cap, named in the observation, not searched.
        repeats: For each of ``queries``, whether an earlier turn searched it (not again).
    """

    number: int
    queries: list[str]
    skipped: list[str]
    repeats: list[bool]

    @property
    def todo(self) -> list[tuple[int, str]]:
        """The sub-queries to search, with their places in the turn."""
        return [
            (i, q)
            for i, (q, again) in enumerate(zip(self.queries, self.repeats, strict=True))
            if not again
        ]


@dataclass(frozen=True)
class TurnEnd:
    """A finished turn: what the model reads and what the turn counts.

    Attributes:
        observation: The ``<information>`` text.
        shown: Each sub-query's part of it (with its titles and error).
        counters: What the turn adds to the run's counters (:meth:`SearchTurn.finish`).
        duplicate_passages: Passages listed once instead of under several sub-queries.
    """

    observation: str
    shown: list[SubQueryText]
    counters: dict[str, int]
    duplicate_passages: int = 0

    def artifact(self, start: TurnStart) -> dict[str, Any]:
        """Return the ``create_agent`` tool's artifact of the turn (its counters and records)."""
        return {
            "counters": dict(self.counters),
            "queries": list(start.queries),
            "skipped": list(start.skipped),
            "titles": [s.titles for s in self.shown],
            "errors": [s.error for s in self.shown],
            "duplicate_passages": self.duplicate_passages,
        }


class SearchTurn:
    """The one driver of a ParallelSearch turn, for the graph's nodes and the tool alike.

    Args:
        settings: The turn's settings (the cap, ``skip_repeats``, ``passage_sentences``,
            ``dedupe_passages``, ``search_timeout``).
    """

    def __init__(self, settings: SearchContext) -> None:
        self.settings = settings

    def start(
        self, queries: Sequence[str], earlier: Iterable[str] = (), *, number: int = 1
    ) -> TurnStart:
        """Return the turn's searches: ``queries`` capped, those ``earlier`` turns ran marked.

        Args:
            queries: The sub-queries the model wrote (split and de-duplicated).
            earlier: The sub-queries earlier turns of the question (or conversation) searched;
                ignored when the settings' ``skip_repeats`` is off.
            number: The turn's number in the question.
        """
        run, skipped = cap_queries(list(queries), self.settings.max_parallel_queries)
        again = repeated(run, earlier if self.settings.skip_repeats else [])
        return TurnStart(number, run, skipped, again)

    def timed_out(self) -> str:
        """Return the error of a sub-query still unfinished after the turn's timeout."""
        return timed_out(self.settings.search_timeout)

    def read(self, query: str, outcome: Outcome, found: int | None = None) -> SubQueryText:
        """Return how ``query``'s outcome reads; a failure is logged (:func:`log_search_error`)."""
        shown = sub_query_text(
            outcome, passage_sentences=self.settings.passage_sentences, found=found
        )
        if shown.error is not None:
            log_search_error(query, shown.error)
        return shown

    def finish(self, start: TurnStart, outcomes: Sequence[Outcome | SubQueryText]) -> TurnEnd:
        """Return the finished turn from each sub-query's outcome, in ``start.queries`` order.

        An outcome is the passages found or the error (read here, after :func:`listed`), or a
        :class:`SubQueryText` already read (a graph branch's, :meth:`read`); a repeat's is not
        read (:data:`REPEATED`). Counters: :func:`turn_counters`, ``searches`` 1,
        ``first_turn_parallel`` (1 when the question's first turn searched more than one
        sub-query: the paper's decomposition rate) and ``duplicate_passages`` when some were
        listed once.
        """
        found = [
            o
            for o, again in zip(outcomes, start.repeats, strict=True)
            if not again and not isinstance(o, (str, SubQueryText))
        ]
        kept = iter(listed(found, self.settings.dedupe_passages))
        shown: list[SubQueryText] = []
        duplicates = 0
        for query, outcome, again in zip(start.queries, outcomes, start.repeats, strict=True):
            if again:
                shown.append(SubQueryText(REPEATED))
            elif isinstance(outcome, SubQueryText):
                shown.append(outcome)
            elif isinstance(outcome, str):
                shown.append(self.read(query, outcome))
            else:
                listed_here = next(kept)
                sub = self.read(query, listed_here, found=len(outcome))
                duplicates += len(outcome) - len(listed_here) if sub.error is None else 0
                shown.append(sub)
        errors = sum(s.error is not None for s in shown)
        size = len(start.queries)
        counters = {
            **turn_counters(size, sum(start.repeats), errors),
            "searches": 1,
            "first_turn_parallel": int(size > 1 and start.number == 1),
        }
        if duplicates:
            counters["duplicate_passages"] = duplicates
        observation = format_observation(
            [(q, s.text) for q, s in zip(start.queries, shown, strict=True)],
            start.skipped,
            limit=self.settings.max_parallel_queries,
        )
        return TurnEnd(observation, shown, counters, duplicates)
