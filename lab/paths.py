"""Where the lab writes: the clone it lives in (``benchmarks/``, ``docs/``, ``README.md``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["checkout_dir"]


def checkout_dir() -> Path:
    """Return the clone the lab lives in (the folder holding ``lab/``).

    Its ``benchmarks/``, ``docs/`` and ``README.md`` are what the results pages are made from.
    """
    return Path(__file__).resolve().parents[1]
