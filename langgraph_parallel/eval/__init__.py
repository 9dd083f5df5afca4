"""Evaluation: questions, SQuAD-style metrics, the resumable benchmark harness and reports."""

from langgraph_parallel.eval.datasets import (
    Question,
    QuestionClass,
    canonical_dataset,
    class_counts,
    classify,
    load_questions,
)
from langgraph_parallel.eval.harness import load_results, run_graphs
from langgraph_parallel.eval.report import write_report
from langgraph_parallel.eval.summary import summarize
from langgraph_parallel.metrics import (
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
    "load_results",
    "normalize_answer",
    "run_graphs",
    "summarize",
    "write_report",
]
