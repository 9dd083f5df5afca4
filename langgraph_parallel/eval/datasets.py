"""Load benchmark questions: the normalised JSONL of ``shared/data`` or a user's own file.

Each question carries its dataset and type, which decide whether it counts as "parallelizable" or
"sequential" in the ParallelSearch split (:mod:`~langgraph_parallel.eval.classes`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.classes import (
    CLASS_NAMES,
    QuestionClass,
    canonical_dataset,
    classify,
)
from langgraph_parallel.jsonl import read_objects

__all__ = [
    "QUESTION_FORMAT",
    "Question",
    "QuestionClass",
    "canonical_dataset",
    "class_counts",
    "generated_id",
    "classify",
    "load_questions",
]

QUESTION_FORMAT = (
    'a question file is .jsonl or .jsonl.gz with one JSON object per line holding "question" '
    'and "answer" strings (or an "answers" list) and optional "id", "type" and '
    '"supporting_titles"; see "Your own corpus and questions" in the langgraph-parallel docs '
    "(docs/guides/corpus.md)"
)


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Attributes:
        id: Official id where known, else a stable synthetic id.
        question: The question text.
        answer: The main gold answer.
        answers: All acceptable answers (aliases included); always contains ``answer``.
        type: Dataset-specific question type (e.g. "comparison"), or ``None``.
        dataset: Canonical dataset name ("hotpotqa", "2wiki", "musique", "bamboogle", ...).
        supporting_titles: Titles of the gold paragraphs (empty if unknown).

    """

    id: str
    question: str
    answer: str
    answers: tuple[str, ...]
    type: str | None
    dataset: str
    supporting_titles: tuple[str, ...] = ()

    @property
    def question_class(self) -> QuestionClass:
        """Return "parallelizable", "sequential" or "unknown" (see :func:`classify`)."""
        return classify(self.dataset, self.type)


def class_counts(questions: Iterable[Question]) -> dict[QuestionClass, int]:
    """Count questions per class; all three classes are always present as keys.

    Args:
        questions: The questions to count.

    Returns:
        A mapping from class name to count, in the order parallelizable, sequential, unknown.

    """
    counts: dict[QuestionClass, int] = dict.fromkeys(CLASS_NAMES, 0)
    for q in questions:
        counts[q.question_class] += 1
    return counts


def generated_id(question: str) -> str:
    """Return the id of a row that has none: a hash of its question, stable across runs."""
    return "q-" + hashlib.sha1(question.encode("utf-8")).hexdigest()[:12]


def _parse_row(row: dict[str, Any], path: Path, lineno: int, file_dataset: str | None) -> Question:
    where = f"{path}, line {lineno}"
    if not isinstance(row.get("question"), str) or not row["question"].strip():
        raise UserError(f"{where}: missing the 'question' string; {QUESTION_FORMAT}")
    raw_answers = row.get("answers")
    if isinstance(raw_answers, str):
        raw_answers = [raw_answers]
    answers = [str(a) for a in raw_answers or [] if a is not None]
    if row.get("answer") is None and not answers:
        raise UserError(f"{where}: missing 'answer' (or a non-empty 'answers'); {QUESTION_FORMAT}")
    answer = str(row["answer"]) if row.get("answer") is not None else answers[0]
    # The main answer must always score, even if a source listed only aliases.
    if answer not in answers:
        answers.insert(0, answer)
    source = row.get("source")
    dataset = file_dataset
    if dataset is None and isinstance(source, dict):
        dataset = canonical_dataset(str(source.get("dataset", "")))
    raw_type = row.get("type")
    raw_id = row.get("id")
    return Question(
        id=generated_id(row["question"]) if raw_id is None else str(raw_id),
        question=str(row["question"]),
        answer=answer,
        answers=tuple(answers),
        type=None if raw_type is None else str(raw_type),
        dataset=dataset or path.name.lower().split(".")[0],
        supporting_titles=tuple(str(t) for t in row.get("supporting_titles") or ()),
    )


def load_questions(
    path: str | Path,
    *,
    types: str | Iterable[str] | None = None,
    limit: int | None = None,
    seed: int | None = None,
    dataset: str | None = None,
) -> list[Question]:
    """Read questions from a normalised ``.jsonl`` or ``.jsonl.gz`` file.

    The dataset name comes from ``dataset`` if given, else from the file name (e.g.
    ``musique_dev_all.jsonl.gz`` -> "musique"), else from each row's ``source.dataset``, else the
    file stem. Rows are filtered by ``types``; then, if ``seed`` is given, shuffled with
    ``random.Random(seed)`` (so the sample is reproducible); finally the first ``limit`` are kept.
    Without a seed the file order is kept.

    Args:
        path: The question file.
        types: One question type or several; ``None`` keeps all.
        limit: Maximum number of questions to return; ``None`` returns all.
        seed: Seed for a deterministic shuffle before ``limit`` is applied.
        dataset: Override for the dataset name.

    Returns:
        The selected questions.

    Rows need ``question`` and ``answer`` (or a non-empty ``answers`` list, whose first entry is
    then the main answer); a row without ``id`` gets :func:`generated_id` of its question (a
    repeated question a ``-2``, ``-3``, ... suffix), so reruns resume the same rows.

    Raises:
        UserError: The file is missing or unreadable, a line is not JSON, a row lacks
            ``question`` or an answer, ``limit`` is negative, or ``types`` matches nothing; the
            message names the line and the format (:data:`QUESTION_FORMAT`).

    """
    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"question file not found: {path}; pass a file such as the bundled "
            f"data/hotpotqa_dev_sample300.jsonl.gz; {QUESTION_FORMAT}"
        )
    if limit is not None and limit < 0:
        raise UserError(f"limit must be >= 0 or None, got {limit}")
    wanted = {types} if isinstance(types, str) else None if types is None else set(types)
    if dataset:
        file_dataset: str | None = canonical_dataset(dataset) or dataset.lower()
    else:
        file_dataset = canonical_dataset(path.name)

    questions: list[Question] = []
    seen: dict[str, int] = {}  # generated ids so far
    for lineno, row in read_objects(path, what="question file", fmt=QUESTION_FORMAT):
        question = _parse_row(row, path, lineno, file_dataset)
        if row.get("id") is None:
            seen[question.id] = seen.get(question.id, 0) + 1
            if seen[question.id] > 1:
                question = replace(question, id=f"{question.id}-{seen[question.id]}")
        questions.append(question)

    if wanted is not None:
        selected = [q for q in questions if q.type in wanted]
        if questions and not selected:
            present = sorted({str(q.type) for q in questions})
            raise UserError(
                f"no question in {path} has type {sorted(wanted)}; "
                f"choose among the types present: {', '.join(present)}"
            )
        questions = selected
    if seed is not None:
        random.Random(seed).shuffle(questions)
    return questions if limit is None else questions[:limit]
