"""The headroom of a ``train sample`` folder: pass@1, pass@K and the reward, per question class.

What training on the policy's own right samples can give is bounded by how often it is right at
all: pass@K (a question has a right sample among its ``K``) bounds what keeping the best sample
can teach, pass@1 (the share of right samples) is where the policy stands. Both use the unbiased
estimator ``1 - C(n - c, k) / C(n, k)`` of ``n`` samples with ``c`` right, so ``pass@k`` is
given for every ``k <= K``. Beside them, per class: the share of questions with a right sample
that also decomposed (parallelizable) — what ``train sft --from-samples`` keeps — and with both
a right and a wrong one — what a preference pair needs; the reward's distribution over samples
(mean, spread, quantiles, a histogram), each part's mean and the best sample's mean; the
decomposition, valid-format and error rates. Only questions with all ``K`` samples count.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_parallel.rewards import COMPONENTS
from langgraph_parallel.train.sample_shards import RUN_FILE, read_samples

__all__ = ["SUMMARY_FILE", "headroom", "markdown", "pass_at", "write_summary"]

SUMMARY_FILE = "summary.json"
HISTOGRAM = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6)
"""Bin edges of the total reward (the four-part reward is at most 1.6; the last bin is closed)."""
LABELS = {"parallelizable": "comparison (parallelizable)", "sequential": "bridge (sequential)"}


def pass_at(n: int, c: int, k: int) -> float:
    """Return the unbiased pass@k of ``n`` samples of which ``c`` are right (``k <= n``)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _wilson(successes: int, n: int) -> list[float]:
    """95% Wilson interval of a proportion."""
    if n == 0:
        return [0.0, 0.0]
    z, p = 1.959964, successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _group(questions: Sequence[Sequence[Mapping[str, Any]]], k: int) -> dict[str, Any]:
    """Return the figures of one group of questions, each with its ``k`` sample rows."""
    samples = [row for rows in questions for row in rows]
    totals = [float(r["reward"]["total"]) for r in samples]
    right = [sum(bool(r["correct"]) for r in rows) for rows in questions]
    usable = [
        any(r["correct"] and (r["decomposed"] or r["class"] != "parallelizable") for r in rows)
        for rows in questions
    ]
    n = len(questions)
    mean = sum(totals) / len(totals)
    counts = [0] * (len(HISTOGRAM) - 1)
    for total in totals:  # a total on an edge opens the bin above it (0.6 / 0.2 < 3 in floats)
        counts[min(len(counts) - 1, max(0, bisect.bisect_right(HISTOGRAM, total + 1e-9) - 1))] += 1
    searched = [r for r in samples if r["decomposed"] is not None]
    pass_k = {str(j): round(sum(pass_at(k, c, j) for c in right) / n, 4) for j in range(1, k + 1)}
    return {
        "questions": n,
        "samples": len(samples),
        "pass_at": pass_k,
        "pass_at_k_interval": _wilson(sum(c > 0 for c in right), n),
        "right_usable_at_k": round(sum(usable) / n, 4),
        "right_and_wrong_at_k": round(sum(0 < c < k for c in right) / n, 4),
        "reward": {
            "mean": round(mean, 4),
            "sd": round(math.sqrt(sum((t - mean) ** 2 for t in totals) / len(totals)), 4),
            **{
                name: round(_quantile(totals, q), 4)
                for name, q in (("min", 0), ("p25", 0.25), ("median", 0.5), ("p75", 0.75))
            },
            "max": round(max(totals), 4),
            "best_of_k_mean": round(
                sum(max(float(r["reward"]["total"]) for r in rows) for rows in questions) / n, 4
            ),
            "histogram": {"edges": list(HISTOGRAM), "counts": counts},
            "parts": {
                c: round(sum(float(r["reward"][c]) for r in samples) / len(samples), 4)
                for c in COMPONENTS
            },
        },
        "decomposed": round(sum(bool(r["decomposed"]) for r in searched) / len(searched), 4)
        if searched
        else None,
        "valid_format": round(sum(bool(r["valid_format"]) for r in samples) / len(samples), 4),
        "searches": round(sum(int(r["searches"]) for r in samples) / len(samples), 4),
        "errors": sum(bool(r.get("error")) for r in samples),
    }


def headroom(
    rows: Iterable[Mapping[str, Any]], samples: int, ids: Iterable[str] | None = None
) -> dict[str, Any]:
    """Summarise sample rows: by class, and by pool part and class (module docstring).

    Args:
        rows: Sample rows (:func:`~.sample.sample_row`).
        samples: ``K``: a question counts with its samples ``0 .. K-1``, if it has them all.
        ids: Count only these questions (``None``: every question in ``rows``).
    """
    wanted = None if ids is None else set(ids)
    by_question: dict[str, dict[int, Mapping[str, Any]]] = {}
    for row in rows:
        if int(row["sample"]) < samples and (wanted is None or str(row["id"]) in wanted):
            by_question.setdefault(str(row["id"]), {})[int(row["sample"])] = row
    complete = [
        [found[k] for k in range(samples)]
        for found in by_question.values()
        if len(found) == samples
    ]
    groups: dict[str, dict[str, list[list[Mapping[str, Any]]]]] = {"class": {}, "part": {}}
    for question in complete:
        first = question[0]
        groups["class"].setdefault(str(first["class"]), []).append(question)
        part = f"{first['part']}/{first['class']}"
        groups["part"].setdefault(part, []).append(question)
    return {
        "k": samples,
        "questions": len(complete),
        "incomplete_questions": len(by_question) - len(complete),
        "by_class": {c: _group(qs, samples) for c, qs in sorted(groups["class"].items())},
        "by_part": {p: _group(qs, samples) for p, qs in sorted(groups["part"].items())},
    }


def markdown(summary: Mapping[str, Any]) -> str:
    """Return the summary's table: one line per class, then per pool part and class."""
    k = summary["k"]
    head = (
        f"| questions | n | pass@1 | pass@{k} [95%] | right & decomposed@{k} | right+wrong@{k} "
        f"| reward mean (sd) | p25 / median / p75 | best-of-{k} reward | first search "
        "decomposed | valid format |"
    )
    lines = [head, "|" + "---|" * 11]
    for key, block in (("by_class", "class"), ("by_part", "part")):
        for name, g in summary[key].items():
            label = LABELS.get(name, name) if block == "class" else name
            r = g["reward"]
            low, high = g["pass_at_k_interval"]
            decomposed = "-" if g["decomposed"] is None else f"{g['decomposed']:.3f}"
            lines.append(
                f"| {label} | {g['questions']} | {g['pass_at']['1']:.3f} | "
                f"{g['pass_at'][str(k)]:.3f} [{low:.3f}, {high:.3f}] | "
                f"{g['right_usable_at_k']:.3f} | {g['right_and_wrong_at_k']:.3f} | "
                f"{r['mean']:.3f} ({r['sd']:.3f}) | {r['p25']:.2f} / {r['median']:.2f} / "
                f"{r['p75']:.2f} | {r['best_of_k_mean']:.3f} | {decomposed} | "
                f"{g['valid_format']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def write_summary(folder: Path, samples: int, ids: Iterable[str] | None = None) -> Path:
    """Summarise ``folder``'s shards into ``summary.json`` (with ``run.json``'s record).

    Adds ``trajectories_per_s``: the samples every piece wrote over its seconds.
    """
    rows = [row for shard in read_samples(folder).values() for row in shard]
    summary = headroom(rows, samples, ids)
    run = folder / RUN_FILE
    record = json.loads(run.read_text(encoding="utf-8")) if run.is_file() else {}
    pieces = record.get("pieces") or []
    seconds = sum(float(p.get("seconds", 0)) for p in pieces)
    written = sum(int(p.get("samples", 0)) for p in pieces)
    settings = record.get("settings") or {}
    summary = {
        **summary,
        "model": settings.get("model"),
        "settings": settings,
        "commits": record.get("commits") or [],
        "sampling_s": round(seconds, 1),
        "trajectories_per_s": round(written / seconds, 4) if seconds else None,
    }
    path = folder / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return path
