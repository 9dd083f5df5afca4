"""Paired comparisons of two systems on the same questions: the difference and its interval.

Every accuracy comparison we print (agent vs closed-book, ParallelSearch vs the sequential
agent, partial vs independent rollouts) is of two systems run on the same questions, so the
interval is of the per-question differences (a paired percentile bootstrap), not of two
independent means: the questions both get right or both miss drop out of it. Hand-written
rather than SciPy's ``bootstrap`` because it is ten lines, needs no dependency of the core
install, and is seeded so a figure is the same on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PairedDifference",
    "PairedRatio",
    "paired_bootstrap",
    "paired_by_class",
    "paired_by_id",
    "paired_ratio",
    "ratio_by_class",
]


@dataclass(frozen=True)
class PairedDifference:
    """``mean(a) - mean(b)`` over ``n`` paired questions, with a bootstrap interval.

    Attributes:
        n: Questions both systems answered (the pairs).
        a: Mean of the first system.
        b: Mean of the second system.
        diff: ``a - b``.
        low: Lower end of the interval of ``diff``.
        high: Upper end.
        level: The interval's coverage (0.95).
        wins: Questions where ``a`` scored higher than ``b``.
        losses: Questions where ``b`` scored higher.
    """

    n: int
    a: float
    b: float
    diff: float
    low: float
    high: float
    level: float
    wins: int
    losses: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of zero."""
        return self.low > 0 or self.high < 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairedDifference:
        """Read one back from its ``asdict`` form (a results file; older ones lack ``level``)."""
        return cls(**{"level": 0.95, **d})

    def interval(self, *, counts: bool = True, mark_zero: bool = False) -> str:
        """``+d [low, high] (95% paired bootstrap, n=N, +W / -L, includes zero)``.

        Args:
            counts: Whether to give the wins and losses.
            mark_zero: Whether to say "includes zero" when the interval does.
        """
        pct = round(100 * self.level)
        parts = [f"{pct}% paired bootstrap", f"n={self.n}"]
        parts += [f"+{self.wins} / -{self.losses}"] if counts else []
        parts += ["includes zero"] if mark_zero and not self.excludes_zero else []
        return f"{self.diff:+.3f} [{self.low:+.3f}, {self.high:+.3f}] ({', '.join(parts)})"

    def __str__(self) -> str:
        return f"{self.a:.3f} vs {self.b:.3f}: {self.interval()}"


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    reps: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Return ``mean(a) - mean(b)`` with a percentile bootstrap interval over the pairs.

    Args:
        a: Per-question scores of the first system (EM as 0/1, F1, ...).
        b: The second system's on the same questions, in the same order.
        reps: Bootstrap resamples.
        level: Coverage of the interval.
        seed: Seed of the resampling (the same figures on every machine).

    Raises:
        ValueError: ``a`` and ``b`` differ in length, or are empty.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"need the same questions for both systems (got {len(a)} and {len(b)}).")
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(reps))
    low, high = _percentile_ends(means, level)
    return PairedDifference(
        n=n,
        a=sum(map(float, a)) / n,
        b=sum(map(float, b)) / n,
        diff=sum(diffs) / n,
        low=low,
        high=high,
        level=level,
        wins=sum(d > 0 for d in diffs),
        losses=sum(d < 0 for d in diffs),
    )


@dataclass(frozen=True)
class PairedRatio:
    """``mean(a) / mean(b)`` over ``n`` paired questions, with a bootstrap interval.

    A cost ratio (LLM calls, search turns, tokens of one system over another's) is a ratio of
    means over the same questions, so its interval resamples the questions, each carrying both
    systems' counts, and takes the ratio of each resample's sums.

    Attributes:
        n: Questions both systems ran (the pairs).
        ratio: ``sum(a) / sum(b)``.
        low: Lower end of the interval of ``ratio``.
        high: Upper end.
        level: The interval's coverage (0.95).
    """

    n: int
    ratio: float
    low: float
    high: float
    level: float = 0.95

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairedRatio:
        """Read one back from its ``asdict`` form (a results file)."""
        return cls(**d)

    def interval(self, *, n: bool = True) -> str:
        """``0.71x [0.64, 0.78]`` (with ``n``: ``(95% paired bootstrap, n=N)`` after it)."""
        where = f" ({round(100 * self.level)}% paired bootstrap, n={self.n})" if n else ""
        return f"{self.ratio:.2f}x [{self.low:.2f}, {self.high:.2f}]{where}"


def paired_ratio(
    a: Sequence[float],
    b: Sequence[float],
    *,
    reps: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedRatio:
    """Return ``sum(a) / sum(b)`` with a percentile bootstrap interval over the pairs.

    Args:
        a: Per-question counts of the first system (LLM calls, turns, tokens).
        b: The second system's on the same questions, in the same order.
        reps: Bootstrap resamples.
        level: Coverage of the interval.
        seed: Seed of the resampling (the same figures on every machine).

    Raises:
        ValueError: ``a`` and ``b`` differ in length, are empty, or ``b`` sums to zero.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"need the same questions for both systems (got {len(a)} and {len(b)}).")
    if not sum(b):
        raise ValueError("the second system's counts sum to zero: no ratio to take.")
    pairs = [(float(x), float(y)) for x, y in zip(a, b, strict=True)]
    n = len(pairs)
    rng = random.Random(seed)
    ratios = []
    for _ in range(reps):
        pick = rng.choices(pairs, k=n)
        # A resample whose second system did nothing (possible only for tiny n) has no ratio:
        # it counts as infinitely large, so it can only widen the interval.
        below = sum(y for _, y in pick)
        ratios.append(sum(x for x, _ in pick) / below if below else float("inf"))
    low, high = _percentile_ends(sorted(ratios), level)
    return PairedRatio(
        n=n,
        ratio=sum(x for x, _ in pairs) / sum(y for _, y in pairs),
        low=low,
        high=high,
        level=level,
    )


def _percentile_ends(resampled: Sequence[float], level: float) -> tuple[float, float]:
    """Return the ends of the central ``level`` interval of sorted bootstrap ``resampled``."""
    tail = (1.0 - level) / 2
    last = len(resampled) - 1
    return resampled[int(tail * last)], resampled[int(round((1.0 - tail) * last))]


def ratio_by_class(
    a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]], key: str
) -> dict[str, PairedRatio]:
    """Return ``key``'s ratio of two runs' rows per question class and overall (shared ids).

    Classes where the second run's ``key`` sums to zero (closed book has no turns) are left out.
    """
    rows_a = {str(r["id"]): r for r in a}
    rows_b = {str(r["id"]): r for r in b}
    shared = sorted(set(rows_a) & set(rows_b))
    out = {}
    for cls in [*sorted({str(rows_a[i]["class"]) for i in shared}), "all"]:
        ids = [i for i in shared if cls in ("all", rows_a[i]["class"])]
        below = [float(rows_b[i][key] or 0) for i in ids]
        if ids and sum(below):
            out[cls] = paired_ratio([float(rows_a[i][key] or 0) for i in ids], below)
    return out


def paired_by_id(
    a: Mapping[str, float], b: Mapping[str, float], *, reps: int = 10_000, seed: int = 0
) -> PairedDifference:
    """Return :func:`paired_bootstrap` over the question ids both systems have scores for."""
    ids = sorted(set(a) & set(b))
    return paired_bootstrap([a[i] for i in ids], [b[i] for i in ids], reps=reps, seed=seed)


def paired_by_class(
    a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]], key: str = "em"
) -> dict[str, PairedDifference]:
    """Compare two benchmark runs' rows (``bench`` results) per question class and overall.

    Args:
        a: Rows of the first run (``id``, ``class`` and ``key`` each).
        b: Rows of the second run, on the same questions (only shared ids are compared).
        key: The per-question score to compare.

    Returns:
        ``class`` -> the paired difference, plus ``all``.
    """
    rows_a = {str(r["id"]): r for r in a}
    rows_b = {str(r["id"]): r for r in b}
    shared = sorted(set(rows_a) & set(rows_b))
    classes = sorted({str(rows_a[i]["class"]) for i in shared})
    out = {}
    for cls in [*classes, "all"]:
        ids = [i for i in shared if cls in ("all", rows_a[i]["class"])]
        out[cls] = paired_bootstrap(
            [float(rows_a[i][key]) for i in ids], [float(rows_b[i][key]) for i in ids]
        )
    return out
