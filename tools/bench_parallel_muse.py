"""ParallelMuse partial rollouts vs independent rollouts on long multi-hop trajectories.

Usage:
    .venv/bin/python tools/bench_parallel_muse.py --limit 17 --concurrency 4 \
        --out benchmarks/parallel_muse
    .venv/bin/python tools/bench_parallel_muse.py --sweep --limit 6 --concurrency 4 \
        --out benchmarks/parallel_muse

Runs the one harness, ``langgraph-parallel bench``, with ``--graphs
parallel-muse,rollouts-majority`` on three samples of multi-hop chains (``--limit`` each, seeded),
``max_turns`` 6, budget 8 trajectories, the shipped policy (``smollm2-parallel``; ``--model``
another, for both systems), join
``select`` (reports + analyst), the prefix cache emptied before each graph and 8 GiB of it
(:data:`KV_CACHE`), BM25 over:

- ``OUT/musique``: MuSiQue (2-4 hops), the file's own paragraphs as the corpus;
- ``OUT/2wiki``: 2WikiMultihopQA ``compositional``/``inference``, its paragraphs as the corpus;
- ``OUT/hotpotqa``: the bundled HotpotQA sample's ``bridge`` questions, the bundled corpus.

(BM25 rather than the hybrid default: the dense half would embed the two context corpora, ~9k
paragraphs, for about 9 minutes on this CPU; both systems search the same index. Reports in
style ``extract``, written from each trajectory without a model call: the shipped policy, trained
only on the agent's own format, writes no report. Asked for one, in style ``model`` or
``continue``, it repeats its ``<think>``/``<answer>`` lines until the 256-token limit (every
report of the earlier runs did), about 2k generated tokens a question the analyst then reads as
noise.)

Then writes ``OUT/parallel_muse.md``/``.json``: per dataset and over all questions, the agent
phase (uncached prefill, generated, their sum = cost, cached prefill, reasoning/exploration
tokens, trajectory shape) and the reduction apart, EM of each join, of the first rollout alone
and of "any trajectory right", the partial-over-independent ratios on the same questions, and
``OUT/muse_saving.png`` (per question, the cost ratio and EM against trajectory length).

``--sweep`` runs ``parallel-muse`` alone on the first ``--limit`` MuSiQue questions of the same
sample once per setting in :data:`SWEEP` (``OUT/sweep/<name>``, ``--join majority --reports
contested``: the agent phase only, no reports) and compares each with independent rollouts of the
same questions that it runs first (``OUT/sweep/independent``; tables in ``OUT/sweep.md``/
``.json``); ``extract-select`` keeps the default agent settings and joins with ``select`` over
extracted reports (no report calls), to set the reduction's cost and accuracy beside the main
run's model-written reports. Both modes resume.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from bench_parallel_search import mean
from bench_sft import run_resuming

from langgraph_parallel.eval.harness import RESULTS_FILE, load_results
from langgraph_parallel.eval.muse_report import plot_saving_vs_length
from langgraph_parallel.paths import repo_data_dir, shared_data_dir

PARTIAL, INDEPENDENT = "parallel-muse", "rollouts-majority"
DATASETS: dict[str, list[str]] = {
    "musique": ["--dataset", str(shared_data_dir() / "musique_dev_with_paragraphs200.jsonl.gz"),
                "--corpus", "contexts"],
    "2wiki": ["--dataset", str(shared_data_dir() / "2wikimultihopqa_dev_sample500.jsonl.gz"),
              "--types", "compositional,inference", "--corpus", "contexts"],
    "hotpotqa": ["--dataset", str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
                 "--types", "bridge"],
}  # fmt: skip
COMMON = ["--index", "bm25", "--max-turns", "6", "--budget", "8", "--report-style", "extract",
          "--fresh-cache", "--seed", "0"]  # fmt: skip
SWEEP: dict[str, list[str]] = {
    "default": [],
    "entropy": ["--mode", "entropy"],
    "region-reasoning": ["--region", "reasoning"],
    "region-all": ["--region", "all"],
    "ppl-top1": ["--mode", "ppl", "--top-k-steps", "1", "--samples-per-step", "7"],
    "entropy-top1": ["--mode", "entropy", "--top-k-steps", "1", "--samples-per-step", "7"],
    "all-top1": ["--region", "all", "--top-k-steps", "1", "--samples-per-step", "7"],
    "ppl-top1-later": [
        "--mode",
        "ppl",
        "--top-k-steps",
        "1",
        "--samples-per-step",
        "7",
        "--min-branch-step",
        "1",
    ],
    "top4": ["--top-k-steps", "4", "--samples-per-step", "1"],
    "rounds2": ["--top-k-steps", "1", "--samples-per-step", "2", "--rounds", "3"],
    "initial2": ["--initial-rollouts", "2", "--top-k-steps", "2", "--samples-per-step", "3"],
    "extract-select": ["--join", "select", "--report-style", "extract", "--reports", "distinct"],
}
"""Sweep settings over the default (1 initial rollout, 2 exploration branch points x 3 samples
ranked by perplexity, 1 round; the budget's remainder as fresh rollouts)."""
AGENT = ("agent_uncached_prefill", "agent_generated", "agent_cost", "agent_cached_prefill",
         "reasoning_tokens", "exploration_tokens", "trajectories", "forks",
         "steps_per_trajectory", "agent_cost_per_step", "llm_calls", "wall_s")  # fmt: skip
REDUCTION = ("reduction_calls", "reduction_cost", "reduction_cached_prefill")
JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_single", "em_any")
RATIOS = ("agent_cost", "agent_cost_per_step", "agent_uncached_prefill", "agent_generated",
          "exploration_tokens", "reasoning_tokens", "reduction_cost", "wall_s")  # fmt: skip


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    """Mean of ``key`` over the rows that have it (region tokens are ``None`` without logprobs)."""
    have = [r for r in rows if r.get(key) is not None]
    return mean(have, key) if have else None


KV_CACHE = {"kv_cache_memory_bytes": 8 << 30}
"""The in-process engine's KV cache for these runs (the default is 2 GiB). At 4 questions in
flight, 8 trajectories each of up to ~3k tokens, 2 GiB holds ~46k fp32 tokens of SmolLM2: on
MuSiQue partial rollout cost 1.04x the independent rollouts there and 0.87x at 8 GiB (eviction
of the initial rollouts' blocks before their forks ran is the likely cause; runs are noisy)."""


def _per_step(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``agent_cost_per_step``; rows written before the field get it from the same
    counts (cost over trajectories x steps per trajectory = all steps)."""
    steps = (row.get("steps_per_trajectory") or 0) * (row.get("trajectories") or 0)
    if "agent_cost_per_step" in row or row.get("agent_cost") is None or not steps:
        return row
    return {**row, "agent_cost_per_step": row["agent_cost"] / steps}


_FORK = re.compile(r"\(fork of \S+ at step (\d+)\)")


def _first_branch(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``first_branch_step``; rows written before the field get it from their tree,
    whose fork leaves read "(fork of tX at step k)" (``parallel_muse/tree.py``)."""
    if "first_branch_step" in row or "tree" not in row:
        return row
    steps = [int(k) for k in _FORK.findall(row["tree"])]
    return {**row, "first_branch_step": float(min(steps)) if steps else None}


def by_first_branch(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Agent cost of partial over independent rollouts, apart for the questions whose first fork
    was at step 0 (it shares only the question's prompt) and at a later step."""
    independent = {r["id"]: r for r in rows if r["graph"] == INDEPENDENT}
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
        "step 0": [],
        "a later step": [],
    }
    for row in rows:
        step = row.get("first_branch_step")
        if row["graph"] == PARTIAL and row["id"] in independent and step is not None:
            groups["step 0" if step == 0 else "a later step"].append((row, independent[row["id"]]))
    return {
        name: {
            "n": len(pairs),
            "agent_cost": sum(p["agent_cost"] for p, _ in pairs)
            / sum(i["agent_cost"] for _, i in pairs)
            if pairs
            else None,
        }
        for name, pairs in groups.items()
    }


def analyse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per graph means, and partial over independent on the questions both answered."""
    rows = [_first_branch(_per_step(r)) for r in rows]
    ids = {r["id"] for r in rows if r["graph"] == PARTIAL} & {
        r["id"] for r in rows if r["graph"] == INDEPENDENT
    }
    graphs = {}
    for graph in (PARTIAL, INDEPENDENT):
        part = [r for r in rows if r["graph"] == graph and r["id"] in ids]
        graphs[graph] = {"n": len(part), **{k: _mean(part, k) for k in AGENT + REDUCTION + JOINS}}
    partial, independent = graphs[PARTIAL], graphs[INDEPENDENT]
    ratios = {
        k: partial[k] / independent[k] if partial[k] is not None and independent[k] else None
        for k in RATIOS
    }
    best = max(
        ("em_join_graph", "em_join_majority", "em_join_weighted"), key=lambda k: partial[k] or 0
    )
    single = partial["em_single"] or 0.0
    return {
        "graphs": graphs,
        "partial_over_independent": ratios,
        "by_first_branch": by_first_branch(rows),
        "best_join": {
            "join": best,
            "em": partial[best],
            "em_single": single,
            "relative_gain": (partial[best] - single) / single if single else None,
            "independent_same_join": independent[best],
        },
    }


def run_main(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Run (or resume) the three samples and analyse them apart and together."""
    everything: list[dict[str, Any]] = []
    setting = SWEEP[args.settings[0]] if args.settings else []
    result: dict[str, Any] = {"command": " ".join([".venv/bin/python", *sys.argv]),
                              "settings": {"common": COMMON, "datasets": DATASETS,
                                           "limit": args.limit, "parallel_muse": setting,
                                           "model": args.model},
                              "datasets": {}}  # fmt: skip
    for name, words in DATASETS.items():
        folder = out / name
        # A setting's flags are ParallelMuse's own; the independent rollouts ignore them.
        run_resuming(["bench", *words, *COMMON, "--model", args.model, "--limit", str(args.limit),
                      "--graphs", f"{PARTIAL},{INDEPENDENT}", "--join", "select", *setting,
                      "--concurrency", str(args.concurrency), "--out", str(folder)])  # fmt: skip
        rows = [{**r, "dataset": name} for r in load_results(folder / RESULTS_FILE)]
        result["datasets"][name] = analyse(rows)
        everything += rows
    result["all"] = analyse(everything)
    plot_saving_vs_length(everything, out / "muse_saving.png")
    return result


def run_sweep(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Run each :data:`SWEEP` setting of ``parallel-muse`` against independent rollouts."""
    result: dict[str, Any] = {"command": " ".join([".venv/bin/python", *sys.argv]),
                              "settings": SWEEP, "model": args.model, "runs": {}}  # fmt: skip

    def run(graph: str, folder: Path, words: list[str]) -> None:
        # argparse keeps the last of repeated flags: a setting's own --join/--reports win.
        run_resuming(["bench", *DATASETS["musique"], *COMMON, "--model", args.model,
                      "--limit", str(args.limit),
                      "--graphs", graph, "--join", "majority", "--reports", "contested", *words,
                      "--concurrency", str(args.concurrency), "--out", str(folder)])  # fmt: skip

    # The independent rollouts are re-run here, by the same code and engine as the settings,
    # rather than taken from the main run, which may predate them.
    run(INDEPENDENT, out / "sweep" / "independent", [])
    baseline = load_results(out / "sweep" / "independent" / RESULTS_FILE)
    for name, words in SWEEP.items():
        if args.settings and name not in args.settings:
            continue
        folder = out / "sweep" / name
        run(PARTIAL, folder, words)
        rows = load_results(folder / RESULTS_FILE)
        ids = {r["id"] for r in rows}
        result["runs"][name] = analyse(rows + [r for r in baseline if r["id"] in ids])
    return result


def _cell(value: float | None, key: str) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if key.startswith("em") else f"{value:.1f}"


def _table(keys: tuple[str, ...], rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| | n | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for name, m in rows.items():
        lines.append(f"| {name} | {m['n']} | " + " | ".join(_cell(m[k], k) for k in keys) + " |")
    return lines


def _ratios(part: dict[str, Any]) -> str:
    ratios = ", ".join(
        f"{k} {v:.3f}x" for k, v in part["partial_over_independent"].items() if v is not None
    )
    best = part["best_join"]
    gain = "" if best["relative_gain"] is None else f" ({best['relative_gain']:+.0%})"
    split = "; ".join(
        f"first fork at {name}: {g['n']} questions, agent_cost {g['agent_cost']:.3f}x"
        for name, g in part.get("by_first_branch", {}).items()
        if g["agent_cost"] is not None
    )
    return (
        f"Partial over independent: {ratios} ({split}). Best join of parallel-muse: {best['join']} "
        f"EM {best['em']:.3f} vs its first rollout alone {best['em_single']:.3f}{gain}; "
        f"independent rollouts, same join: {best['independent_same_join']:.3f}."
    )


def markdown(result: dict[str, Any]) -> str:
    """The tables of ``parallel_muse.md``."""
    lines = ["# ParallelMuse: partial vs independent rollouts on multi-hop chains", "",
             f"Command: `{result['command']}`", "",
             "Means per question. Cost = uncached prefill + generated tokens as the engine "
             "counted them; agent = the rollouts, reduction = reports + analyst.", ""]  # fmt: skip
    parts = {**result["datasets"], "all": result["all"]}
    for name, part in parts.items():
        lines += [f"## {name}", "", "Agent phase:", "", *_table(AGENT, part["graphs"]), "",
                  "Reduction and joins:", "", *_table(REDUCTION + JOINS, part["graphs"]), "",
                  _ratios(part), ""]  # fmt: skip
    return "\n".join(lines)


def sweep_markdown(result: dict[str, Any]) -> str:
    """The table of ``sweep.md``."""
    keys = ("agent_cost", "agent_cost_per_step", "exploration_tokens", "reasoning_tokens", "forks",
            "steps_per_trajectory", "reduction_cost", "em_join_graph", "em_join_majority",
            "em_any")  # fmt: skip
    lines = ["# ParallelMuse sweep (agent phase, MuSiQue)", "", f"Command: `{result['command']}`",
             "", "Each setting's parallel-muse run over independent rollouts of the same questions "
             "run by the sweep itself (x = partial / independent); EM by majority vote.", "",
             "| setting | flags | n | " + " | ".join(keys) + " | independent em_join_majority |",
             "|---" * (len(keys) + 4) + "|"]  # fmt: skip
    for name, part in result["runs"].items():
        m, ratio = part["graphs"][PARTIAL], part["partial_over_independent"]
        # The baseline's reduction ran with model reports and select: no ratio for it.
        cells = [
            f"{_cell(m[k], k)} ({ratio[k]:.2f}x)"
            if ratio.get(k) and k != "reduction_cost"
            else _cell(m[k], k)
            for k in keys
        ]
        lines.append(
            f"| {name} | `{' '.join(SWEEP[name]) or '(defaults)'}` | {m['n']} | "
            + " | ".join(cells)
            + f" | {_cell(part['graphs'][INDEPENDENT]['em_join_majority'], 'em')} |"
        )
    base = next(iter(result["runs"].values()))["graphs"][INDEPENDENT]
    lines += ["", "Independent rollouts (the denominator): "
              + ", ".join(f"{k} {_cell(base[k], k)}" for k in keys[:-4]) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=17, help="questions per sample")
    parser.add_argument("--concurrency", type=int, default=4, help="questions in flight")
    parser.add_argument("--out", default="benchmarks/parallel_muse")
    parser.add_argument("--sweep", action="store_true", help="run the sweep (after the main run)")
    parser.add_argument(
        "--model",
        default="auto",
        help="policy of both systems (an adapter folder, smollm2, ...); 'auto': the graphs' "
        "default, the shipped smollm2-parallel",
    )
    parser.add_argument(
        "--settings",
        type=lambda text: text.split(","),
        default=[],
        help=f"names from {', '.join(SWEEP)}: the sweep runs only these; the main run takes "
        "one, ParallelMuse's settings instead of its defaults",
    )
    args = parser.parse_args()
    unknown = [name for name in args.settings if name not in SWEEP]
    if unknown or (len(args.settings) > 1 and not args.sweep):
        got = unknown or args.settings
        parser.error(f"--settings: one of {', '.join(SWEEP)} (several with --sweep); got {got}")
    os.environ["LANGGRAPH_PARALLEL_ENGINE"] = json.dumps(KV_CACHE)  # the bench children read it
    out = Path(args.out)
    if args.sweep:
        result = run_sweep(args, out)
        (out / "sweep.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "sweep.md").write_text(sweep_markdown(result))
        print(sweep_markdown(result))
        return
    result = run_main(args, out)
    (out / "parallel_muse.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "parallel_muse.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
