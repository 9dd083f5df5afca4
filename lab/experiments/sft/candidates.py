"""Compare a CPU-recipe candidate with other runs on the same questions.

Run: ``.venv/bin/python benchmarks/sft/cpu/analyse.py > benchmarks/sft/cpu/candidate.json`` (the
first candidate against the shipped rows), or with ``NAME=BENCH_FOLDER`` arguments: the first is
the candidate, paired with each of the others (EM per class, 95% paired bootstrap).
"""

import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from lab.paired import paired_by_class  # noqa: E402
from langgraph_parallel.eval.results import results_in  # noqa: E402

SFT = REPO / "benchmarks" / "sft"
RUNS = {
    "candidate parallel-search (runs/cpu/sft/parallel)": SFT / "cpu/hotpotqa/parallel-search",
    "shipped parallel-search (smollm2-parallel)": SFT / "cpu-adapters/hotpotqa/parallel-search",
    "shipped sequential (smollm2-sequential)": SFT / "cpu-adapters/hotpotqa/sequential",
    "direct (smollm2, closed-book)": SFT / "cpu-adapters/hotpotqa/direct",
}


def rows(folder: Path) -> list[dict]:
    """Return a bench run's result rows (``results.jsonl`` or ``.jsonl.gz``)."""
    return results_in(folder)


def table(run: list[dict]) -> dict:
    """Return per-class means and the first search's decomposition rate."""
    out = {}
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


def main() -> None:
    """Print the tables and the paired EM differences as JSON."""
    if sys.argv[1:]:
        named = dict(arg.split("=", 1) for arg in sys.argv[1:])
        loaded = {name: rows(Path(folder)) for name, folder in named.items()}
        first, *others = loaded
        pairs = {f"{first} - {name}": (loaded[first], loaded[name]) for name in others}
    else:
        loaded = {name: rows(folder) for name, folder in RUNS.items()}
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
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
