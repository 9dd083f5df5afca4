"""The ParallelSearch question classes: which questions are parallelizable (ARCHITECTURE.md 4).

The class follows from a question's dataset and type; dataset names are recognised in file
names and free-text ``source.dataset`` descriptions.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["CLASS_NAMES", "QuestionClass", "canonical_dataset", "classify"]

QuestionClass = Literal["parallelizable", "sequential", "unknown"]

CLASS_NAMES: tuple[QuestionClass, ...] = ("parallelizable", "sequential", "unknown")
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
