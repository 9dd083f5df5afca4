"""Arguments several sub-commands share: the index kind, the passage budget, the retry deadline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from langgraph_parallel.agent.context import PassageBudgetOption
from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX, INDEX_KINDS
from langgraph_parallel.retry import MOST_RETRIES, deadline_retry_policy, retry_waits

__all__ = [
    "add_index_argument",
    "add_passage_argument",
    "add_retry_argument",
    "passage_budget_argument",
    "retry_deadline_argument",
    "retry_options",
]


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


def retry_deadline_argument(text: str) -> float:
    """Parse ``--retry-deadline``: seconds >= 0 that :func:`deadline_retry_policy` accepts.

    Raises:
        argparse.ArgumentTypeError: Anything else (argparse prints it as a usage error).
    """
    longest = retry_waits(deadline_retry_policy(0)._replace(max_attempts=MOST_RETRIES + 1))[1]
    try:
        seconds = float(text)
        deadline_retry_policy(seconds)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected seconds from 0 to {longest:g}, got {text!r}"
        ) from exc
    return seconds


def add_retry_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--retry-deadline SECONDS`` (ride out a model server's restart) to a parser."""
    parser.add_argument(
        "--retry-deadline",
        type=retry_deadline_argument,
        default=None,
        metavar="SECONDS",
        help="ride out a model server's restart: retry model and search calls that fail for a "
        "passing reason (refused or reset connections, connect timeouts, HTTP 429/5xx) with "
        "growing waits (0.5 s doubling up to 5 s, plus up to 1 s of jitter each) until they "
        "add up to at most SECONDS, then end the question with model_error; the command "
        "prints how long a server may stay down. Default: 3 attempts, about 1.5 s of waiting. "
        "Not for create-agent, whose model calls are langchain's",
    )


def retry_options(deadline: float | None) -> dict[str, Any]:
    """Return the graph factories' ``retry_policy`` option for ``--retry-deadline``, if given.

    Also prints the schedule on stderr: how long a server may stay unreachable for sure, and
    the most a question waits before it is reported.
    """
    if deadline is None:
        return {}  # the factories' default: DEFAULT_RETRY_POLICY
    policy = deadline_retry_policy(deadline)
    least, most = retry_waits(policy)
    print(
        f"retries: up to {policy.max_attempts} attempts per model or search call; a server "
        f"back within {least:g} s is waited for, no call waits more than {most:g} s in all",
        file=sys.stderr,
    )
    return {"retry_policy": policy}
