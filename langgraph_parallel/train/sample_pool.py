"""The training pool of ``train sample``: the question files, minus every evaluation question.

HotpotQA's distractor subset, the corpus pairs (``data/hotpotqa_corpus_pairs.jsonl.gz``), the
2Wiki sample of 500 and MuSiQue's 200 (:data:`POOL_FILES`), minus every question of an
evaluation file (:data:`EVALUATION_FILES`) and every question about the README question's
people: the rule ``train grpo`` applies (:func:`~.questions.names_readme_entity` and
:func:`~.questions.excluded_ids`), not a second one. HotpotQA and the pairs are searched in the
bundled corpus, 2Wiki and MuSiQue among the paragraphs of their training questions
(:func:`part_paragraphs`). :func:`training_pool` shuffles the pooled questions with the seed
and keeps the first ``limit`` of each class, the classes in turn, so a larger ``limit`` extends
the list without reordering what was already sampled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question, load_questions
from langgraph_parallel.paths import repo_data_dir, shared_data_dir
from langgraph_parallel.train.questions import excluded_ids, names_readme_entity

__all__ = [
    "CLASS_ALIASES",
    "EVALUATION_FILES",
    "OWN_CORPUS",
    "POOL_FILES",
    "PoolQuestion",
    "evaluation_ids",
    "part_paragraphs",
    "part_questions",
    "pool_file",
    "searchers_for",
    "training_pool",
]

POOL_FILES: dict[str, tuple[str, str]] = {
    "hotpotqa": ("shared", "hotpotqa_dev_distractor_subset.jsonl.gz"),
    "pairs": ("repo", "hotpotqa_corpus_pairs.jsonl.gz"),
    "2wiki": ("shared", "2wikimultihopqa_dev_sample500.jsonl.gz"),
    "musique": ("shared", "musique_dev_with_paragraphs200.jsonl.gz"),
}
"""Pool part -> (folder: ``shared`` or ``repo`` data, file name)."""
OWN_CORPUS = ("2wiki", "musique")
"""Parts searched among their training questions' own paragraphs (else the bundled corpus)."""
EVALUATION_FILES = (
    "hotpotqa_dev_sample300.jsonl.gz",
    "grpo_dev64.jsonl.gz",
    "bench_heldout_chains.jsonl.gz",
)
"""The evaluation files in ``data/`` (the bundled sample, the GRPO dev split, the questions the
MuSiQue/2Wiki benchmarks draw): none of their questions is ever sampled."""
CLASS_ALIASES = {
    "comparison": "parallelizable",
    "parallelizable": "parallelizable",
    "bridge": "sequential",
    "sequential": "sequential",
}
"""``--classes`` names -> question class (comparisons are the paper's parallelizable class)."""


@dataclass(frozen=True)
class PoolQuestion:
    """A training question and the pool part it came from."""

    part: str
    question: Question


def pool_file(part: str) -> Path:
    """Return the question file of a pool part."""
    folder, name = POOL_FILES[part]
    return (shared_data_dir() if folder == "shared" else repo_data_dir()) / name


def evaluation_ids() -> set[str]:
    """Return the ids of every question in :data:`EVALUATION_FILES`."""
    return set(excluded_ids(tuple(str(repo_data_dir() / name) for name in EVALUATION_FILES)))


def part_questions(part: str, held_out: set[str]) -> list[Question]:
    """Return the questions of a part that may be trained on (file order)."""
    return [
        q
        for q in load_questions(pool_file(part))
        if q.id not in held_out and not names_readme_entity(q.question, *q.supporting_titles)
    ]


def training_pool(
    parts: tuple[str, ...],
    *,
    classes: tuple[str, ...] = ("parallelizable", "sequential"),
    limit: int | None = None,
    seed: int = 0,
) -> list[PoolQuestion]:
    """Return the questions to sample, in sampling order (module docstring).

    Raises:
        UserError: No question is left.
    """
    held_out = evaluation_ids()
    pooled = [PoolQuestion(part, q) for part in parts for q in part_questions(part, held_out)]
    random.Random(seed).shuffle(pooled)
    by_class = [[p for p in pooled if p.question.question_class == c][:limit] for c in classes]
    order: list[PoolQuestion] = []
    for rank in range(max(map(len, by_class), default=0)):
        order += [rows[rank] for rows in by_class if rank < len(rows)]
    if not order:
        raise UserError(f"no training question of {', '.join(classes)} in {', '.join(parts)}.")
    return order


def part_paragraphs(part: str, held_out: set[str]) -> list[dict[str, str]]:
    """Return the paragraphs (title -> text) of each training question of a part, file order.

    An evaluation question's paragraphs are in only where a training question has them too.
    """
    from langgraph_parallel.eval.contexts import row_paragraphs
    from langgraph_parallel.jsonl import read_rows

    rows = read_rows(pool_file(part), what="question file")
    return [row_paragraphs(r) for r in rows if str(r["id"]) not in held_out]


def searchers_for(parts: tuple[str, ...]) -> dict[str, Any]:
    """Open each part's index: the bundled corpus, or its training questions' own paragraphs."""
    from langgraph_parallel.eval.contexts import context_corpus
    from langgraph_parallel.retrieval.indexes import corpus_index

    held_out = evaluation_ids()
    return {
        part: corpus_index(str(context_corpus(part_paragraphs(part, held_out))))
        if part in OWN_CORPUS
        else corpus_index(None)
        for part in parts
    }
