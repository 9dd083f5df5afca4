"""What ``langgraph-parallel results --check`` checks beyond the blocks: orphan data, stray figures.

- **Orphan data**: a folder under ``benchmarks/`` that no experiment, no kept-history entry and
  no generated block accounts for (:func:`~.index_folders.orphans`).
- **Stray figures**: a result figure in README.md's prose, outside the generated blocks and
  code, that no generated block contains: a figure someone typed, which the next run will not
  update. A result figure is a ratio (``0.72x``), a share (``69.6%``, ``10-30%``), a signed
  number (``+0.220``), a metric's value (``EM 0.366``, ``recall@3 0.69``) or a time
  (``25.2 s``); version numbers, sizes (``135M``) and counts are not. The paper's own figures,
  which no run of ours makes, are quoted from :data:`PAPER_FIGURES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from lab.base import Experiment
from lab.index_folders import orphans
from lab.results_index import INDEX_BLOCKS

__all__ = ["FIGURE_PATTERNS", "PAPER_FIGURES", "problems", "prose", "stray_figures"]

PAPER_FIGURES = frozenset({"69.6%", "+62%", "10-30%"})
"""The papers' figures the README may quote: ParallelSearch's 69.6% of LLM calls and +62% on
parallelizable questions, ParallelMuse's 10-30% fewer exploration tokens."""

_NUMBER = r"\d+(?:\.\d+)?"
FIGURE_PATTERNS = (
    re.compile(rf"(?<![\w.]){_NUMBER}x(?!\w)"),  # a ratio: 0.72x
    re.compile(rf"(?<![\w.])[+-]?{_NUMBER}(?:[-–]{_NUMBER})?%"),  # a share: 69.6%, 10-30%
    re.compile(r"(?<![\w.])[+-]\d*\.\d+"),  # a signed difference: +0.220
    re.compile(r"\b(?:EM|F1|recall(?:@\d+)?|accuracy|reward)\b\D{0,12}?(\d*\.\d+)"),
    re.compile(r"(?<![\w.])\d+\.\d+ ?(?:s|ms|min)\b"),  # a time: 25.2 s
)
"""What counts as a result figure (a pattern with a group names the figure by that group)."""

_BLOCK = re.compile(r"<!-- ([\w-]+):start -->.*?<!-- \1:end -->", re.S)
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def prose(markdown: str) -> str:
    """Return ``markdown`` without its generated blocks and fenced code."""
    return _FENCE.sub("", _BLOCK.sub("", markdown))


def stray_figures(markdown: str, blocks: str, allowed: Iterable[str] = PAPER_FIGURES) -> list[str]:
    """Return the result figures of ``markdown``'s prose that ``blocks`` and ``allowed`` lack."""
    allowed = set(allowed)
    found = []
    for pattern in FIGURE_PATTERNS:
        for match in pattern.finditer(prose(markdown)):
            figure = match.group(match.lastindex or 0)
            if figure not in allowed and figure not in blocks and figure not in found:
                found.append(figure)
    return found


def problems(
    root: Path, experiments: Mapping[str, Experiment], block_texts: Mapping[str, str]
) -> list[str]:
    """Return a message per orphan folder and per stray README figure.

    Args:
        root: The checkout.
        experiments: The catalog.
        block_texts: Every generated block's name -> its (re-rendered) text; the index blocks,
            which name the folders because they are owned, do not count as naming them.
    """
    named = [t for n, t in block_texts.items() if n not in INDEX_BLOCKS]
    out = [
        f"{folder}/: orphan data: no experiment, KEPT_HISTORY entry or block accounts for it "
        "(lab/index_folders.py)"
        for folder in orphans(root, experiments, named)
    ]
    readme = root / "README.md"
    every = "\n".join(block_texts.values())
    out += [
        f"README.md: {figure!r} in the prose is in no generated block (move it into one, or "
        "quote a paper figure of results_checks.PAPER_FIGURES)"
        for figure in stray_figures(readme.read_text(encoding="utf-8"), every)
    ]
    return out
