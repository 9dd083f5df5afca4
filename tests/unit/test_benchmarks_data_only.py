"""``benchmarks/`` holds results only: a code file there fails (the lab, ``lab/``, owns code).

Results are data (rows, JSON, figures' inputs), logs and Markdown. Code is a file a language
runs: by its ending or name, by a ``#!`` line, or by its executable bit. What a clone holds is
read (git's tracked files and the untracked ones it does not ignore), so a local cache git
ignores does not count; outside a git checkout, every file does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CODE_ENDINGS = frozenset(
    [
        ".py",
        ".pyc",
        ".pyi",
        ".pyx",
        ".ipynb",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".bat",
        ".cmd",
        ".js",
        ".mjs",
        ".cjs",
        ".ts",
        ".r",
        ".jl",
        ".pl",
        ".rb",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".java",
        ".lua",
        ".mk",
        ".nix",
    ]
)
CODE_NAMES = frozenset({"Makefile", "Dockerfile", "justfile", "noxfile", "Snakefile"})


def _files(folder: Path) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "."],
        cwd=folder,
        capture_output=True,
    )
    if listed.returncode != 0:  # not a git checkout: every file
        return sorted(p for p in folder.rglob("*") if p.is_file())
    names = [n for n in listed.stdout.decode().split("\0") if n]
    return sorted(p for p in (folder / n for n in names) if p.is_file())


def code_files(folder: Path) -> list[str]:
    """Return the code files under ``folder`` (relative), each with why it counts as code."""
    found = []
    for path in _files(folder):
        with path.open("rb") as f:
            shebang = f.read(2) == b"#!"
        why = (
            "its ending"
            if path.suffix.lower() in CODE_ENDINGS
            else "its name"
            if path.name in CODE_NAMES
            else "a #! line"
            if shebang
            else "executable"
            if os.access(path, os.X_OK)
            else None
        )
        if why:
            found.append(f"{path.relative_to(folder).as_posix()} ({why})")
    return found


def test_no_code_file_is_under_benchmarks() -> None:
    found = code_files(REPO / "benchmarks")
    assert not found, (
        "benchmarks/ holds results only; move these into lab/ (an experiment's analysis beside "
        f"its spec, lab/experiments/) and say in the folder's README.md which command: {found}"
    )


def test_the_rule_sees_scripts_by_ending_shebang_and_mode_and_passes_data(
    tmp_path: Path,
) -> None:
    files = {
        "rows/results.jsonl.gz": b"\x1f\x8b\x08",
        "rows/joins.json": b"{}\n",
        "README.md": b"# Results\n",
        "wall.log": b"start\n",
        "profile.txt.gz": b"\x1f\x8b",
        "analyse.py": b"print(1)\n",
        "run.sh": b"set -e\n",
        "tool": b"#!/usr/bin/env python3\n",
        "Makefile": b"all:\n",
        "bin/run-me": b"\x7fELF",
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "bin/run-me").chmod(0o755)
    assert code_files(tmp_path) == [
        "Makefile (its name)",
        "analyse.py (its ending)",
        "bin/run-me (executable)",
        "run.sh (its ending)",
        "tool (a #! line)",
    ]


@pytest.mark.parametrize("ignored", [True, False])
def test_in_a_checkout_only_what_git_would_keep_counts(tmp_path: Path, ignored: bool) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("__pycache__/\n" if ignored else "")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "analyse.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "results.json").write_text("{}\n")
    found = code_files(tmp_path)
    assert found == ([] if ignored else ["__pycache__/analyse.cpython-311.pyc (its ending)"])
