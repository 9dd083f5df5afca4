"""The drawings of ``benchmarks/``, drawn again from the committed data: ``results --draw``.

Plots and ParallelMuse trees are not committed (``.gitignore``): each is drawn from files that
are, by the function that draws it when a run ends, so a drawing always shows its data:

- a bench folder (``summary.json`` with ``graphs``): ``em_vs_tokens.png`` and
  ``calls_turns_by_class.png`` from the summary and, where it has ParallelMuse rows,
  ``muse_saving.png`` and ``trees.md`` from the rows of the summary's graphs
  (:func:`~langgraph_parallel.eval.report.write_drawings`, what ``bench`` writes beside
  ``report.md``);
- a ``parallel-muse`` experiment folder (``parallel_muse.json``): ``muse_saving.png`` over its
  samples' rows (:func:`~.muse.draw_saving`);
- a GRPO run's folder (``metrics.jsonl`` with rewards): ``reward_curve.png``
  (:func:`~langgraph_parallel.train.reward_curve.plot_rewards`).

Nothing else is written: ``report.md``, the tables and every committed file stay as they are.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from lab.experiments.muse.muse import TABLE, draw_saving
from langgraph_parallel.eval.report import write_drawings
from langgraph_parallel.eval.results import SUMMARY_FILE, results_in
from langgraph_parallel.train.reward_curve import plot_rewards, read_metrics

__all__ = ["METRICS_FILE", "REWARD_PLOT", "draw_folder", "print_drawn"]

METRICS_FILE = "metrics.jsonl"
REWARD_PLOT = "reward_curve.png"
_INPUTS = (SUMMARY_FILE, TABLE, METRICS_FILE)
"""The files whose folder has drawings (each folder is drawn once, whichever it holds)."""


def _draw_bench(folder: Path) -> list[Path]:
    summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
    if "graphs" not in summary:  # an experiment's record (apps.experiments.record), no bench
        return []
    graphs = summary["graphs"]
    rows = [r for r in results_in(folder) if r["graph"] in graphs]
    return write_drawings(summary, folder, rows=rows)


def draw_folder(folder: Path) -> list[Path]:
    """Draw every drawing whose data ``folder`` holds; return the files written.

    Args:
        folder: A bench, ``parallel-muse`` experiment or GRPO run folder (any other: nothing).
    """
    paths = []
    if (folder / SUMMARY_FILE).is_file():
        paths += _draw_bench(folder)
    if (folder / TABLE).is_file() and (saving := draw_saving(folder)) is not None:
        paths.append(saving)
    log = folder / METRICS_FILE
    if log.is_file() and read_metrics(log):  # an SFT run's log has no rewards: nothing to draw
        plot_rewards(log, folder / REWARD_PLOT)
        paths.append(folder / REWARD_PLOT)
    return paths


def _folders(root: Path) -> list[Path]:
    return sorted({p.parent for name in _INPUTS for p in root.rglob(name)})


def print_drawn(root: Path) -> int:
    """Draw every folder of ``root/benchmarks`` that has drawings, a line per folder and a total.

    Returns:
        0 (a folder without data to draw is skipped, not an error).
    """
    start = time.perf_counter()
    files = folders = 0
    for folder in _folders(root / "benchmarks"):
        if paths := draw_folder(folder):
            print(f"{folder.relative_to(root)}/: {', '.join(p.name for p in paths)}", flush=True)
            files, folders = files + len(paths), folders + 1
    seconds = time.perf_counter() - start
    print(f"drew {files} files in {folders} folders ({seconds:.0f} s)")
    return 0
