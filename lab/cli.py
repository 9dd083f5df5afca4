"""The lab's command line: ``bench run|list|compare``, ``results`` and ``train chains``.

``bench`` with flags (``--dataset``, ``--graphs``, ``--out``) runs graphs over any question file
as before; ``bench run NAME [--limit N] [--out DIR] [--set KEY=VALUE ...]`` runs one of the
experiments of :mod:`.catalog` with the settings it declares, ``bench list`` lists them, ``bench
compare OLD NEW`` compares two runs' rows (:mod:`.compare`) and ``results`` regenerates the
docs' result blocks (:mod:`.results`; ``results --draw``: the plots and trees, :mod:`.drawings`).
The experiments are imported when a command runs, not when the parser is built: ``ask`` does
not pay for them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError

__all__ = [
    "add_commands",
    "add_experiment_verbs",
    "add_results_parser",
    "cmd_compare",
    "cmd_list",
    "cmd_run",
]


def cmd_run(args: argparse.Namespace) -> int:
    """Run (or resume) the experiment ``args.name`` into ``--out``, up to ``--limit``."""
    from lab.catalog import experiment
    from lab.runner import run_experiment

    given = [f for f in ("dataset", "graphs") if getattr(args, f, None)]
    if given:
        flags = ", ".join("--" + f for f in given)
        raise UserError(f"{flags} belong to `bench` without `run`; an experiment declares its own.")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1 (got {args.limit}).")
    run = run_experiment(experiment(args.name), limit=args.limit, out=args.out, pairs=args.pairs)
    print(f"wrote {run.out / 'summary.json'}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print every experiment: name, output folder, ``--limit`` default, what it measures."""
    from lab.catalog import EXPERIMENTS

    for e in EXPERIMENTS.values():
        limit = "all" if e.limit is None else str(e.limit)
        print(f"{e.name:<20} --out {e.out}  --limit {limit}: {e.limit_means}")
        print(f"{'':<20} {e.about}")
        if e.settings:
            settings = ", ".join(f"{k}={v}" for k, v in e.settings.items())
            print(f"{'':<20} --set {settings}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Print (and with ``--out`` write) the comparison; 1 when the folders differ."""
    from lab.compare import compare

    report, same = compare(args.old, args.new)
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    return 0 if same else 1


def _cmd_results(args: argparse.Namespace) -> int:
    from lab.results import cmd_results

    return cmd_results(args)


def add_experiment_verbs(bench: argparse.ArgumentParser) -> None:
    """Add ``run``, ``list`` and ``compare`` under ``bench`` (its flags-based form stays)."""
    verbs = bench.add_subparsers(dest="bench_verb", title="declared experiments", metavar="")
    run = verbs.add_parser(
        "run",
        help="run (or resume) a declared experiment: bench run NAME [--limit N] [--out DIR]",
        description="Run (or resume: the same command continues a stopped run) a declared "
        "experiment with the settings of its committed run. It writes its tables, its rows as "
        "results.jsonl.gz in each harness folder, and OUT/summary.json: the command, settings, "
        "commit, models and adapters by hash, machine and wall time. `bench list` names them.",
    )
    run.add_argument("name", help="an experiment of `bench list`")
    run.add_argument("--limit", type=int, default=None, help="its --limit (see bench list)")
    run.add_argument("--out", default=None, help="output folder (default: its own; rerun resumes)")
    run.add_argument(
        "--set",
        dest="pairs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one of its settings (bench list shows them); repeatable",
    )
    run.set_defaults(func=cmd_run)
    listing = verbs.add_parser("list", help="list the declared experiments and their settings")
    listing.set_defaults(func=cmd_list)
    compare = verbs.add_parser(
        "compare",
        help="compare the per-question rows of two bench folders (exit 1 if they differ)",
        description="For every (graph, question) in both folders, check that the answer, the "
        "stop reason and the counters are equal; print a table per graph.",
    )
    compare.add_argument("old", type=Path)
    compare.add_argument("new", type=Path)
    compare.add_argument("--out", type=Path, default=None, help="also write the report here")
    compare.set_defaults(func=cmd_compare)


def add_results_parser(subparsers: Any) -> None:
    """Add the ``results`` sub-command to the CLI's sub-parsers."""
    results = subparsers.add_parser(
        "results",
        help="regenerate the result blocks of README.md, benchmarks/ and docs/ from benchmarks/",
        description="Rewrite every generated result block of README.md, benchmarks/README.md "
        "and docs/ from the committed benchmark files; --check only says which are stale "
        "(exit 1). Both exit 1 on orphan benchmark folders and on result figures typed into "
        "README.md's prose that no block holds. --draw instead draws the plots and "
        "ParallelMuse trees of benchmarks/ again from the committed data (they are not "
        "committed) and touches nothing else.",
    )
    what = results.add_mutually_exclusive_group()
    what.add_argument(
        "--check", action="store_true", help="exit 1 if a block is stale (no rewriting)"
    )
    what.add_argument(
        "--draw",
        action="store_true",
        help="draw benchmarks/' plots and trees from the committed data (no block rewritten)",
    )
    results.set_defaults(func=_cmd_results)


def add_commands(subparsers: Any, parents: Mapping[str, Any]) -> None:
    """Add the lab's commands: ``bench run|list|compare``, ``results`` and ``train chains``.

    The ``langgraph_parallel.commands`` entry point of ``lab/pyproject.toml`` names this
    function; the package's command line calls it when the lab is installed (a clone), with
    the parsers it may extend (``bench``, and ``train``'s sub-parsers).
    """
    from lab.training.chains_cli import add_chains_parser

    add_experiment_verbs(parents["bench"])
    add_results_parser(subparsers)
    add_chains_parser(parents["train"])
