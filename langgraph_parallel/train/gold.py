"""Gold search plans from benchmark rows with supporting facts (input of the SFT synthesis).

A :class:`GoldPlan` is what a teacher would do for one question: which titles to look up in
which turn, and the supporting sentence of each title to ground the ``<think>`` text in.

- Comparison questions (HotpotQA ``comparison``; 2Wiki ``comparison``, ``bridge_comparison``):
  the entities are independent, so a ``parallel`` plan searches them in one turn; 2Wiki
  ``bridge_comparison`` needs a second turn for the entities the first one revealed (the
  directors of two films). A ``sequential`` plan searches one title per turn.
- Chains (HotpotQA ``bridge``; 2Wiki ``compositional``/``inference``; MuSiQue): one title per
  turn in hop order, each later title being what the previous paragraph revealed.

The query of a hop is the gold paragraph's title: with the bundled corpus a title query finds its
paragraph first nearly always, and the synthesis keeps only trajectories where every gold
paragraph was actually retrieved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph_parallel.eval.contexts import row_paragraphs
from langgraph_parallel.eval.datasets import QUESTION_FORMAT, canonical_dataset, classify
from langgraph_parallel.jsonl import read_rows

Policy = Literal["parallel", "sequential"]
POLICIES: tuple[Policy, ...] = ("parallel", "sequential")


@dataclass(frozen=True)
class GoldQuestion:
    """One benchmark row reduced to what a gold trajectory needs.

    Attributes:
        id: The row's id.
        question: Question text.
        answer: Gold answer.
        dataset: Canonical dataset name.
        type: Dataset question type.
        hops: Titles to look up, grouped by dependency level: every title of ``hops[i]`` can be
            searched once ``hops[:i]`` were read (a comparison has one level of two titles).
        facts: Title -> its supporting sentences.
        context: Title -> paragraph text, for building a corpus from the rows' own contexts.
        marked: Titles whose ``facts`` are the row's marked supporting sentences; the others'
            are their whole paragraph (rows without ``supporting_facts``).
    """

    id: str
    question: str
    answer: str
    dataset: str
    type: str | None
    hops: tuple[tuple[str, ...], ...]
    facts: dict[str, tuple[str, ...]]
    context: dict[str, str]
    marked: frozenset[str] = frozenset()

    @property
    def question_class(self) -> str:
        """``parallelizable`` or ``sequential`` (ARCHITECTURE.md section 4)."""
        return classify(self.dataset, self.type)

    def turns(self, policy: Policy) -> list[list[str]]:
        """Titles per search turn: a level at once (``parallel``) or one title per turn."""
        if policy == "parallel":
            return [list(level) for level in self.hops]
        return [[title] for level in self.hops for title in level]


def gold_questions(path: str | Path) -> Iterator[GoldQuestion]:
    """Yield a :class:`GoldQuestion` for every row of ``path`` that has a usable gold plan."""
    dataset = canonical_dataset(Path(path).name) or ""
    for row in read_rows(path, what="question file", fmt=QUESTION_FORMAT):
        gold = gold_question(row, dataset)
        if gold is not None:
            yield gold


def gold_question(row: dict[str, Any], dataset: str) -> GoldQuestion | None:
    """Build the plan of one row, or ``None`` when its type or its facts do not give one."""
    context = row_paragraphs(row)
    facts, marked = _facts(row, context)
    titles = [t for t in row.get("supporting_titles") or [] if t in context]
    kind = row.get("type")
    if dataset == "musique":
        hops = _musique_hops(row)
    elif classify(dataset, kind) == "parallelizable":
        if len(titles) == 2:
            hops = (tuple(titles),)
        elif len(titles) == 4:  # 2Wiki bridge_comparison: two films, then their two people
            hops = (tuple(titles[:2]), tuple(titles[2:]))
        else:
            return None
    elif classify(dataset, kind) == "sequential" and len(titles) >= 2:
        hops = tuple((t,) for t in _chain_order(str(row["question"]), titles, row, facts))
    else:
        return None
    if not hops or any(t not in facts for level in hops for t in level):
        return None
    return GoldQuestion(
        id=str(row["id"]),
        question=str(row["question"]),
        answer=str(row["answer"]),
        dataset=dataset,
        type=None if kind is None else str(kind),
        hops=hops,
        facts=facts,
        context=context,
        marked=frozenset(marked),
    )


def _facts(
    row: dict[str, Any], context: dict[str, str]
) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """Return title -> supporting sentences, and the titles whose sentences the row marks.

    A supporting title without marked sentences gets its whole paragraph.
    """
    sentences = {str(p["title"]): list(p.get("sentences") or []) for p in row.get("context") or []}
    out: dict[str, list[str]] = {}
    for title, index in row.get("supporting_facts") or []:
        sents = sentences.get(title, [])
        if isinstance(index, int) and 0 <= index < len(sents):
            out.setdefault(title, []).append(sents[index].strip())
    marked = set(out)
    for title in row.get("supporting_titles") or []:
        if title not in out and context.get(title):
            out[title] = [context[title]]
    facts = {title: tuple(s for s in sents if s) for title, sents in out.items()}
    return facts, marked & {title for title, sents in facts.items() if sents}


def _chain_order(
    question: str, titles: list[str], row: dict[str, Any], facts: dict[str, tuple[str, ...]]
) -> list[str]:
    """Order the titles of a chain: the one the question names first, the revealed one after.

    2Wiki rows carry ``evidences`` triples (subject, relation, object) in hop order. HotpotQA
    bridge rows do not: of two titles, the one named in the other's supporting sentence comes
    second (the first paragraph reveals it); failing that, the title sharing more words with the
    question comes first.
    """
    evidences = row.get("evidences") or []
    if evidences:
        order = [e[0] for e in evidences if e and e[0] in titles]
        rest = [t for t in titles if t not in order]
        return list(dict.fromkeys(order + rest))
    if len(titles) == 2:
        a, b = titles
        a_reveals_b = _name(b) in " ".join(facts.get(a, ())).lower()
        b_reveals_a = _name(a) in " ".join(facts.get(b, ())).lower()
        if a_reveals_b != b_reveals_a:
            return [a, b] if a_reveals_b else [b, a]
    words = set(_words(question))
    return sorted(titles, key=lambda t: -len(words & set(_words(t))))


def _name(title: str) -> str:
    """Strip a title's disambiguation: ``Charles Saunders (director)`` -> ``charles saunders``."""
    return re.sub(r"\s*\(.*\)$", "", title).strip().lower()


def _musique_hops(row: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    context = row.get("context") or []
    hops = []
    for step in row.get("question_decomposition") or []:
        index = step.get("paragraph_support_idx")
        if not isinstance(index, int) or not 0 <= index < len(context):
            return ()
        hops.append((str(context[index]["title"]),))
    return tuple(hops)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())
