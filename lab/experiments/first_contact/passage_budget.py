"""What a per-passage observation budget costs and keeps (``benchmarks/retrieval/passage_budget``).

For each budget (``passage_sentences``: each passage's title and first N sentences, rendered by
:func:`~langgraph_parallel.retrieval.documents.format_passages`, the one place observations are
made), over the top-k passages of one query per question: observation tokens per passage, recall
of gold titles (a budget never drops a title) and recall of gold supporting *sentences* within
the text the model is shown. Also how well the fallback splitter
(:func:`~langgraph_parallel.retrieval.sentences.sentence_ends`) reproduces HotpotQA's own
sentence lists, which the bundled corpus carries and the budget uses.

Run: ``langgraph-parallel bench run passage-budget`` (or ``python -m
lab.experiments.first_contact.passage_budget --out benchmarks/retrieval/passage_budget``)
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.base import Experiment
from langgraph_parallel.jsonl import read_objects
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.paths import repo_data_dir, source_commit
from langgraph_parallel.retrieval.documents import Passage, format_passages, shown_text
from langgraph_parallel.retrieval.sentences import marked_sentence_ends, sentence_ends

__all__ = ["GoldSentences", "budget_figures", "gold_sentences", "measure", "splitter_agreement"]

SAMPLE = "hotpotqa_dev_sample300.jsonl.gz"
"""The held-out questions (never trained on): supporting facts, no contexts."""

BUDGETS: tuple[int | None, ...] = (1, 2, 3, None)
"""The budgets measured (``None``: whole passages)."""


@dataclass(frozen=True)
class GoldSentences:
    """A question's gold evidence.

    Attributes:
        titles: Gold supporting titles.
        facts: Supporting sentences as ``(title, index in its paragraph, sentence text)``.
    """

    titles: tuple[str, ...]
    facts: tuple[tuple[str, int, str], ...] = ()


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(math.fsum(kept) / len(kept), 4) if kept else None


def _key(title: str) -> str:
    return " ".join(title.split()).casefold()


def _scores(
    passages: Sequence[Passage],
    gold: GoldSentences,
    budget: int | None,
    count: Callable[[str], int],
) -> dict[str, float | None]:
    """One question's figures under ``budget`` (see :func:`budget_figures`)."""
    lines = [count(format_passages([p], passage_sentences=budget)) for p in passages]
    shown: dict[str, list[str]] = {}
    for passage in passages:
        shown.setdefault(_key(passage.title), []).append(shown_text(passage, budget))
    wanted = {_key(t) for t in gold.titles}
    hits = [
        any(text.strip() in seen for seen in shown.get(_key(title), ()))
        for title, _, text in gold.facts
    ]
    kept = [budget is None or index < budget for _, index, _ in gold.facts]
    return {
        "tokens_per_passage": _mean(lines),
        "tokens_per_query": count(format_passages(passages, passage_sentences=budget)),
        "title_recall": len(wanted & set(shown)) / len(wanted) if wanted else None,
        "sentence_recall": sum(hits) / len(hits) if hits else None,
        "sentences_within_budget": sum(kept) / len(kept) if kept else None,
    }


def budget_figures(
    results: Sequence[Sequence[Passage]],
    golds: Sequence[GoldSentences],
    count_tokens: Callable[[str], int],
    budgets: Iterable[int | None] = BUDGETS,
) -> dict[str, dict[str, Any]]:
    """Score each budget over every question's retrieved passages.

    Args:
        results: Per question, its retrieved passages, best first.
        golds: Per question, its gold titles and supporting sentences.
        count_tokens: Tokens of a text (a tokenizer's count, or words).
        budgets: Budgets to score (``None``: whole passages).

    Returns:
        Budget label (``"1"``, ``"2"``, ``"3"``, ``"all"``) -> means per question of
        ``tokens_per_passage`` (a passage's rendered ``Doc k(Title: ...) ...`` line),
        ``tokens_per_query`` (the top-k block of one sub-query), ``title_recall`` (share of
        gold titles among the retrieved titles), ``sentence_recall`` (share of supporting
        sentences contained in the shown text of a retrieved passage of their title) and
        ``sentences_within_budget`` (share of supporting sentences whose index is below the
        budget: shown whenever their passage is retrieved), each over the questions it applies
        to; ``n`` counts the questions, ``n_with_sentences`` those with supporting sentences.
    """
    out: dict[str, dict[str, Any]] = {}
    for budget in budgets:
        rows = [_scores(p, g, budget, count_tokens) for p, g in zip(results, golds, strict=True)]
        keys = rows[0].keys() if rows else ()
        out["all" if budget is None else str(budget)] = {
            "n": len(rows),
            "n_with_sentences": sum(r["sentence_recall"] is not None for r in rows),
            **{key: _mean([r[key] for r in rows]) for key in keys},
        }
    return out


def splitter_agreement(
    paragraphs: Iterable[tuple[str, Sequence[str]]], firsts: Sequence[int] = (1, 2, 3)
) -> dict[str, Any]:
    """Compare :func:`sentence_ends` with a corpus's own sentence lists.

    Args:
        paragraphs: ``(text, its sentence list)`` pairs; pairs whose list does not cover the
            text (:func:`marked_sentence_ends` gives nothing) are skipped.
        firsts: Budgets N whose cut is compared: the splitter's first N sentences against the
            list's.

    Returns:
        ``paragraphs`` (compared), ``exact`` (share whose boundaries all agree),
        ``boundary_precision`` / ``boundary_recall`` (over all boundaries), and
        ``same_cut`` (N -> share of paragraphs whose first-N text is identical; a paragraph
        short enough to be shown whole by both counts agrees).
    """
    n = exact = true_pos = predicted = actual = 0
    same = dict.fromkeys(firsts, 0)
    for text, sentences in paragraphs:
        gold = marked_sentence_ends(text, sentences)
        if not gold:
            continue
        found = sentence_ends(text)
        n += 1
        exact += found == gold
        true_pos += len(set(found) & set(gold))
        predicted += len(found)
        actual += len(gold)
        for first in firsts:
            cut = found[min(first, len(found)) - 1]
            same[first] += cut == gold[min(first, len(gold)) - 1]
    return {
        "paragraphs": n,
        "exact": round(exact / n, 4) if n else None,
        "boundary_precision": round(true_pos / predicted, 4) if predicted else None,
        "boundary_recall": round(true_pos / actual, 4) if actual else None,
        "same_cut": {str(k): round(v / n, 4) if n else None for k, v in same.items()},
    }


def gold_sentences(
    row: Mapping[str, Any], paragraphs: Mapping[str, Sequence[str]]
) -> GoldSentences:
    """Read a HotpotQA row's gold titles and supporting sentences (texts from ``paragraphs``).

    Args:
        row: A question row with ``supporting_titles`` and ``supporting_facts``
            (``[title, sentence index]``; ``null`` in rows that lost them).
        paragraphs: Title -> its sentence list (the corpus rows').
    """
    facts = []
    for title, index in row.get("supporting_facts") or []:
        sentences = paragraphs.get(title) or []
        if isinstance(index, int) and 0 <= index < len(sentences):
            facts.append((str(title), index, str(sentences[index])))
    return GoldSentences(tuple(map(str, row.get("supporting_titles") or [])), tuple(facts))


def measure(top_k: int = 3) -> dict[str, Any]:
    """Measure the budgets on the bundled sample and index (query = the question text).

    Tokens are SmolLM2's (the embedded policies' tokenizer). Returns the summary written to
    ``summary.json``: the settings, :func:`budget_figures` under ``budgets`` and
    :func:`splitter_agreement` over every corpus paragraph under ``splitter``.
    """
    from transformers import AutoTokenizer

    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.retrieval.corpus import CORPUS_FORMAT, bundled_corpus_path
    from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX, default_index

    corpus = [r for _, r in read_objects(bundled_corpus_path(), what="corpus", fmt=CORPUS_FORMAT)]
    paragraphs = {str(r["title"]): list(r.get("sentences") or []) for r in corpus}
    rows = [r for _, r in read_objects(repo_data_dir() / SAMPLE, what="questions", fmt="JSONL")]
    results = default_index().batch_search([str(r["question"]) for r in rows], top_k)
    tokenizer = AutoTokenizer.from_pretrained(model_folder("smollm2"))
    golds = [gold_sentences(row, paragraphs) for row in rows]

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return {
        "commit": source_commit(),
        "machine": machine(),
        "questions": f"data/{SAMPLE}",
        "corpus": f"data/{bundled_corpus_path().name}",
        "index": DEFAULT_INDEX,
        "top_k": top_k,
        "query": "the question text",
        "tokens": "SmolLM2 tokenizer (smollm2), the rendered 'Doc k(Title: ...) text' line",
        "budgets": budget_figures(results, golds, count),
        "splitter": splitter_agreement((str(r["text"]), r.get("sentences") or []) for r in corpus),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and write ``OUT/summary.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", required=True, help="folder for summary.json")
    parser.add_argument("--top-k", type=int, default=3, help="passages per query")
    args = parser.parse_args(argv)
    given = shlex.join(sys.argv[1:] if argv is None else argv)
    command = f"python -m lab.experiments.first_contact.passage_budget {given}"
    summary = {"command": command, **measure(args.top_k)}
    Experiment.write_tables(Path(args.out), "summary", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
