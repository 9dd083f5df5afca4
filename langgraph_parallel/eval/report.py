"""Render a benchmark summary as ``report.md`` (tables) and PNG plots (matplotlib, Agg).

Plots are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas, never through
``pyplot``, so no global backend is switched and no display is needed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.figures import new_figure
from langgraph_parallel.eval.muse_report import (
    SAVING_PLOT,
    TREES_FILE,
    muse_section,
    plot_saving_vs_length,
    write_trees,
)
from langgraph_parallel.eval.summary import CLASSES

__all__ = [
    "EM_PLOT",
    "REPORT_FILE",
    "USAGE_PLOT",
    "markdown_report",
    "plot_em_vs_tokens",
    "plot_usage_by_class",
    "write_drawings",
    "write_report",
]

REPORT_FILE = "report.md"
EM_PLOT = "em_vs_tokens.png"
USAGE_PLOT = "calls_turns_by_class.png"

_COLUMNS = (  # (summary key, header, format)
    ("n", "n", "{:d}"),
    ("em", "EM", "{:.3f}"),
    ("f1", "F1", "{:.3f}"),
    ("recall", "gold recall", "{:.3f}"),
    ("all_gold", "all gold", "{:.3f}"),
    ("sub_query_hits", "hit sub-queries", "{:.3f}"),
    ("llm_calls", "LLM calls", "{:.2f}"),
    ("turns", "turns", "{:.2f}"),
    ("sub_queries", "sub-queries", "{:.2f}"),
    ("prompt_tokens", "prompt tok", "{:.0f}"),
    ("cached_prompt_tokens", "cached tok", "{:.0f}"),
    ("completion_tokens", "completion tok", "{:.1f}"),
    ("wall_s", "wall s", "{:.2f}"),
)


def _cells(metrics: Mapping[str, Any]) -> list[str]:
    return ["–" if metrics.get(k) is None else fmt.format(metrics[k]) for k, _, fmt in _COLUMNS]


def _table(first: list[str], rows: Iterable[tuple[list[str], Mapping[str, Any]]]) -> list[str]:
    header = [*first, *(title for _, title, _ in _COLUMNS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([*keys, *_cells(m)]) + " |" for keys, m in rows]
    return [*lines, ""]


def _outcomes(rows: Iterable[Mapping[str, Any]], graphs: Iterable[str]) -> list[str]:
    counts = Counter(
        (r["graph"], "error" if r.get("error") else "answered" if r.get("answer") else "none")
        for r in rows
    )
    lines = ["| graph | answered | no answer | errors |", "|---|---|---|---|"]
    for name in graphs:
        tally = [str(counts[(name, kind)]) for kind in ("answered", "none", "error")]
        lines.append(f"| {name} | " + " | ".join(tally) + " |")
    return [*lines, ""]


def markdown_report(
    summary: Mapping[str, Any],
    *,
    command: str,
    rows: Iterable[Mapping[str, Any]] | None = None,
    plots: Iterable[str] = (EM_PLOT, USAGE_PLOT),
) -> str:
    """Return the Markdown report: the command, then all / by class / by type tables per graph.

    Counters and ``wall_s`` are means per question; ``n`` is a count.

    Args:
        summary: The structure from :func:`~langgraph_parallel.eval.summary.summarize`.
        command: The exact command that produced the run (shown in a code block).
        rows: The result rows; adds a table of answered / unanswered / errored questions.
        plots: File names of the plots to embed (relative to the report).

    Returns:
        The report text.
    """
    graphs: Mapping[str, Any] = summary["graphs"]
    lines = ["# Benchmark report", "", "Produced by:", "", "```sh", command, "```", ""]
    lines += [
        "Means per question (`n` is a count; tokens are per question, summed over calls).",
        "Gold recall: share of the question's gold supporting pages that any sub-query",
        "retrieved (in its top `--top-k`); all gold: share of questions with every gold page",
        "retrieved; hit sub-queries: share of sub-queries that retrieved a gold page. High recall",
        "with low EM is a reading failure, low recall a search failure; `–`: no gold titles.",
        "",
    ]
    lines += ["## All questions", ""]
    lines += _table(["graph"], (([g], s["all"]) for g, s in graphs.items()))
    lines += ["## By class", ""]
    lines += _table(
        ["graph", "class"],
        (([g, c], m) for g, s in graphs.items() for c, m in s["by_class"].items()),
    )
    lines += ["## By type", ""]
    lines += _table(
        ["graph", "type"], (([g, t], m) for g, s in graphs.items() for t, m in s["by_type"].items())
    )
    if rows is not None:
        lines += ["## Outcomes", "", *_outcomes(rows, graphs)]
    lines += muse_section(summary)
    lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plots]
    return "\n".join(lines) + "\n"


def plot_em_vs_tokens(summary: Mapping[str, Any], path: Path) -> Path:
    """Scatter EM against mean total tokens (prompt + completion) per question, one dot a graph."""
    figure = new_figure(6, 4.5)
    ax = figure.add_subplot()
    for name, block in summary["graphs"].items():
        m = block["all"]
        if not m["n"]:
            continue
        tokens = m["prompt_tokens"] + m["completion_tokens"]
        ax.scatter([tokens], [m["em"]], s=60)
        ax.annotate(name, (tokens, m["em"]), textcoords="offset points", xytext=(6, 6))
    ax.set_xlabel("mean tokens per question (prompt + completion)")
    ax.set_ylabel("exact match")
    ax.set_title("EM vs tokens")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    figure.savefig(path)
    return path


def plot_usage_by_class(summary: Mapping[str, Any], path: Path) -> Path:
    """Plot mean ``llm_calls`` and ``turns`` per question class as grouped bars, one per graph."""
    graphs: Mapping[str, Any] = summary["graphs"]
    figure = new_figure(9, 4)
    width = 0.8 / max(len(graphs), 1)
    for position, key in enumerate(("llm_calls", "turns"), start=1):
        ax = figure.add_subplot(1, 2, position)
        for i, (name, block) in enumerate(graphs.items()):
            values = [block["by_class"][c][key] or 0.0 for c in CLASSES]
            offsets = [x + (i - (len(graphs) - 1) / 2) * width for x in range(len(CLASSES))]
            ax.bar(offsets, values, width, label=name)
        ax.set_xticks(range(len(CLASSES)), CLASSES)
        ax.set_title(f"mean {key} per question")
        ax.grid(axis="y", alpha=0.3)
    # One legend below both panels, so it never covers a bar.
    figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=len(graphs))
    figure.savefig(path)
    return path


def write_drawings(
    summary: Mapping[str, Any],
    out_dir: str | Path,
    *,
    rows: Iterable[Mapping[str, Any]] | None = None,
) -> list[Path]:
    """Write the files of a report drawn from its data: the plots, and ParallelMuse's trees.

    :func:`write_report` writes them after each run, and ``langgraph-parallel results --draw``
    again from the committed ``summary.json`` and rows (the drawings are not committed).

    Args:
        summary: The structure from :func:`~langgraph_parallel.eval.summary.summarize`.
        out_dir: Output folder (must exist).
        rows: The result rows, for the ParallelMuse saving plot and trees.

    Returns:
        The paths written: EM plot, usage plot, and for ParallelMuse rows the saving plot and
        ``trees.md`` (:mod:`~langgraph_parallel.eval.muse_report`).
    """
    out = Path(out_dir)
    rows = list(rows or [])
    paths = [
        plot_em_vs_tokens(summary, out / EM_PLOT),
        plot_usage_by_class(summary, out / USAGE_PLOT),
    ]
    extra = [
        plot_saving_vs_length(rows, out / SAVING_PLOT),
        write_trees(rows, out / TREES_FILE),
    ]
    return paths + [p for p in extra if p is not None]


def write_report(
    summary: Mapping[str, Any],
    out_dir: str | Path,
    *,
    command: str,
    rows: Iterable[Mapping[str, Any]] | None = None,
) -> list[Path]:
    """Write ``report.md`` and its drawings (:func:`write_drawings`) into ``out_dir``.

    Args:
        summary: The structure from :func:`~langgraph_parallel.eval.summary.summarize`.
        out_dir: Output folder (must exist).
        command: The exact command that produced the run.
        rows: The result rows, for the outcomes table.

    Returns:
        The paths written: report, EM plot, usage plot, and for ParallelMuse rows the saving
        plot and ``trees.md`` (:mod:`~langgraph_parallel.eval.muse_report`).
    """
    out = Path(out_dir)
    rows = list(rows) if rows is not None else None
    paths = write_drawings(summary, out, rows=rows)
    plots = [p.name for p in paths if p.suffix == ".png"]
    report = out / REPORT_FILE
    text = markdown_report(summary, command=command, rows=rows, plots=plots)
    report.write_text(text, encoding="utf-8")
    return [report, *paths]
