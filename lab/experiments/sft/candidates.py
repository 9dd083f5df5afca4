"""Compare an SFT candidate's ``bench`` rows with other runs on the same questions, as JSON.

``python -m lab.experiments.sft.candidates NAME=FOLDER ...`` prints each run's per-class means
(EM, F1, calls, turns, prompt tokens, the first search's decomposition rate, the share
answered) and the first run paired with each of the others (EM per class, 95% paired
bootstrap; its LLM calls over theirs, a ratio with its interval); without arguments, the first
CPU-recipe candidate (``benchmarks/sft/cpu/``) against the rows the shipped policies had then.
The SFT levers' folders keep what it printed (``candidate.json`` and the like).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.paired import paired_by_class, ratio_by_class
from lab.paths import checkout_dir
from langgraph_parallel.eval.results import results_in

__all__ = ["RUNS", "USAGE", "main", "named_folders", "table"]

USAGE = (
    "usage: python -m lab.experiments.sft.candidates [NAME=FOLDER ...]\n"
    "  each FOLDER a bench output folder (results.jsonl); the first is paired with the others;\n"
    "  without arguments: the CPU-recipe candidate against the rows the shipped policies had then"
)
"""What ``--help`` and a malformed argument print."""

SFT = Path("benchmarks") / "sft"
RUNS = {
    "candidate parallel-search (runs/cpu/sft/parallel)": SFT / "cpu/hotpotqa/parallel-search",
    "shipped parallel-search (smollm2-parallel)": SFT / "cpu-adapters/hotpotqa/parallel-search",
    "shipped sequential (smollm2-sequential)": SFT / "cpu-adapters/hotpotqa/sequential",
    "direct (smollm2, closed-book)": SFT / "cpu-adapters/hotpotqa/direct",
}
"""The runs compared without arguments, relative to the checkout."""


def table(run: list[dict[str, Any]]) -> dict[str, Any]:
    """Return per-class means and the first search's decomposition rate."""
    out: dict[str, Any] = {}
    for cls in ("parallelizable", "sequential", "all"):
        part = [r for r in run if cls in ("all", r["class"])]
        searched = [r for r in part if r.get("turns")]
        decomposed = [r.get("first_turn_parallel", 0) for r in searched]
        out[cls] = {
            "n": len(part),
            **{k: round(statistics.fmean(r[k] for r in part), 3) for k in ("em", "f1")},
            **{
                k: round(statistics.fmean(r.get(k, 0) for r in part), 2)
                for k in ("llm_calls", "turns", "prompt_tokens")
            },
            "first_search_decomposed": round(statistics.fmean(decomposed), 3)
            if decomposed
            else None,
            "answered": round(statistics.fmean(r["answer"] is not None for r in part), 3),
        }
    return out


def named_folders(args: Sequence[str], usage: str) -> dict[str, str] | None:
    """Return ``NAME=FOLDER`` arguments as a dict, or print what is wrong and return ``None``.

    Args:
        args: The command line's arguments.
        usage: The command's usage text, printed after the error.
    """
    malformed = [arg for arg in args if "=" not in arg or not arg.split("=", 1)[1]]
    if malformed:
        print(f"error: {malformed[0]!r} is not NAME=FOLDER\n{usage}", file=sys.stderr)
        return None
    return dict(arg.split("=", 1) for arg in args)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables and the paired EM differences as JSON."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg in ("-h", "--help") for arg in args):
        print(USAGE)
        return 0
    if args:
        named = named_folders(args, USAGE)
        if named is None:
            return 2
        loaded = {name: results_in(Path(folder)) for name, folder in named.items()}
        first, *others = loaded
        pairs = {f"{first} - {name}": (loaded[first], loaded[name]) for name in others}
    else:
        loaded = {name: results_in(checkout_dir() / folder) for name, folder in RUNS.items()}
        candidate, shipped, sequential, direct = loaded.values()
        pairs = {
            "candidate - shipped parallel-search": (candidate, shipped),
            "candidate - direct": (candidate, direct),
            "candidate - shipped sequential": (candidate, sequential),
            "shipped parallel-search - direct": (shipped, direct),
        }
    result = {
        "tables": {name: table(run) for name, run in loaded.items()},
        "paired_em": {
            name: {cls: str(d) for cls, d in paired_by_class(a, b).items()}
            for name, (a, b) in pairs.items()
        },
        "calls_ratio": {
            name: {cls: r.interval() for cls, r in ratio_by_class(a, b, "llm_calls").items()}
            for name, (a, b) in pairs.items()
        },
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
