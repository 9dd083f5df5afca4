"""Every install hint gives a command that works from a checkout, and names a real extra.

No release of langgraph-parallel is on PyPI, so ``pip install 'langgraph-parallel[x]'`` would
install whatever anyone registers under the name: no message or page may say it.
"""

from __future__ import annotations

import ast
import re
import shlex
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

import langgraph_parallel
from langgraph_parallel import _version, errors
from langgraph_parallel.errors import install_hint

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "langgraph_parallel"
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
)
PUBLISHED_NAME = re.compile(r"pip install\s+(?:-U\s+)?['\"]?langgraph[-_]parallel\b")
CHECKOUT_EXTRA = re.compile(r"""pip install (?:-e )?['"]?\.\[([a-z,]+)\]""")


def _user_texts() -> list[Path]:
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    code = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "examples").rglob("*.py"),
        *(ROOT / "graphs").rglob("*.py"),
    ]
    return pages + code


def _hinted_extras() -> dict[str, list[str]]:
    """Each ``install_hint("x")`` call of the package, by extra: where it is."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "install_hint"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.setdefault(node.args[0].value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_hint_names_an_extra_of_pyproject() -> None:
    hinted = _hinted_extras()
    # the messages of the optional parts: training, engine, clients, retrieval, plots, agents
    assert {"train", "cpu", "openai", "retrieval", "faiss", "tavily", "eval", "agents"} <= set(
        hinted
    )
    unknown = {extra: where for extra, where in hinted.items() if extra not in EXTRAS}
    assert unknown == {}
    for path in _user_texts():
        for extras in CHECKOUT_EXTRA.findall(path.read_text()):
            assert set(extras.split(",")) <= EXTRAS, (path, extras)


def test_no_message_or_page_installs_the_unpublished_name() -> None:
    named = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
        for path in _user_texts()
        for text in [path.read_text()]
        for match in PUBLISHED_NAME.finditer(text)
    ]
    assert named == []


def test_a_hint_installs_from_this_checkout_or_says_to_use_a_clone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hint = install_hint("train")
    command = shlex.split(hint.split("`")[1])
    assert command == ["pip", "install", "-e", f"{ROOT}[train]"]
    assert (ROOT / "pyproject.toml").is_file() and "no release on PyPI" in hint
    monkeypatch.setattr(errors, "__file__", "/usr/lib/site-packages/langgraph_parallel/errors.py")
    hint = install_hint("train")
    assert shlex.split(hint.split("`")[1]) == ["pip", "install", "-e", ".[train]"]
    assert "a clone of langgraph-parallel" in hint
    assert not PUBLISHED_NAME.search(hint)


def test_the_version_is_the_installed_one_else_the_source_trees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert langgraph_parallel.__version__ == version("langgraph-parallel") == project["version"]

    def not_installed(name: str) -> str:
        raise _version.PackageNotFoundError(name)

    monkeypatch.setattr(_version, "version", not_installed)
    assert _version.installed_version() == f"{project['version']}+source"
    monkeypatch.setattr(_version, "__file__", "/nowhere/langgraph_parallel/_version.py")
    assert _version.installed_version() == "0+unknown"


# Top-level modules of an extra, as examples import them, and the extra that brings them.
EXTRA_OF_MODULE = {"langchain": "agents", "matplotlib": "eval", "langchain_openai": "openai"}


def test_each_example_says_which_extras_it_needs() -> None:
    for path in sorted((ROOT / "examples").glob("[0-9]*.py")):
        tree = ast.parse(path.read_text())
        paragraphs = (ast.get_docstring(tree) or "").split("\n\n")
        needs = " ".join(paragraphs[1].split()) if len(paragraphs) > 1 else ""
        assert needs.startswith("Needs: "), path.name
        imported = {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        } | {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        for module, extra in EXTRA_OF_MODULE.items():
            if module in imported:
                assert f"`{extra}` extra" in needs, (path.name, extra)
        if "--real" in path.read_text():
            assert "`cpu`" in needs and "`retrieval`" in needs, path.name
