"""The ``langgraph-parallel bench`` command line: its flags (the runner is :mod:`.bench`)."""

from __future__ import annotations

import argparse
from typing import Any

from langgraph_parallel.apps.arguments import (
    add_index_argument,
    add_passage_argument,
    add_retry_argument,
)
from langgraph_parallel.apps.bench import __doc__ as BENCH_DOC
from langgraph_parallel.apps.bench import cmd_bench
from langgraph_parallel.apps.bench_muse import add_muse_arguments
from langgraph_parallel.protocol import THINK_MAX_CHARS

__all__ = ["add_bench_parser"]


def add_bench_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` sub-command to the CLI's sub-parsers and return its parser."""
    bench = subparsers.add_parser(
        "bench",
        help="benchmark graphs on a question file, or run a declared experiment (resumable)",
        description=BENCH_DOC,
    )
    bench.add_argument(
        "--spec",
        default=None,
        metavar="FILE",
        help="run the BenchSpec written as JSON in FILE (BenchSpec.to_json) instead of flags",
    )
    bench.add_argument("--dataset", help="questions, normalised .jsonl(.gz) (required)")
    bench.add_argument("--limit", type=int, default=None, help="first N questions (after --seed)")
    bench.add_argument("--types", default=None, help="comma-separated question types to keep")
    bench.add_argument("--graphs", help="comma-separated graph names (required)")
    bench.add_argument("--out", help="output folder, rerun to resume (required)")
    bench.add_argument("--concurrency", type=int, default=1, help="questions in flight at once")
    bench.add_argument("--seed", type=int, default=None, help="shuffle seed; default: file order")
    bench.add_argument(
        "--model",
        default="auto",
        help="one model for every graph (smollm2-parallel, smollm2, gemma3, a folder), or "
        "'auto': each graph's default (registry.DEFAULT_MODELS)",
    )
    bench.add_argument("--max-turns", type=int, default=4, help="model steps per question")
    bench.add_argument("--top-k", type=int, default=3, help="documents per sub-query")
    bench.add_argument(
        "--no-final-answer-step",
        dest="final_answer_step",
        action="store_false",
        help="end at --max-turns as before the answer-only step",
    )
    bench.add_argument(
        "--think-max-chars",
        type=int,
        default=THINK_MAX_CHARS,
        help=f"most characters of a constrained step's <think> (default {THINK_MAX_CHARS})",
    )
    bench.add_argument(
        "--corpus",
        default=None,
        help="corpus .jsonl(.gz), folder of .txt/.md, or 'contexts' (the paragraphs of the "
        "question file's rows); default: bundled",
    )
    add_index_argument(bench)
    add_passage_argument(bench)
    bench.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="a `langgraph-parallel serve` address to run the models on (e.g. "
        "http://127.0.0.1:8000); it must serve each graph's model (see --model); default: "
        "in process",
    )
    add_retry_argument(bench)
    add_muse_arguments(bench)
    bench.set_defaults(func=cmd_bench)
    return bench
