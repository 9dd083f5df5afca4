"""The code-age rule: a figure is stale when the code it measures changed after its run, and the
README's summary row says so (with the commit and the files), while a docstring, a comment or a
file outside the declared paths leaves it current."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lab.catalog import EXPERIMENTS
from lab.code_age import code_change, same_code
from lab.summary_block import render_summary

REPO = Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


CODE = '"""A module."""\n\n\ndef f(x):\n    """Add one."""\n    return x + 1\n'


def test_words_are_not_code_but_a_changed_line_is() -> None:
    reworded = CODE.replace("Add one.", "Return x plus one.").replace(
        "    return", "    # why\n    return"
    )
    assert same_code(CODE.encode(), reworded.encode(), "m.py")
    assert not same_code(CODE.encode(), CODE.replace("+ 1", "+ 2").encode(), "m.py")
    assert not same_code(b"a: 1\n", b"a: 2\n", "run.sh")  # not Python: byte for byte
    assert not same_code(CODE.encode(), None, "m.py")  # removed
    assert same_code(None, None, "m.py")


def test_a_run_before_a_code_change_is_stale_and_names_the_first_change(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    run = _commit(tmp_path, {"pkg/graph.py": CODE, "other/other.py": "y = 1\n"}, "run here")
    _commit(tmp_path, {"pkg/graph.py": CODE.replace("Add one.", "Add 1.")}, "docstring only")
    _commit(tmp_path, {"other/other.py": "y = 2\n", "README.md": "words\n"}, "outside")
    assert code_change(tmp_path, [run], ["pkg/graph.py"]) is None
    changed = _commit(tmp_path, {"pkg/graph.py": CODE.replace("+ 1", "+ 2")}, "code")
    _commit(tmp_path, {"pkg/graph.py": CODE.replace("+ 1", "+ 3")}, "more code")
    found = code_change(tmp_path, [f"{run}-dirty"], ["pkg"])
    assert found is not None
    assert (found.commit, found.files, found.since) == (changed, ("pkg/graph.py",), f"{run}-dirty")
    assert code_change(tmp_path, [run], []) is None  # nothing declared: no verdict


def test_a_change_put_back_as_it_was_is_the_same_code(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    run = _commit(tmp_path, {"pkg/graph.py": CODE}, "run here")
    _commit(tmp_path, {"pkg/graph.py": CODE.replace("+ 1", "+ 2")}, "change")
    _commit(tmp_path, {"pkg/graph.py": CODE}, "revert")
    assert code_change(tmp_path, [run], ["pkg"]) is None


def test_no_history_gives_no_verdict(tmp_path: Path) -> None:
    assert code_change(tmp_path, ["0123abc"], ["pkg"]) is None


def test_every_readme_row_names_its_machine_and_a_stale_row_says_before_what() -> None:
    rows = render_summary().splitlines()[2:]
    assert len(rows) >= 8
    for row in rows:
        run = row.split(" | ")[-1]
        assert "AMD EPYC" in run or "machine not recorded" in run, row
        assert "engine" in run or "dtype" in run, row
        if "**stale**" in run:
            assert "measured at `" in run and ", before " in run, row
    muse = next(r for r in rows if r.startswith("| ParallelMuse"))
    assert "engine float32" in muse  # its run.json says so
    for name in ("sft", "parallel-muse", "first-contact", "serving", "reliability"):
        assert EXPERIMENTS[name].measures, name
        for path in EXPERIMENTS[name].measures:
            assert (REPO / path).exists(), path
