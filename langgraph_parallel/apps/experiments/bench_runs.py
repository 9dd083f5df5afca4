"""How an experiment runs the harness: ``langgraph-parallel bench`` here or in a child process.

Both resume: the harness skips the questions already in the folder, so an experiment stopped
at any point continues where it was when it runs again.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Sequence

from langgraph_parallel.errors import UserError

__all__ = ["bench_in_child", "bench_here"]

CLI_MODULE = "langgraph_parallel.apps.cli"


def bench_here(argv: Sequence[str]) -> None:
    """Run ``langgraph-parallel bench ARGV`` in this process (one engine for all its graphs).

    Raises:
        UserError: As the command does (a setting it refuses, a missing file).
    """
    from langgraph_parallel.apps.bench_cli import cmd_bench
    from langgraph_parallel.apps.bench_parser import add_bench_parser

    parser = argparse.ArgumentParser(prog="langgraph-parallel")
    add_bench_parser(parser.add_subparsers(dest="command"))
    cmd_bench(parser.parse_args(["bench", *argv]))


def bench_in_child(argv: Sequence[str], attempts: int = 3) -> None:
    """Run ``langgraph-parallel bench ARGV`` in a child process, resuming after a crash.

    One process per graph and model: a run that loaded three in-process vLLM-CPU engines died
    with ``double free or corruption`` after 95 questions (docs/guides/evaluation.md); the
    harness resumes from the rows already written.

    Raises:
        UserError: The command failed ``attempts`` times, or once with a user error (status 2,
            which running it again cannot fix).
    """
    for _ in range(attempts):
        done = subprocess.run([sys.executable, "-m", CLI_MODULE, "bench", *argv])
        if done.returncode == 0:
            return
        if done.returncode == 2:
            break
    raise UserError(
        f"bench failed: langgraph-parallel bench {shlex.join(argv)} (its error is above); the "
        "same `bench run` resumes after a fix."
    )
