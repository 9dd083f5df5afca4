"""Evaluation: benchmark question loading and SQuAD-style answer metrics."""

from langgraph_parallel.eval.datasets import (
    Question,
    QuestionClass,
    canonical_dataset,
    class_counts,
    classify,
    load_questions,
)
from langgraph_parallel.eval.metrics import (
    cover_exact_match,
    exact_match,
    f1_score,
    normalize_answer,
)

__all__ = [
    "Question",
    "QuestionClass",
    "canonical_dataset",
    "class_counts",
    "classify",
    "cover_exact_match",
    "exact_match",
    "f1_score",
    "load_questions",
    "normalize_answer",
]
