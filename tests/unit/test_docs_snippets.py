"""The docs stay true: every Python snippet compiles and its imports of ours resolve, and every
repository path the docs name exists.

A snippet is any fenced ``python`` block of the README and the docs pages. Running them would need
models and servers; compiling them and resolving each ``from langgraph_parallel... import`` catches
what goes stale when code moves (a renamed function, a module that left the package).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
TOP_DIRS = ("examples", "benchmarks", "tools", "langgraph_parallel", "lab", "tests", "graphs")
TOP_DIRS += ("data", "docs", ".ci")
PATH = re.compile(r"`((?:" + "|".join(re.escape(d) for d in TOP_DIRS) + r")/[\w./-]*)`")


def snippets() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for k, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            found.append((f"{page.relative_to(REPO)}#{k}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "source"), snippets(), ids=[w for w, _ in snippets()])
def test_every_snippet_compiles_and_imports_what_exists(where: str, source: str) -> None:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(source, where, "exec", flags=flags)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and str(node.module).startswith("langgraph_parallel"):
            module = importlib.import_module(str(node.module))
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{where}: {node.module} has no {missing}"


def test_there_are_snippets_to_check() -> None:
    assert len(snippets()) >= 5  # the fence pattern still finds the pages' snippets


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = []
    for page in PAGES:
        for path in PATH.findall(page.read_text(encoding="utf-8")):
            clean = path.rstrip("/.")
            if any(c in clean for c in "*{}<>") or clean.endswith("..."):
                continue  # a pattern, not a path
            if not (REPO / clean).exists():
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, "\n".join(missing)
