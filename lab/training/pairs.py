"""Comparison questions made from pairs of corpus paragraphs, for training the reading.

The shipped data has 472 comparisons and 119 yes/no questions among 1,939 trajectories, and the
policy reads comparisons wrong ("an American director" and "an American filmmaker" -> "no").
This builds more, from the bundled HotpotQA corpus, in HotpotQA's own row format so that
``train grpo --dataset`` and ``--gold-mix`` read them like any comparison:

- "Were A and B of the same nationality?" from two people whose first sentence reads "A (...) is
  / was a(n) DEMONYM ROLE", both of the same role, the parenthesis giving a year of their
  life (else films, bands and magazines came too); yes and no balanced. Pairs whose demonyms
  overlap (English, Scottish, Welsh with British; Soviet with Russian or Ukrainian) are left
  out: their answer is a matter of reading, not of the sentences.
- "Who was born first, A or B?" from two people whose parenthesis gives a birth year ("born
  July 16, 1966" or "1924 - 1978"); equal years are left out. Half name the earlier one first.
- "Are A and B both directors?" from two people whose first sentence says what they are
  (:func:`~langgraph_parallel.train.reading.what_it_is`): yes when both are one of the
  :data:`KINDS`' words, no when the other is of another family and no word of the first one's
  family is in the other's sentence (an actress is not asked about as "not an actor"); half
  yes, and the "no" side named first in half of the others. HotpotQA asks 42 of its 46 yes/no
  comparisons this way, and the first two kinds taught nothing there
  (``benchmarks/sft/lever-pairs``).

The answer comes from those first sentences only, which the rows mark as the supporting facts.
No paragraph whose name an evaluation question mentions, or that is a supporting or context
paragraph of one, is used (the bundled 300, the GRPO dev split, the held-out chains, the 2Wiki
sample), and neither are the README question's people.

Usage::

    .venv/bin/python -m lab.training.pairs --out data/hotpotqa_corpus_pairs.jsonl.gz [--n 200]
    .venv/bin/python -m lab.training.pairs --show 50   # print a sample to check by reading
    .venv/bin/python -m lab.training.pairs --answer 50 [--model smollm2-parallel]
        # how a policy answers them, by kind and gold answer (rows: benchmarks/rl/pairs/)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import repo_data_dir
from langgraph_parallel.retrieval.corpus import bundled_corpus_path
from langgraph_parallel.train.questions import README_ENTITIES
from langgraph_parallel.train.reading import DEMONYMS, what_it_is

SHARED = repo_data_dir().parent.parent / "shared" / "data"
EVALUATION = (
    repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz",
    repo_data_dir() / "grpo_dev64.jsonl.gz",
    repo_data_dir() / "bench_heldout_chains.jsonl.gz",
    SHARED / "2wikimultihopqa_dev_sample500.jsonl.gz",
)
"""Question files whose questions, and whose paragraphs, stay out of the pairs."""
CONTEXTS = SHARED / "hotpotqa_dev_distractor_subset.jsonl.gz"
"""Where the bundled 300's context paragraphs are read (its own rows carry only the titles)."""
OVERLAPPING = (
    frozenset({"English", "Scottish", "Welsh", "British"}),
    frozenset({"Soviet", "Russian", "Ukrainian"}),
)
_DEMONYM = "|".join(sorted(map(re.escape, DEMONYMS), key=len, reverse=True))
_PERSON = re.compile(
    r"^(?P<name>[^(,]+?)\s*(?:\((?P<paren>[^)]*)\))?,?\s+(?:is|was)\s+an?\s+"
    rf"(?P<demonym>{_DEMONYM})\s+(?P<role>[a-z]+)"
)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)\b")
KINDS = {
    "acting": ("actor", "actress", "comedian"),
    "writing": ("writer", "author", "novelist", "poet", "journalist", "screenwriter"),
    "music": ("singer", "musician", "pianist", "composer"),
    "film": ("director", "cinematographer"),
    "sport": ("footballer", "coach", "boxer", "cricketer", "cyclist"),  # "player": of what?
    "public life": ("politician", "lawyer", "businessman"),
    "science": ("engineer", "physicist", "scientist"),
}
"""Family -> the words a "both" question asks about; a "no" pairs two families."""


@dataclass(frozen=True)
class Person:
    """What a paragraph's first sentence says of its subject."""

    title: str
    name: str
    demonym: str
    role: str
    born: int | None
    dead: bool
    sentence: str
    paragraph: list[str]


def person(title: str, sentences: list[str]) -> Person | None:
    """Read a person's demonym, role and birth year off a paragraph's first sentence."""
    if not sentences:
        return None
    first = sentences[0].strip()
    match = _PERSON.match(first)
    if match is None:
        return None
    name = re.sub(r"\s*\(.*\)$", "", title).strip()
    if not match["name"].startswith(name.split()[0]):  # the sentence is about the title
        return None
    paren = match["paren"] or ""
    years = [int(y) for y in _YEAR.findall(paren)]
    # "born July 16, 1966", or a life's span "1924 - 1978" (any dash)
    span = len(years) == 2 and re.search(r"\d\s*[-\u2013]\s*\S*\s*\d", paren)
    born = years[0] if years and ("born" in paren.lower() or span) else None
    dead = len(years) >= 2 or "died" in paren.lower()
    return Person(title, name, match["demonym"], match["role"], born, dead, first, sentences)


def held_out_names() -> tuple[set[str], list[str]]:
    """Titles of evaluation paragraphs, and the evaluation questions' texts (lower case)."""
    titles: set[str] = set(README_ENTITIES)
    texts: list[str] = []
    ids: set[str] = set()
    for path in EVALUATION:
        if not path.is_file():
            raise SystemExit(f"{path} is missing: it lists questions the pairs must not touch.")
        for row in read_rows(path, what="question file"):
            texts.append(str(row["question"]).lower())
            titles.update(map(str, row.get("supporting_titles") or []))
            titles.update(str(p["title"]) for p in row.get("context") or [] if "title" in p)
            ids.add(str(row["id"]))
    for row in read_rows(CONTEXTS, what="question file"):
        if str(row["id"]) in ids:
            titles.update(str(p["title"]) for p in row.get("context") or [])
    return titles, texts


def people(corpus: Path, titles: set[str], texts: list[str]) -> list[Person]:
    """Every person of the corpus the held-out questions do not touch."""
    found = []
    for row in read_rows(corpus, what="corpus"):
        one = person(str(row["title"]), [str(s) for s in row.get("sentences") or []])
        if one is None or one.title in titles:
            continue
        if any(one.name.lower() in text for text in texts):
            continue
        found.append(one)
    return found


def _row(kind: str, question: str, answer: str, a: Person, b: Person) -> dict[str, Any]:
    key = f"{kind}|{a.title}|{b.title}"
    return {
        "id": "pair-" + hashlib.sha256(key.encode()).hexdigest()[:12],
        "question": question,
        "answer": answer,
        "answers": [answer],
        "type": "comparison",
        "level": "synthetic",
        "supporting_titles": [a.title, b.title],
        "supporting_facts": [[a.title, 0], [b.title, 0]],
        "context": [{"title": p.title, "sentences": p.paragraph} for p in (a, b)],
        "source": {"dataset": "pairs of the bundled HotpotQA corpus's paragraphs (lab/training)"},
    }


def nationality_pairs(found: list[Person], n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``n`` same-nationality questions, half answered yes, pairs of one role."""
    by_role: dict[str, list[Person]] = {}
    # Only paragraphs with a life's years: "X is an American comedy-drama" is a film, and the
    # nationality of films, bands and magazines made 11 of the first 50 questions read.
    for one in found:
        if one.born is not None or one.dead:
            by_role.setdefault(one.role, []).append(one)
    roles = [r for r, group in sorted(by_role.items()) if len(group) >= 4]
    made = {"yes": 0, "no": 0}
    seen: set[frozenset[str]] = set()
    for _ in range(200 * n):
        if min(made.values()) >= n // 2:
            return
        a, b = rng.sample(by_role[rng.choice(roles)], 2)
        answer = "yes" if a.demonym == b.demonym else "no"
        pair = frozenset((a.title, b.title))
        overlap = any({a.demonym, b.demonym} <= group for group in OVERLAPPING)
        if made[answer] >= n // 2 or pair in seen or (answer == "no" and overlap):
            continue
        seen.add(pair)
        made[answer] += 1
        verb = "Were" if a.dead or b.dead else "Are"
        yield _row("nat", f"{verb} {a.name} and {b.name} of the same nationality?", answer, a, b)


def birth_pairs(found: list[Person], n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``n`` "who was born first" questions; the earlier one named first in half of them."""
    dated = [p for p in found if p.born is not None]
    seen: set[frozenset[str]] = set()
    made = 0
    for _ in range(200 * n):
        if made >= n:
            return
        a, b = rng.sample(dated, 2)
        pair = frozenset((a.title, b.title))
        if a.born == b.born or pair in seen or a.name == b.name:
            continue
        seen.add(pair)
        first = a if (a.born or 0) < (b.born or 0) else b
        if (made % 2 == 0) != (first is a):
            a, b = b, a
        made += 1
        yield _row("born", f"Who was born first, {a.name} or {b.name}?", first.name, a, b)


def kind_of(one: Person) -> tuple[str, str] | None:
    """Return the first :data:`KINDS` word of what the person is said to be, and its family."""
    what = what_it_is([one.sentence]) or ""
    for word in re.findall(r"[a-z]+", what):
        for family, words in KINDS.items():
            if word in words:
                return word, family
    return None


def plural(word: str) -> str:
    """``actor`` -> ``actors``, ``actress`` -> ``actresses``, ``businessman`` -> ``businessmen``."""
    if word.endswith("man"):
        return word[:-3] + "men"
    return word + ("es" if word.endswith(("s", "ch", "sh", "x")) else "s")


def says(sentence: str, words: Iterable[str]) -> bool:
    """Whether the sentence has one of ``words`` (or its plural) as a word."""
    return any(re.search(rf"\b{word}s?\b", sentence, re.IGNORECASE) for word in words)


def both_pairs(found: list[Person], n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``n`` "are A and B both KIND?" questions, half answered yes."""
    kinds = {one.title: k for one in found if (one.born or one.dead) and (k := kind_of(one))}
    by_word: dict[str, list[Person]] = {}
    for one in found:
        if one.title in kinds:
            by_word.setdefault(kinds[one.title][0], []).append(one)
    words = [w for w, group in sorted(by_word.items()) if len(group) >= 4]
    everyone = [p for w in words for p in by_word[w]]
    made = {"yes": 0, "no": 0}
    seen: set[frozenset[str]] = set()
    for _ in range(200 * n):
        if min(made.values()) >= n // 2:
            return
        word = rng.choice(words)
        a = rng.choice(by_word[word])
        answer = "yes" if made["yes"] <= made["no"] else "no"
        if answer == "yes":
            b = rng.choice(by_word[word])
        else:
            b = rng.choice(everyone)
            family = KINDS[kinds[a.title][1]]
            if kinds[b.title][1] == kinds[a.title][1] or says(b.sentence, family):
                continue
        pair = frozenset((a.title, b.title))
        if b.title == a.title or a.name == b.name or pair in seen:
            continue
        seen.add(pair)
        made[answer] += 1
        if answer == "no" and made["no"] % 2 == 0:
            a, b = b, a  # the one that is not a KIND named first in half of them
        verb = "Were" if a.dead or b.dead else "Are"
        question = f"{verb} {a.name} and {b.name} both {plural(word)}?"
        yield _row("both", question, answer, a, b)


def build(n: int, seed: int = 0, corpus: Path | None = None) -> list[dict[str, Any]]:
    """Return ``n`` questions of each kind: nationality, birth, both (fewer if the corpus runs out).

    The kinds are drawn in that order from one seeded generator, so adding a kind after the
    others left their questions as they were.
    """
    titles, texts = held_out_names()
    found = people(corpus or bundled_corpus_path(), titles, texts)
    rng = random.Random(seed)
    return [
        *nationality_pairs(found, n, rng),
        *birth_pairs(found, n, rng),
        *both_pairs(found, n, rng),
    ]


def _write(rows: Iterable[dict[str, Any]], out: Path) -> int:
    count = 0
    with gzip.open(out, "wt") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
            count += 1
    return count


def answer(path: Path, n: int, model: str, out: Path) -> dict[str, list[int]]:
    """Answer the first ``n`` nationality and ``n`` birth questions of ``path`` with ``model``.

    Through ``parallel-search`` on the bundled index, the engine on this CPU, by the benchmark
    harness (rows in ``out/results.jsonl``, a rerun resumes); returns kind -> [right, asked]
    by exact match, the kinds being ``yes``, ``no`` (the gold answer of a nationality question)
    and ``born``.
    """
    from langgraph_parallel.eval.harness import RESULTS_FILE, load_results, run_graphs
    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from langgraph_parallel.retrieval.indexes import corpus_index

    questions = load_questions(path)
    nationality = [q for q in questions if "nationality" in q.question][:n]
    born = [q for q in questions if q.question.startswith("Who was born first")][:n]
    graph = create_parallel_search_graph(ChatVLLM(model=model), corpus_index(None))
    run_graphs(nationality + born, {"parallel-search": graph}, out, concurrency=6, warmup=True)
    kinds = {q.id: q.answer for q in nationality} | {q.id: "born" for q in born}
    tally: dict[str, list[int]] = {}
    for row in load_results(out / RESULTS_FILE):
        counts = tally.setdefault(kinds[row["id"]], [0, 0])
        counts[0] += int(row["em"])
        counts[1] += 1
    return tally


def main(argv: list[str] | None = None) -> int:
    """Write the questions, show a sample of them, or have a policy answer them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--n", type=int, default=200, help="questions of each kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="print N random questions")
    parser.add_argument("--answer", type=int, default=0, help="answer N questions of each kind")
    parser.add_argument("--model", default="smollm2-parallel", help="the policy that answers")
    parser.add_argument(
        "--answers-out", type=Path, default=Path("benchmarks/rl/pairs"), help="--answer's rows"
    )
    args = parser.parse_args(argv)
    if args.answer:
        pairs = repo_data_dir() / "hotpotqa_corpus_pairs.jsonl.gz"
        tally = answer(pairs, args.answer, args.model, args.answers_out)
        print(json.dumps({"model": args.model, "right_of": tally}))
        return 0
    rows = build(args.n, args.seed)
    if args.show:
        for row in random.Random(1).sample(rows, min(args.show, len(rows))):
            print(f"{row['question']} -> {row['answer']}")
            for paragraph in row["context"]:
                print("   ", paragraph["sentences"][0].strip()[:220])
    if args.out is not None:
        print(f"{_write(rows, args.out)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
