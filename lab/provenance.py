"""The words every result block uses to say where its figures come from, and how it shows a share.

A figure in the docs names the command and the commit that made it, as its benchmark file
recorded them; these helpers turn those records into the same words in every block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = [
    "at_commit",
    "commits_of",
    "markdown_command",
    "pct",
    "shown_command",
    "short_commit",
]

_SCRIPT = re.compile(r"^(?:\S*/)?(?:python3?\s+)?tools/bench_(\w+)\.py(?:\s+(.*))?$")


def short_commit(commit: str) -> str:
    """Show a recorded commit as the pages do: short hash, and ``-dirty`` when recorded so."""
    return f"`{commit[:7]}{'-dirty' if commit.endswith('-dirty') else ''}`"


def at_commit(result: dict[str, Any]) -> str:
    """Say where the figures come from in the history: the commit the benchmark ran at."""
    commit = result.get("commit")
    if not commit:
        return "; it ran before benchmarks recorded their commit"
    return f" at commit {short_commit(commit)}"


def part_commit(result: dict[str, Any], part: str) -> str:
    """Like :func:`at_commit` for one part of a result that records its own commit.

    A part measured again alone (``first-contact --skip dtype``) keeps the other part's commit.
    """
    own = result.get(part) or {}
    return at_commit(own if own.get("commit") else result)


def commits_of(run_json: Path) -> str:
    """Name the commits a resumable ``bench`` folder's rows were written at (its ``run.json``)."""
    commits = json.loads(run_json.read_text()).get("commits") or []
    if not commits:
        return "commits not recorded"
    short = [short_commit(c) for c in commits]
    return "commit " + short[0] if len(short) == 1 else "commits " + ", ".join(short)


def pct(x: float) -> str:
    """Show a share as a whole percentage (``0.456`` -> ``46%``)."""
    return f"{100 * x:.0f}%"


def markdown_command(markdown: Path) -> str:
    """Return the command of the ``Command: `...``` line a benchmark's markdown file starts with.

    Raises:
        SystemExit: The file names no command.
    """
    match = re.search(r"^Command: `(.+)`$", markdown.read_text(), re.M)
    if not match:
        raise SystemExit(f"{markdown} names no command")
    return match.group(1)


def shown_command(command: str) -> str:
    """Show a recorded command as Markdown: in code if it runs today, else beside what does.

    Runs made before the experiments were declared in ``lab/`` recorded the script that made
    them, ``tools/bench_NAME.py``, since replaced by ``langgraph-parallel bench run NAME``: the
    page names the command that runs today in code, and the recorded one as plain text.
    """
    from lab.catalog import EXPERIMENTS  # the catalog imports the experiments, which import this

    match = _SCRIPT.match(command.strip())
    name = match.group(1).replace("_", "-") if match else None
    if match is None or name not in EXPERIMENTS:
        return f"`{command}`"
    flags = f" {match.group(2)}" if match.group(2) else ""
    return (
        f"`langgraph-parallel bench run {name}` (this run: tools/bench_{match.group(1)}.py{flags}, "
        "the script it replaced)"
    )
