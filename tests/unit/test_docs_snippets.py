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
import shlex
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


COMMAND_PAGES = [*PAGES, *sorted((REPO / "benchmarks").rglob("README.md"))]
CODE = re.compile(r"^```([\w-]*)\n(.*?)^```|`([^`\n]+)`", re.M | re.S)
INTERPRETERS = re.compile(r"python(?:3(?:\.\d+)?)?|bash|sh")
OURS = ("langgraph_parallel", "lab", "tools", "tests", "graphs", "benchmarks")


def commands(text: str) -> list[list[str]]:
    """Return the commands of a page's shell code (fenced blocks but Python, and inline code).

    Each command is its words (``shlex``), split at ``&&``, ``||``, ``;`` and ``|``, without the
    ``NAME=value`` assignments and ``time``/``timeout N`` before it.
    """
    found = []
    for match in CODE.finditer(text):
        lang, block, inline = match.groups()
        if block is not None and lang in ("python", "py", "pycon", "json", "yaml", "toml"):
            continue
        code = (block if block is not None else inline).replace("\\\n", " ")
        for line in code.splitlines():
            for part in re.split(r"&&|\|\||;|\|", line.split(" #")[0]):
                try:
                    words = shlex.split(part)
                except ValueError:
                    words = part.split()
                while words and (re.match(r"^\w+=", words[0]) or words[0] == "time"):
                    words = words[1:]
                if words[:1] == ["timeout"]:
                    words = words[2:]
                if words:
                    found.append(words)
    return found


def missing_files(words: list[str], page: Path) -> list[str]:
    """Return what a command names that does not exist: its script, module or experiment."""
    program = Path(words[0]).name

    def exists(path: str) -> bool:
        if path.startswith(("/", "$", "~")) or any(c in path for c in "*{}<>"):
            return True  # outside the checkout, or a pattern: not ours to check
        return (REPO / path).exists() or (page.parent / path).exists()

    if INTERPRETERS.fullmatch(program):
        args = words[1:]
        if "-m" in args:
            module = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            if module.split(".")[0] not in OURS:
                return []
            base = module.replace(".", "/")
            return [] if exists(f"{base}.py") or exists(f"{base}/__init__.py") else [module]
        scripts = [a for a in args if not a.startswith("-")][:1]
        return [s for s in scripts if s.endswith((".py", ".sh")) and not exists(s)]
    if program == "langgraph-parallel" and words[1:3] == ["bench", "run"] and len(words) > 3:
        from lab.catalog import EXPERIMENTS

        name = words[3]
        if name.isupper() or name in EXPERIMENTS:  # NAME: the docs' placeholder
            return []
        return [f"bench run {name}"]
    # A script run by its path (``tools/x.py --flag``); ``models/engine.py`` alone, relative
    # to the package, names a module, not a command.
    if words[0].split("/")[0] in TOP_DIRS and words[0].endswith((".py", ".sh")):
        return [] if exists(words[0]) else [words[0]]
    return []


def test_every_command_of_the_docs_names_files_that_exist() -> None:
    broken = [
        f"{page.relative_to(REPO)}: {' '.join(words)[:120]} (no {', '.join(gone)})"
        for page in COMMAND_PAGES
        for words in commands(page.read_text(encoding="utf-8"))
        if (gone := missing_files(words, page))
    ]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    ("text", "broken"),
    [
        ("Run `.venv/bin/python tools/gone.py --limit 3`.", ["tools/gone.py"]),
        ("```bash\nFOO=1 bash tools/setup.sh && bash tools/none.sh\n```", ["tools/none.sh"]),
        ("```\n.venv/bin/python -m lab.nothing_here \\\n  --out x\n```", ["lab.nothing_here"]),
        ("`langgraph-parallel bench run no-such-experiment`", ["bench run no-such-experiment"]),
        ("`tools/missing_script.py heldout`", ["tools/missing_script.py"]),
        ("`.venv/bin/python -m pytest -q` and `python /tmp/x.py`", []),
        ("```python\nimport tools.gone\n```", []),
    ],
)
def test_the_command_check_finds_what_is_gone(text: str, broken: list[str]) -> None:
    page = REPO / "docs" / "index.md"
    assert [m for words in commands(text) for m in missing_files(words, page)] == broken
