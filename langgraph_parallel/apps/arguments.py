"""Arguments several sub-commands share: the corpus index kind and the passage budget."""

from __future__ import annotations

import argparse

from langgraph_parallel.agent.context import PassageBudgetOption
from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX, INDEX_KINDS

__all__ = ["add_index_argument", "add_passage_argument", "passage_budget_argument"]


def add_index_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--index`` (the corpus index kind) to a sub-command's parser."""
    parser.add_argument(
        "--index",
        choices=INDEX_KINDS,
        default=DEFAULT_INDEX,
        help=f"corpus index: BM25 and dense rankings fused (hybrid), or one of them "
        f"(default: {DEFAULT_INDEX}; see benchmarks/retrieval)",
    )


def passage_budget_argument(text: str) -> PassageBudgetOption:
    """Parse ``--passage-sentences``: ``auto``, ``all`` (``None``: whole passages) or N >= 1.

    Raises:
        argparse.ArgumentTypeError: Anything else (argparse prints it as a usage error).
    """
    if text in ("auto", "all"):
        return "auto" if text == "auto" else None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected auto, all or a positive integer, got {text!r}")


def add_passage_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--passage-sentences`` (the observation budget per passage) to a parser."""
    parser.add_argument(
        "--passage-sentences",
        type=passage_budget_argument,
        default="auto",
        metavar="N|all|auto",
        help="show each retrieved passage as its title and first N sentences; all: whole "
        "passages; auto (default): the budget the model's card records (whole passages for a "
        "model without one)",
    )
