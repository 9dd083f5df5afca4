"""The teacher's last ``<think>``: the values read, compared, then the conclusion.

A 135M policy trained on "restate the evidence, then answer" learned to quote both paragraphs
and then guess ("an American director" and "an American filmmaker" -> "no"). The last step of a
gold trajectory therefore spells the reading out, in the words a small model can copy:

- a comparison of dates: ``Arthur's Magazine: 1844; First for Women: 1989; 1844 is earlier than
  1989 -> Arthur's Magazine``;
- a yes/no comparison of nationalities: ``Scott Derrickson: American; Ed Wood: American; both
  American -> yes``;
- a yes/no question of kind, "are A and B both writers?": what each first sentence says its
  subject is, ``Anchee Min: Chinese-American writer; Roger Waters: English musician; not both
  writers -> no``;
- anything else: the supporting sentences (the answer's first), then ``-> ANSWER``.

The values come from the gold supporting sentences only (never from the answer), so the step
states evidence the trajectory actually retrieved. No ``<`` (the action grammar forbids it in
think text), so "earlier than" rather than a sign.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["DEMONYMS", "conclusion", "reading", "singular", "what_it_is"]

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
# The common demonyms of HotpotQA/2Wiki nationality questions; values not found here fall back
# to the generic form.
DEMONYMS = (
    "American",
    "Australian",
    "Austrian",
    "Belgian",
    "Brazilian",
    "British",
    "Canadian",
    "Chinese",
    "Danish",
    "Dutch",
    "English",
    "Filipino",
    "Finnish",
    "French",
    "German",
    "Greek",
    "Indian",
    "Irish",
    "Israeli",
    "Italian",
    "Japanese",
    "Korean",
    "Mexican",
    "New Zealand",
    "Nigerian",
    "Norwegian",
    "Pakistani",
    "Polish",
    "Portuguese",
    "Russian",
    "Scottish",
    "South African",
    "Soviet",
    "Spanish",
    "Swedish",
    "Swiss",
    "Turkish",
    "Ukrainian",
    "Welsh",
)
_DEMONYM = re.compile(r"\b(" + "|".join(sorted(DEMONYMS, key=len, reverse=True)) + r")\b")
# Questions whose comparison is one of time, or of nationality (the rules below read only those).
_EARLIER_WORDS = re.compile(r"\b(first|earlier|earliest|older|oldest|before)\b", re.I)
_LATER_WORDS = re.compile(
    r"\b(younger|youngest|later|latest|newer|newest|more recent|most recent)\b", re.I
)
_DEATH_WORDS = re.compile(r"\b(died|die|death)\b", re.I)
_NATIONALITY_WORDS = re.compile(r"\b(nationality|same country|citizens?)\b", re.IGNORECASE)
# "Are A and B both writers?": a kind of at most three words after "both", ending the question.
_BOTH = re.compile(r"\band\b.+\bboth\s+(?P<kind>[A-Za-z-]+(?: [A-Za-z-]+){0,2})\s*\?\s*$")
_IS_A = re.compile(r"\b(?:is|was)\s+(?:an?|the)\s+(?P<what>[^,.;:()]+)")
# Where "is a(n) ..." stops naming the kind: a clause, or what the subject is known for.
_WHAT_ENDS = re.compile(
    r"\s(?:who|which|that|whose|best|known|born|based|from|of|in|for|with|about|by|devoted|"
    r"directed|written|published|released|produced|founded|located|originally)\s"
)


def _name(title: str) -> str:
    return re.sub(r"\s*\(.*\)$", "", title).strip()


def _year(sentences: Sequence[str], nth: int) -> str | None:
    """Return the ``nth`` year of the first sentence that has that many."""
    for sentence in sentences:
        years = _YEAR.findall(sentence)
        if len(years) > nth:
            return str(years[nth])
    return None


def _first(pattern: re.Pattern[str], sentences: Sequence[str]) -> str | None:
    for sentence in sentences:
        if found := pattern.search(sentence):
            return found.group(1)
    return None


def singular(word: str) -> str:
    """Return the singular of a plural noun, by its ending (``actresses`` -> ``actress``)."""
    word = word.lower()
    if word.endswith("men"):
        return word[:-3] + "man"
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def what_it_is(sentences: Sequence[str]) -> str | None:
    """Return what the first sentence says its subject is, up to a clause, in at most seven words.

    ``X (born 1950) is an American film director who ...`` -> ``American film director``.
    """
    found = _IS_A.search(sentences[0]) if sentences else None
    if found is None:
        return None
    what = _WHAT_ENDS.split(f" {found['what'].strip()} ")[0].split()
    return " ".join(what[:7]) or None


def _both(
    question: str, titles: Sequence[str], facts: dict[str, tuple[str, ...]], answer: str
) -> str | None:
    """Return ``A: what A is; B: what B is; (not) both KIND -> yes/no``, or ``None``.

    ``None`` unless each sentence says what its subject is and whether the kind's noun is in
    both agrees with the gold answer.
    """
    asked = _BOTH.search(question)
    if asked is None:
        return None
    kind = asked["kind"].lower()
    if re.search(r"\b(?:about|of|in|from|by|with|for|to|on)\b", kind):
        return None  # "documentaries about war": more than what each subject is
    noun = re.compile(rf"\b{re.escape(singular(kind.split()[-1]))}s?\b", re.IGNORECASE)
    whats = [what_it_is(facts.get(t, ())) for t in titles]
    if not all(whats):
        return None
    both = all(noun.search(what or "") for what in whats)
    if both != (answer.lower() == "yes"):
        return None
    link = f"both {kind}" if both else f"not both {kind}"
    (a, b), (wa, wb) = titles, whats
    return f"{_name(a)}: {wa}; {_name(b)}: {wb}; {link} -> {answer}"


def conclusion(
    question: str, titles: Sequence[str], facts: dict[str, tuple[str, ...]], answer: str
) -> str | None:
    """State the compared values and the conclusion, or ``None`` when no rule reads them.

    Args:
        question: The question (which comparison it asks for).
        titles: The titles compared (the last turn's), in the order they were searched.
        facts: Title -> its supporting sentences.
        answer: The gold answer the conclusion must end with.
    """
    if len(titles) != 2:
        return None
    a, b = titles
    if answer.strip().lower() in ("yes", "no"):
        if not _NATIONALITY_WORDS.search(question):
            return _both(question, titles, facts, answer)
        nationality = [_first(_DEMONYM, facts.get(t, ())) for t in titles]
        va, vb = nationality
        if va and vb and (va == vb) == (answer.lower() == "yes"):
            link = f"both {va}" if va == vb else f"{va} vs {vb}"
            return f"{_name(a)}: {va}; {_name(b)}: {vb}; {link} -> {answer}"
        return None
    earlier, later = bool(_EARLIER_WORDS.search(question)), bool(_LATER_WORDS.search(question))
    if earlier == later:  # not a question of time, or one naming both directions
        return None
    # "Who died first": the second year of "(May 7, 1890 - February 20, 1959)".
    nth = 1 if _DEATH_WORDS.search(question) else 0
    ya, yb = (_year(facts.get(t, ()), nth) for t in titles)
    by_name = {_name(a).lower(): ya, _name(b).lower(): yb}
    picked = by_name.get(_name(answer).lower())
    if not (ya and yb and picked) or ya == yb:
        return None
    other = yb if picked == ya else ya
    order = "earlier" if int(picked) < int(other) else "later"
    if (order == "earlier") != earlier:  # the years read disagree with the answer: say nothing
        return None
    return f"{_name(a)}: {ya}; {_name(b)}: {yb}; {picked} is {order} than {other} -> {answer}"


def reading(
    question: str,
    titles: Sequence[str],
    facts: dict[str, tuple[str, ...]],
    answer: str,
    budget: int,
    grounded: Callable[[int], str],
) -> str:
    """Write the last think of a gold trajectory, at most ``budget`` characters.

    Args:
        question: The question.
        titles: The titles read in the last turn.
        facts: Title -> its supporting sentences.
        answer: The gold answer.
        budget: Characters allowed.
        grounded: The supporting sentences shortened to a given number of characters (the
            teacher's usual restatement, the answer's sentence first).
    """
    stated = conclusion(question, titles, facts, answer)
    if stated is not None and len(stated) <= budget:
        return stated.replace("<", "(")
    tail = f" -> {answer}"
    return grounded(max(0, budget - len(tail))).rstrip() + tail
