"""The ParallelMuse part of a benchmark report: accounting tables, saving vs length, trees.

Added to ``report.md`` when a run has ParallelMuse rows (:mod:`~langgraph_parallel.eval.muse`):

- the agent phase and the reduction, each as uncached prefill + generated (the cost the paper
  compares), with cached prefill, region tokens and the shape of the trajectories;
- EM of every join, of the first rollout alone and of "any trajectory right", on the same runs;
- partial over independent rollouts (``parallel-muse`` / ``rollouts-majority``) when both ran;
- ``muse_saving.png``: per question, the agent cost of partial over independent rollouts
  against the independent trajectories' length, and each system's EM by length;
- ``trees.md``: every question's tree as Mermaid (:func:`~..parallel_muse.tree.mermaid_tree`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.muse import JOIN_KEYS
from langgraph_parallel.eval.muse_names import INDEPENDENT, PARTIAL

__all__ = ["SAVING_PLOT", "TREES_FILE", "muse_section", "plot_saving_vs_length", "write_trees"]

TREES_FILE = "trees.md"
SAVING_PLOT = "muse_saving.png"

_COST = (
    "agent_uncached_prefill",
    "agent_generated",
    "agent_cost",
    "agent_cached_prefill",
    "reasoning_tokens",
    "exploration_tokens",
    "reduction_calls",
    "reduction_cost",
    "reduction_cached_prefill",
    "trajectories",
    "forks",
    "steps_per_trajectory",
    "agent_cost_per_step",
)
_RATIOS = (
    "agent_cost",
    "agent_cost_per_step",
    "exploration_tokens",
    "reasoning_tokens",
    "reduction_cost",
)


def _row(name: str, metrics: Mapping[str, Any], keys: Iterable[str]) -> str:
    cells = [
        "–"
        if metrics.get(k) is None
        else f"{metrics[k]:.3f}"
        if k.startswith("em")
        else f"{metrics[k]:.1f}"
        for k in keys
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


def _header(keys: tuple[str, ...]) -> list[str]:
    return ["| graph | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]


def muse_section(summary: Mapping[str, Any]) -> list[str]:
    """Return the report lines for the ParallelMuse graphs of ``summary`` (none: ``[]``)."""
    graphs = {g: b["all"] for g, b in summary["graphs"].items() if "agent_cost" in b["all"]}
    if not graphs:
        return []
    lines = [
        "## ParallelMuse: cost and joins",
        "",
        "Tokens per question as the engine counted them. Agent = the rollouts, reduction =",
        "reports + analyst; cost = uncached prefill + generated. `em_join_graph` is the",
        "graph's own answer; majority / weighted / evidence are voted over the same",
        "trajectories;",
        "`em_single` is the first rollout alone, `em_any` whether any trajectory was right.",
        "",
        *_header(_COST),
        *(_row(g, m, _COST) for g, m in graphs.items()),
        "",
        *_header(JOIN_KEYS),
        *(_row(g, m, JOIN_KEYS) for g, m in graphs.items()),
    ]
    if PARTIAL in graphs and INDEPENDENT in graphs:
        partial, independent = graphs[PARTIAL], graphs[INDEPENDENT]
        ratios = [
            f"{key} {partial[key] / independent[key]:.3f}x"
            for key in _RATIOS
            if partial.get(key) is not None and independent.get(key)
        ]
        lines += ["", f"Partial over independent rollouts: {', '.join(ratios)}."]
    return [*lines, ""]


def _paired(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    by_graph: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        by_graph.setdefault(str(row["graph"]), {})[str(row["id"])] = row
    partial, independent = by_graph.get(PARTIAL, {}), by_graph.get(INDEPENDENT, {})
    return [
        (partial[i], independent[i])
        for i in sorted(partial.keys() & independent.keys())
        if independent[i].get("agent_cost") and partial[i].get("agent_cost") is not None
    ]


def plot_saving_vs_length(rows: Iterable[Mapping[str, Any]], path: Path) -> Path | None:
    """Plot per-question cost ratio and EM against trajectory length; ``None`` without pairs."""
    from langgraph_parallel.eval.figures import new_figure

    pairs = _paired(rows)
    if not pairs:
        return None
    plot = new_figure(10, 4)
    cost, accuracy = plot.add_subplot(1, 2, 1), plot.add_subplot(1, 2, 2)
    lengths = [float(b["steps_per_trajectory"]) for _, b in pairs]
    cost.scatter(lengths, [a["agent_cost"] / b["agent_cost"] for a, b in pairs], s=18)
    cost.axhline(1.0, color="grey", lw=1)
    cost.set_xlabel("mean steps per independent trajectory")
    cost.set_ylabel("agent cost, partial / independent")
    by_length: dict[int, list[tuple[float, float]]] = {}
    for (a, b), length in zip(pairs, lengths, strict=True):
        by_length.setdefault(round(length), []).append((a["em"], b["em"]))
    xs = sorted(by_length)
    for k, name in enumerate((PARTIAL, INDEPENDENT)):
        ems = [sum(p[k] for p in by_length[x]) / len(by_length[x]) for x in xs]
        accuracy.plot(xs, ems, marker="o", label=name)
    accuracy.set_xlabel("mean steps per independent trajectory (rounded)")
    accuracy.set_ylabel("EM")
    accuracy.legend()
    for ax in (cost, accuracy):
        ax.grid(alpha=0.3)
    plot.savefig(path)
    return path


def write_trees(rows: Iterable[Mapping[str, Any]], path: Path) -> Path | None:
    """Write every row's Mermaid ``tree`` into one Markdown file; ``None`` if no row has one."""
    parts = [
        f"## {row['graph']} / {row['id']}\n\n{row['question']}\n\n```mermaid\n{row['tree']}\n```\n"
        for row in rows
        if row.get("tree")
    ]
    if not parts:
        return None
    path.write_text("# ParallelMuse trees\n\n" + "\n".join(parts), encoding="utf-8")
    return path
