"""Issue 37's lever run: the shipped SFT recipe on two-sentence passages, without the reading step.

``python -m lab.experiments.sft.lever_noread`` trains as the shipped recipe does with
``--passage-sentences 2``, the teacher's last think as it was before the reading step (e60cfe1):
the supporting sentences, no stated comparison. It runs ``langgraph-parallel train sft --out
runs/lever-noread --per-class 120 --epochs 3 --policies parallel --passage-sentences 2
--save-steps 10 --resume`` with the teacher's reading
(:func:`~langgraph_parallel.train.reading.reading`) replaced by its grounded sentences alone.
``benchmarks/sft/lever-noread/`` holds what it made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from unittest import mock

import langgraph_parallel.train.synth as synth
from langgraph_parallel.apps.cli import main as cli

__all__ = ["TRAIN", "main", "no_reading"]

TRAIN = (
    *("train", "sft", "--out", "runs/lever-noread", "--per-class", "120", "--epochs", "3"),
    *("--policies", "parallel", "--passage-sentences", "2", "--save-steps", "10", "--resume"),
)
"""The ``langgraph-parallel`` command it runs, with the reading step taken out."""


def no_reading(
    question: str,
    titles: Sequence[str],
    facts: dict[str, tuple[str, ...]],
    answer: str,
    budget: int,
    grounded: Callable[[int], str],
) -> str:
    """Return the last think without the reading step: the grounded sentences alone."""
    return grounded(budget)


def main(argv: Sequence[str] | None = None) -> int:
    """Train (or resume) the lever's policy; extra arguments are added to :data:`TRAIN`."""
    with mock.patch.object(synth, "reading", no_reading):
        return cli([*TRAIN, *(argv or ())])


if __name__ == "__main__":
    raise SystemExit(main())
