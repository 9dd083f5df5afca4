"""Evaluation: questions, SQuAD-style metrics, the resumable benchmark harness and reports."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Where each name lives; imported on first use (PEP 562), so that a light module of this package
# (``eval.summary`` for ``train``'s command line) does not load the harness and LangGraph.
_HOMES = {
    **dict.fromkeys(
        ("Question", "QuestionClass", "canonical_dataset", "class_counts", "classify"),
        "langgraph_parallel.eval.datasets",
    ),
    "load_questions": "langgraph_parallel.eval.datasets",
    "load_results": "langgraph_parallel.eval.harness",
    "run_graphs": "langgraph_parallel.eval.harness",
    "write_report": "langgraph_parallel.eval.report",
    "summarize": "langgraph_parallel.eval.summary",
    **dict.fromkeys(
        ("cover_exact_match", "exact_match", "f1_score", "normalize_answer"),
        "langgraph_parallel.metrics",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


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
