"""Which commit a run records: ``paths.source_commit`` and what makes it ``-dirty``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from langgraph_parallel.paths import source_commit


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A committed checkout with library, lab and tools code and a benchmark result."""
    files = {
        "langgraph_parallel/graph.py": "A = 1\n",
        "lab/experiments/muse/joins.py": "B = 1\n",
        "tools/setup.sh": "echo set up\n",
        "benchmarks/parallel_muse/joins.json": "{}\n",
        "docs/results.md": "# Results\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    return tmp_path


@pytest.mark.parametrize(
    "edited", ["lab/experiments/muse/joins.py", "langgraph_parallel/graph.py", "tools/setup.sh"]
)
def test_edited_code_of_the_library_the_lab_or_the_tools_is_recorded_dirty(
    checkout: Path, edited: str
) -> None:
    head = _git(checkout, "rev-parse", "HEAD")
    assert source_commit(checkout) == head
    (checkout / edited).write_text("C = 2\n")
    assert source_commit(checkout) == head + "-dirty"


@pytest.mark.parametrize("written", ["benchmarks/parallel_muse/joins.json", "docs/results.md"])
def test_results_and_docs_a_run_rewrites_leave_the_commit_clean(
    checkout: Path, written: str
) -> None:
    head = _git(checkout, "rev-parse", "HEAD")
    (checkout / written).write_text('{"new": 1}\n')
    assert source_commit(checkout) == head


def test_outside_a_checkout_the_commit_is_unknown(tmp_path: Path) -> None:
    assert source_commit(tmp_path) == "unknown"
