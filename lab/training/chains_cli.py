"""``langgraph-parallel train chains ...``: the command line of :mod:`.chains`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError

__all__ = ["add_chains_parser", "cmd_chains"]


def add_chains_parser(kinds: Any) -> None:
    """Add ``train chains heldout|select|mix|combine|first`` to ``train``'s sub-parsers."""
    from lab.training import chains

    parser = kinds.add_parser(
        "chains",
        help="chain data for SFT: held-out questions, selections, mixes, the CPU first stage",
        description=chains.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    held = verbs.add_parser("heldout", help="write the benchmarks' questions to a file")
    held.add_argument("--out", type=Path, required=True)
    sel = verbs.add_parser("select", help="keep the chain trajectories of one policy")
    sel.add_argument("--data", type=Path, required=True, help="train sft --synthesize-only file")
    sel.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    sel.add_argument("--policy", default="parallel")
    mixed = verbs.add_parser("mix", help="fewer chains plus first-stage comparisons (replay)")
    mixed.add_argument("--data", type=Path, required=True, help="the chain synthesis file")
    mixed.add_argument("--replay", type=Path, required=True, help="a first-stage synthesis file")
    mixed.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    mixed.add_argument("--policy", default="parallel")
    both = verbs.add_parser("combine", help="one first-stage file of both policies' trajectories")
    both.add_argument("--data", type=Path, action="append", required=True, help="repeatable")
    both.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    both.add_argument(
        "--repeat",
        action="append",
        default=[],
        metavar="CLASS=N",
        help="write a question class's trajectories N times (e.g. parallelizable=2)",
    )
    cpu = verbs.add_parser("first", help="the CPU first stage: FIRST's questions, both policies")
    cpu.add_argument("--data", type=Path, action="append", required=True, help="repeatable")
    cpu.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    parser.set_defaults(func=cmd_chains)


def cmd_chains(args: argparse.Namespace) -> int:
    """Run one ``train chains`` verb and print how many rows it wrote where."""
    from lab.training.chains import first, heldout, mix, select
    from lab.training.chains_files import combine

    if args.verb == "first":
        print(f"{first(args.data, args.out)} trajectories -> {args.out}")
    elif args.verb == "heldout":
        print(f"{heldout(args.out)} questions -> {args.out}")
    elif args.verb == "select":
        print(f"{select(args.data, args.out, args.policy)} trajectories -> {args.out}")
    elif args.verb == "combine":
        repeat = dict(_count(spec) for spec in args.repeat)
        print(f"{combine(args.data, args.out, repeat=repeat)} trajectories -> {args.out}")
    else:
        n = mix(args.data, args.replay, args.out, args.policy)
        print(f"{n} trajectories -> {args.out}")
    return 0


def _count(spec: str) -> tuple[str, int]:
    """``CLASS=N`` -> (CLASS, N); a clear error names the form otherwise."""
    name, _, times = spec.partition("=")
    if not name or not times.isdigit():
        raise UserError(f"--repeat {spec!r}: write CLASS=N, e.g. --repeat parallelizable=2.")
    return name, int(times)
