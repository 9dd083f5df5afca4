"""Load benchmark questions in the normalised JSONL format of ``shared/data``.

Each question carries its dataset and type, which decide whether it counts as "parallelizable" or
"sequential" in the ParallelSearch split (ARCHITECTURE.md section 4).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph_parallel.errors import UserError

__all__ = [
    "Question",
    "QuestionClass",
    "canonical_dataset",
    "class_counts",
    "classify",
    "load_questions",
]

QuestionClass = Literal["parallelizable", "sequential", "unknown"]

_CLASSES: tuple[QuestionClass, ...] = ("parallelizable", "sequential", "unknown")
_PARALLEL_TYPES = {"hotpotqa": {"comparison"}, "2wiki": {"comparison", "bridge_comparison"}}
_SEQUENTIAL_TYPES = {"hotpotqa": {"bridge"}, "2wiki": {"compositional", "inference"}}
# Every MuSiQue and Bamboogle question is a compositional chain, whatever its type label says.
_ALL_SEQUENTIAL = {"musique", "bamboogle"}

# Checked in order against file names and free-text `source.dataset` descriptions.
_DATASET_PATTERNS = [
    (re.compile(r"hotpot"), "hotpotqa"),
    (re.compile(r"2\s*wiki"), "2wiki"),
    (re.compile(r"musique"), "musique"),
    (re.compile(r"bamboogle"), "bamboogle"),
    (re.compile(r"trivia\s*qa"), "triviaqa"),
    (re.compile(r"pop\s*qa"), "popqa"),
    (re.compile(r"simple\s*qa"), "simpleqa"),
    (re.compile(r"webwalker"), "webwalkerqa"),
    (re.compile(r"frames"), "frames"),
    (re.compile(r"(?<![a-z])nq(?![a-z])|natural\s*questions"), "nq"),
]
_REQUIRED = ("id", "question", "answer")
_FORMAT_HINT = (
    "the file must be in the normalised format of shared/data "
    "(fields id, question, answer, answers, type; see shared/data/README.md)"
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


def canonical_dataset(text: str) -> str | None:
    """Map a file name or dataset description to a canonical dataset name, or ``None``."""
    lowered = text.lower()
    for pattern, name in _DATASET_PATTERNS:
        if pattern.search(lowered):
            return name
    return None


def classify(dataset: str, type: str | None) -> QuestionClass:
    """Return the ParallelSearch class of a question from its dataset and type.

    Parallelizable: HotpotQA ``comparison``; 2Wiki ``comparison`` and ``bridge_comparison``.
    Sequential: HotpotQA ``bridge``; 2Wiki ``compositional`` and ``inference``; every MuSiQue and
    Bamboogle question. Anything else (other datasets, unknown types) is "unknown".

    Args:
        dataset: Dataset name; aliases such as "HotpotQA" or "2WikiMultihopQA" are accepted.
        type: The question type, or ``None``.

    Returns:
        "parallelizable", "sequential" or "unknown".

    """
    name = canonical_dataset(dataset) or dataset.lower()
    if name in _ALL_SEQUENTIAL:
        return "sequential"
    kind = (type or "").lower()
    if kind in _PARALLEL_TYPES.get(name, ()):
        return "parallelizable"
    if kind in _SEQUENTIAL_TYPES.get(name, ()):
        return "sequential"
    return "unknown"


def class_counts(questions: Iterable[Question]) -> dict[QuestionClass, int]:
    """Count questions per class; all three classes are always present as keys.

    Args:
        questions: The questions to count.

    Returns:
        A mapping from class name to count, in the order parallelizable, sequential, unknown.

    """
    counts: dict[QuestionClass, int] = dict.fromkeys(_CLASSES, 0)
    for q in questions:
        counts[q.question_class] += 1
    return counts


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            yield from enumerate(f, start=1)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read question file {path}: {exc}; {_FORMAT_HINT}") from exc


def _parse_row(row: Any, path: Path, lineno: int, file_dataset: str | None) -> Question:
    where = f"{path}, line {lineno}"
    if not isinstance(row, dict):
        raise UserError(f"{where}: expected a JSON object per line; {_FORMAT_HINT}")
    for field in _REQUIRED:
        if row.get(field) is None:
            raise UserError(f"{where}: missing required field '{field}'; {_FORMAT_HINT}")
    answer = str(row["answer"])
    raw_answers = row.get("answers")
    if isinstance(raw_answers, str):
        raw_answers = [raw_answers]
    answers = [str(a) for a in raw_answers or [] if a is not None]
    # The main answer must always score, even if a source listed only aliases.
    if answer not in answers:
        answers.insert(0, answer)
    source = row.get("source")
    dataset = file_dataset
    if dataset is None and isinstance(source, dict):
        dataset = canonical_dataset(str(source.get("dataset", "")))
    raw_type = row.get("type")
    return Question(
        id=str(row["id"]),
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

    Raises:
        UserError: The file is missing or unreadable, a line is not JSON, a row lacks ``id``,
            ``question`` or ``answer``, ``limit`` is negative, or ``types`` matches nothing.

    """
    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"question file not found: {path}; pass the path of a .jsonl or .jsonl.gz file "
            "such as shared/data/hotpotqa_dev_distractor_subset.jsonl.gz"
        )
    if limit is not None and limit < 0:
        raise UserError(f"limit must be >= 0 or None, got {limit}")
    wanted = {types} if isinstance(types, str) else None if types is None else set(types)
    if dataset:
        file_dataset: str | None = canonical_dataset(dataset) or dataset.lower()
    else:
        file_dataset = canonical_dataset(path.name)

    questions: list[Question] = []
    for lineno, line in _iter_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{path}, line {lineno}: not valid JSON ({exc.msg}); {_FORMAT_HINT}"
            ) from exc
        questions.append(_parse_row(row, path, lineno, file_dataset))

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
