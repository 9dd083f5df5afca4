"""What an answer is, for two vote joins: answers only, and the kind the question asks for.

Issue 55's evidence candidates; :mod:`.joins` votes with these weights offline on a row's
``join_inputs`` and question:

- **answers only**: a vote that leaves out what is not an answer: the repeat rule's own
  observation copied as an answer, a sentence (more than six words), or words all found in the
  question (these rows are bridge questions, whose answer is rarely in the question: 2 of the
  150 golds).
- **typed**: the question names the kind of thing it asks for (``what stadium``, ``which State
  capital``); an answer that names it itself (``Sam Boyd Stadium``), or whose own corpus page
  says it is one (``Jaipur is the capital ...``), votes whole; an answer whose page says it is
  something else (``... is an American rock band``) votes a quarter; an answer without a page, or
  a question without a kind (``who``, ``what nationality``), votes whole.

The corpus is the bundled HotpotQA one the rows searched; the page is the one titled as the
answer, and what it says the subject is comes from :func:`~langgraph_parallel.train.reading.
what_it_is` (the teacher's reading of a first sentence).
"""

from __future__ import annotations

import gzip
import json
import re
from functools import cache

from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.parallel_search.turn import REPEATED
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.train.reading import singular, what_it_is

MISMATCH_WEIGHT = 0.25
"""The vote of an answer whose own page says it is another kind of thing than asked."""

_ASKED = re.compile(r"\b(?:what|which)\s+((?:[\w'-]+\s+){0,3})", re.I)
_ENDS_KIND = frozenset(
    re.findall(
        r"\w+",
        "is was are were did does do has had have in of on at by for from to that which who whose "
        "the a an and or with as based located",
    )
)
"""Words that end the words after "what" (a verb or a preposition follows the kind)."""
_NOT_A_KIND = frozenset(
    re.findall(r"\w+", "nationality year type kind name one country time date number genre")
)
"""Words after "what" that name no kind an answer's page states (or that every page matches)."""


def asked_kind(question: str) -> frozenset[str]:
    """Return the singular words that name what the question asks for (empty if it names none)."""
    found = _ASKED.search(question)
    words: list[str] = []
    for word in (found.group(1) if found else "").lower().split():
        if word in _ENDS_KIND:
            break
        if not word.isdigit():
            words.append(singular(word))
    return frozenset(words) - _NOT_A_KIND


@cache
def _kinds() -> dict[str, frozenset[str]]:
    """Normalised page title -> the words of what its first sentence says the subject is."""
    path = repo_data_dir() / "hotpotqa_dev_distractor_corpus.jsonl.gz"
    kinds: dict[str, frozenset[str]] = {}
    with gzip.open(path, "rt") as lines:
        for line in lines:
            page = json.loads(line)
            what = what_it_is(page["sentences"])
            if what:
                title = normalize_answer(re.sub(r"\s*\(.*\)$", "", page["title"]))
                words = {singular(w) for w in normalize_answer(what).split()}
                kinds[title] = kinds.get(title, frozenset()) | words
    return kinds


def typed(answer: str, question: str) -> bool | None:
    """Whether the answer is the kind the question asks for; ``None`` when nothing says."""
    asked = asked_kind(question)
    key = normalize_answer(answer)
    if not asked or not key:
        return None
    if asked & {singular(w) for w in key.split()}:
        return True
    page = _kinds().get(key)
    return None if page is None else bool(asked & page)


def is_answer(answer: str, question: str) -> bool:
    """Whether a bridge question's answer is one: not the repeat notice, a sentence or an echo."""
    key = normalize_answer(answer)
    return bool(
        key
        and normalize_answer(REPEATED) not in key
        and len(key.split()) <= 6
        and f" {key} " not in f" {normalize_answer(question)} "
    )
