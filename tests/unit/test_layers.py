"""Imports point down: the structure drawing of the library has no circle and no upward edge.

Every import of a ``langgraph_parallel`` module, lazy ones inside functions and
``TYPE_CHECKING`` ones included, is read from the source and checked against the layer table
of ``ARCHITECTURE.md`` section 1 (apps -> paper packages -> agent -> protocol/models/retrieval).
A new package fails here until it is given a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "langgraph_parallel"
LAB = PACKAGE.parent / "lab"
EXAMPLES = PACKAGE.parent / "examples"

LAYERS: dict[str, int] = {
    # foundations: no imports of the library, or only of each other downwards
    "errors": 0,
    "paths": 0,
    "metrics": 0,
    "protocol": 0,
    "jsonl": 1,
    "retry": 1,
    "prompts": 2,
    "retrieval": 2,
    "models": 3,
    # the trained policies' tool dialect: found by models/ through an entry point, never imported
    "dialect": 3,
    "rewards": 3,
    # the Search-R1 step loop both papers run
    "agent": 4,
    # the papers, on one floor: neither imports the other (ParallelMuse gets the loop's act
    # injected, agent/loop.py's LoopRollouts), then the baselines they are measured against
    "parallel_search": 5,
    "parallel_muse": 5,
    "baselines": 6,
    # what measures and trains them
    "eval": 7,
    "train": 8,
    # what people run
    "apps": 9,
}


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _edges() -> set[tuple[str, str, str]]:
    """(importing file, its group, imported group) for every library import."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith("langgraph_parallel.") and _group(module) != "__init__":
                    found.add((str(path.relative_to(PACKAGE)), _group(module), _group(name)))
    return found


def test_every_package_has_a_layer() -> None:
    groups = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    groups = {g for g in groups if not g.startswith(("_", ".")) and g not in {"adapters", "py"}}
    assert groups <= set(LAYERS), f"give these a layer: {sorted(groups - set(LAYERS))}"


def test_imports_point_down() -> None:
    upward = sorted(
        f"{path}: {group} (layer {LAYERS[group]}) imports {target} (layer {LAYERS[target]})"
        for path, group, target in _edges()
        if group != target and LAYERS[target] >= LAYERS[group]
    )
    assert not upward, "\n".join(upward)


def test_models_know_no_prompt_and_no_protocol() -> None:
    """The engine and the chat models run any model: how a policy is prompted and how its steps
    read (prompts/, protocol/, the dialect) sit above them and are handed in, never imported."""
    found = sorted(
        f"{path} imports {target}"
        for path, group, target in _edges()
        if group == "models" and target in {"prompts", "protocol", "dialect"}
    )
    assert found == []


def _packed(text: str) -> bool:
    return "# fmt: skip" in text or "# fmt: off" in text


def test_modules_are_one_thing_named_in_their_first_line_and_not_packed() -> None:
    """ARCHITECTURE.md: one thing per module, named in its first docstring line, up to about 400
    lines when it is one thing, and no line packed to meet a count (``# fmt: skip``)."""
    long, unnamed, packed = {}, [], []
    for path in sorted([*PACKAGE.rglob("*.py"), *LAB.rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(PACKAGE.parent))
        if (n := len(text.splitlines())) > 400:
            long[name] = n
        docstring = ast.get_docstring(ast.parse(text))
        if not (docstring and docstring.splitlines()[0].strip()):
            unnamed.append(name)
        if _packed(text):
            packed.append(name)
    # The tests and examples are code too: none packed either (this file names the markers).
    for path in sorted([*(PACKAGE.parent / "tests").rglob("*.py"), *EXAMPLES.rglob("*.py")]):
        if path != Path(__file__).resolve() and _packed(path.read_text(encoding="utf-8")):
            packed.append(str(path.relative_to(PACKAGE.parent)))
    assert not long, f"over about 400 lines: is it one thing? {long}"
    assert not unnamed, f"no first docstring line saying what the module is for: {unnamed}"
    assert not packed, f"lines packed past the formatter: {packed}"


def test_the_package_never_imports_the_lab() -> None:
    """The lab (experiments, the docs' writers) sits beside the wheel: it imports the package,
    never the other way; its commands reach the CLI through an entry point."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [
                f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] == "lab"
            ]
    assert found == []


def _module_graph() -> dict[str, set[str]]:
    """Module -> the library modules it imports (lazy and ``TYPE_CHECKING`` imports included).

    ``from package import submodule`` counts as importing the submodule; a module's own parent
    packages are left out (Python runs them first whatever the module imports).
    """
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                subs = {f"{node.module}.{alias.name}" for alias in node.names}
                targets.update(subs & modules.keys() or {node.module})
        graph[module] = {
            t for t in targets if t in modules and t != module and not module.startswith(t + ".")
        }
    return graph


def test_no_module_imports_itself_through_others():
    # A circle made by splitting a file for its length (report <-> muse_report, sft <-> lora)
    # means the split was not by responsibility. Depth-first search for a back edge.
    graph = _module_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


PAPER_TERMS = ("parallelsearch", "parallelmuse", "muse", "fanout", "subquery")
"""Words of the two papers' own names, compared without case and underscores."""


def _defined_names(tree: ast.Module) -> list[str]:
    """Classes, functions and methods (at any depth) and module-level assigned names."""
    names = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def test_the_agent_loop_defines_no_name_of_either_paper() -> None:
    """``agent/`` is the Search-R1 step loop both papers run, knowing neither (ARCHITECTURE.md
    section 1). Checked rule: no class, function, method or module-level name defined under
    ``agent/`` contains a paper's word (:data:`PAPER_TERMS`: ParallelSearch, ParallelMuse,
    Muse, FanOut, SubQuery, compared without case and underscores); no class name there
    contains ``Search`` (the papers' types: ``SearchContext``, ``SearchResult``, ...; a
    function or constant may name the loop's own ``search`` action); and no module there
    imports ``parallel_search`` or ``parallel_muse``, lazily or not."""
    found = []
    for path in sorted((PACKAGE / "agent").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PACKAGE)
        for name in _defined_names(tree):
            flat = name.replace("_", "").casefold()
            if any(term in flat for term in PAPER_TERMS):
                found.append(f"{where}: {name}")
        found += [
            f"{where}: class {node.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and "Search" in node.name
        ]
    found += sorted(
        f"{path} imports {target}"
        for path, group, target in _edges()
        if group == "agent" and target in {"parallel_search", "parallel_muse"}
    )
    assert found == []
