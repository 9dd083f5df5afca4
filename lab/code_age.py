"""Whether a committed figure was measured on today's code: the *stale* rule extended to code age.

:mod:`~.staleness` judges a run by its model (today's adapter or another). A figure also
depends on code: the graphs, the engine, the command it times. Each experiment declares the
paths its figures depend on (:attr:`~.base.Experiment.measures`, built from the groups below),
and a run is **stale by code** when a file under those paths differs between a commit its rows
were written at and ``HEAD``. Differs means its code, not its words: a Python file is compared
by its syntax tree with the docstrings taken out (a comment or a docstring changes no figure),
any other file byte for byte; a file added or removed differs. The verdict names the first
commit after the run that made such a change and the files it changed, so a reader sees what
the figure predates, and ``bench run NAME`` re-measures it.

Only committed history is read (``HEAD``, not the working tree): the verdict is the same for
everyone at a commit. A ``-dirty`` run commit is read as its base commit, as :mod:`~.staleness`
does. Without git history (a copy, a shallow clone) there is no verdict (``None``): the README
block that shows these verdicts is then neither checked nor rewritten (:mod:`~.results`).
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = [
    "ENGINE",
    "GRAPHS",
    "HARNESS",
    "MUSE",
    "MUSE_HARNESS",
    "SERVING",
    "CodeChange",
    "code_change",
    "readable",
    "same_code",
]

_PKG = "langgraph_parallel"
GRAPHS = (
    *(f"{_PKG}/{d}" for d in ("agent", "parallel_search", "protocol", "prompts", "dialect")),
    *(f"{_PKG}/{d}" for d in ("retrieval", "baselines")),
    *(f"{_PKG}/{f}" for f in ("errors.py", "retry.py", "metrics.py", "rewards.py")),
)
"""The ParallelSearch graph and the agent loop every graph runs: what its answers depend on."""
MUSE = (f"{_PKG}/parallel_muse",)
"""ParallelMuse: forks, reports, joins and its accounting."""
ENGINE = tuple(
    f"{_PKG}/models/{name}.py"
    for name in (
        "adapters",
        "cpu",
        "dialect",
        "embedded",
        "engine",
        "folders",
        "replies",
        "sampling",
        "usage",
        "vllm_chat",
        "vllm_plugin",
        "worker",
    )
)
"""The in-process engine and the chat model over it: what a generated token depends on (not
the server, the CLI's quiet settings or the model identity records)."""
HARNESS = (f"{_PKG}/eval", f"{_PKG}/apps/bench.py", f"{_PKG}/apps/registry.py")
"""The harness that runs a graph over questions and writes its rows (``bench``)."""
MUSE_HARNESS = (f"{_PKG}/apps/bench_muse.py",)
"""``bench``'s ParallelMuse flags and the settings they build."""
SERVING = (
    f"{_PKG}/models",
    *(f"{_PKG}/apps/{m}.py" for m in ("arguments", "ask", "ask_server", "cli", "daemon")),
    f"{_PKG}/apps/registry.py",
)
"""Everything a timed command runs besides the graphs: the whole models package (servers
included) and the command line (``ask``, its background server, ``serve``)."""


@dataclass(frozen=True)
class CodeChange:
    """The first change to a figure's code after its run.

    Attributes:
        since: The run commit the change is counted from (as recorded, ``-dirty`` kept).
        commit: The first commit after it whose code differs, full hash.
        files: The files whose code that commit changed (of the declared paths).
    """

    since: str
    commit: str
    files: tuple[str, ...]


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True)
    except OSError:
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


@lru_cache(maxsize=4096)
def _content(root: Path, commit: str, path: str) -> bytes | None:
    """Return ``path`` at ``commit`` (``None``: the commit has no such file). Cached."""
    try:
        done = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _without_docstrings(source: bytes) -> str | None:
    """Return the syntax tree of Python ``source`` with every docstring taken out, dumped."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        first = body[0]
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def same_code(old: bytes | None, new: bytes | None, path: str) -> bool:
    """Whether two versions of ``path`` hold the same code (see the module docstring)."""
    if old is None or new is None:
        return old is new
    if old == new:
        return True
    if path.endswith(".py"):
        a, b = _without_docstrings(old), _without_docstrings(new)
        return a is not None and a == b
    return False


def _names(root: Path, old: str, new: str, paths: Sequence[str]) -> list[str] | None:
    """Return the files under ``paths`` whose bytes differ between two commits (git's diff)."""
    listing = _git(root, "diff", "--name-only", "--no-renames", old, new, "--", *paths)
    return None if listing is None else [f for f in listing.splitlines() if f]


def _differs(root: Path, old: str, new: str, path: str) -> bool:
    return not same_code(_content(root, old, path), _content(root, new, path), path)


def code_change(root: Path, commits: Iterable[str], paths: Sequence[str]) -> CodeChange | None:
    """Return the first code change under ``paths`` after the run commits, if ``HEAD`` has one.

    Args:
        root: The checkout whose history is read.
        commits: The commits the figure's rows were written at, in the order recorded; each is
            compared with ``HEAD`` and the first that differs is reported.
        paths: The files and folders the figure depends on (relative to ``root``).

    Returns:
        ``None`` when the code under ``paths`` at every run commit is ``HEAD``'s, when no paths
        or commits are given, or when git cannot answer (see :func:`readable`).
    """
    head = (_git(root, "rev-parse", "HEAD") or "").strip()
    return _code_change(root, head, tuple(commits), tuple(paths)) if head else None


@lru_cache(maxsize=256)
def _code_change(
    root: Path, head: str, commits: tuple[str, ...], paths: tuple[str, ...]
) -> CodeChange | None:
    """:func:`code_change` at ``head`` (cached: rows of one run ask the same question)."""
    if not paths:
        return None
    for recorded in commits:
        base = recorded.removesuffix("-dirty")
        names = _names(root, base, head, paths) or []
        if not any(_differs(root, base, head, f) for f in names):
            continue
        # The first commit after the run whose code differs from the run's, and its files.
        after = _git(root, "rev-list", "--reverse", "--no-merges", f"{base}..{head}", "--", *paths)
        for commit in (after or "").split():
            touched = _git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit)
            wanted = [f for f in (touched or "").splitlines() if f in names]
            first = tuple(f for f in wanted if _differs(root, base, commit, f))
            if first:
                return CodeChange(since=recorded, commit=commit, files=first)
        # Only through a merge: name HEAD, which certainly differs.
        changed = tuple(f for f in names if _differs(root, base, head, f))
        return CodeChange(since=recorded, commit=head, files=changed)
    return None


def readable(root: Path, commits: Iterable[str]) -> bool:
    """Whether git here knows every run commit (else :func:`code_change` cannot judge)."""
    return all(
        _git(root, "cat-file", "-e", f"{c.removesuffix('-dirty')}^{{commit}}") is not None
        for c in commits
    )
