"""Summarise per-question benchmark rows into per-graph means (``summary.json``).

The summary is a pure function of the rows, independent of their order (sums use
:func:`math.fsum`), so a run resumed after a kill, whose rows finished in another order, gives
the same summary as an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.eval.muse import MUSE_KEYS
from langgraph_parallel.eval.recall import RECALL_KEYS

__all__ = [
    "CLASSES",
    "METRIC_KEYS",
    "group_metrics",
    "mean_of",
    "mean_present",
    "share_of",
    "summarize",
    "write_summary",
]

METRIC_KEYS: tuple[str, ...] = ("n", "em", "f1", *RECALL_KEYS, *COUNTER_KEYS, "wall_s")
"""Keys of every metrics block: ``n`` is a count, the rest are means per question (the recall
keys over the questions that have gold titles and, for ``sub_query_hits``, sub-queries)."""

CLASSES: tuple[str, ...] = ("parallelizable", "sequential")
"""Question classes always present under ``by_class`` (ARCHITECTURE.md section 4)."""

Row = Mapping[str, Any]


def mean_of(rows: Iterable[Row], key: str) -> float:
    """Mean of ``key`` over ``rows``, a missing or ``None`` value counting as 0 (0.0 for none).

    For counters, EM and times, where a row without the value did none of it. Summed with
    :func:`math.fsum`, so the mean does not depend on the rows' order.
    """
    values = [float(row.get(key) or 0.0) for row in rows]
    return math.fsum(values) / len(values) if values else 0.0


def mean_present(rows: Iterable[Row], key: str) -> float | None:
    """Mean of ``key`` over the rows that have it (not ``None``); ``None`` when none has it.

    For values a row may lack without meaning zero: gold recall of a question without gold
    titles, ParallelMuse's joins on other graphs' rows, token regions without logprobs.
    """
    values = [float(row[key]) for row in rows if row.get(key) is not None]
    return math.fsum(values) / len(values) if values else None


def share_of(rows: Sequence[Row], test: Callable[[Row], object]) -> float:
    """Share of ``rows`` for which ``test`` is true (0.0 for no rows): answered, decomposed."""
    return sum(1 for row in rows if test(row)) / len(rows) if rows else 0.0


def group_metrics(rows: Sequence[Row]) -> dict[str, Any]:
    """Return ``n`` and the per-question means of EM, F1, gold recall, the counters and time.

    Rows with an ``error`` count like any other (EM 0, counters as recorded): a question the
    graph could not answer is a failure of the graph, not a question to leave out. A recall key
    is averaged over the rows where it is not ``None`` (questions without gold titles, rows
    written before recall was recorded, runs without a sub-query for ``sub_query_hits``).

    Args:
        rows: Result rows (see :func:`langgraph_parallel.eval.harness.run_graphs`).

    Rows of the ParallelMuse graphs also carry :data:`~langgraph_parallel.eval.muse.MUSE_KEYS`
    (joins and token accounting); their means, over the rows that have them, are added.

    Returns:
        ``{"n": int, key: float | None, ...}``; a mean is ``None`` when no row counts for it and
        is rounded to 6 decimals.
    """
    out: dict[str, Any] = {"n": len(rows)}
    for key in METRIC_KEYS[1:]:
        mean = mean_present(rows, key) if key in RECALL_KEYS else mean_of(rows, key)
        out[key] = None if mean is None or not rows else round(mean, 6)
    for key in MUSE_KEYS:  # ParallelMuse graphs only: absent from other graphs' blocks
        mean = mean_present(rows, key)
        if mean is not None:
            out[key] = round(mean, 6)
    return out


def _label(value: object) -> str:
    return "unknown" if value is None or value == "" else str(value)


def _grouped(rows: Sequence[Row], field: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(_label(row.get(field)), []).append(row)
    return groups


def summarize(rows: Iterable[Row], graphs: Sequence[str] | None = None) -> dict[str, Any]:
    """Build the ``summary.json`` structure from result rows.

    Shape: ``{"graphs": {NAME: {"all": M, "by_type": {TYPE: M}, "by_class": {"parallelizable":
    M, "sequential": M}}}}`` with ``M`` from :func:`group_metrics`. Both classes are always
    present (``n`` 0 when a class has no question); questions of neither class (datasets outside
    the ParallelSearch split) add an ``"unknown"`` entry only when there are some. Types are
    sorted; a missing type is ``"unknown"``.

    Args:
        rows: Result rows with at least ``graph``, ``id``, ``type`` and ``class``; each
            ``(graph, id)`` pair should appear once (the harness guarantees it).
        graphs: Graph names in the order wanted; a graph without rows gets ``n`` 0 everywhere.
            ``None``: every graph in ``rows``, sorted.

    Returns:
        The summary dict.
    """
    by_graph = _grouped(list(rows), "graph")
    names = list(graphs) if graphs is not None else sorted(by_graph)
    out: dict[str, Any] = {}
    for name in names:
        mine = by_graph.get(name, [])
        types = _grouped(mine, "type")
        classes = _grouped(mine, "class")
        by_class = {cls: group_metrics(classes.pop(cls, [])) for cls in CLASSES}
        by_class.update({cls: group_metrics(classes[cls]) for cls in sorted(classes)})
        out[name] = {
            "all": group_metrics(mine),
            "by_type": {kind: group_metrics(types[kind]) for kind in sorted(types)},
            "by_class": by_class,
        }
    return {"graphs": out}


def write_summary(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``summary`` as indented JSON, atomically (a kill never leaves half a file).

    Args:
        summary: The structure from :func:`summarize`.
        path: Destination file.

    Returns:
        The path written.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path
