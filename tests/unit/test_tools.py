"""Every script in tools/ imports: a name moved or renamed in the library breaks no tool unseen.

Tools are not type-checked (mypy covers the library), so an import of a name that no longer
exists would otherwise show only when someone re-runs a benchmark.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOLS = sorted((Path(__file__).resolve().parents[2] / "tools").glob("*.py"))


@pytest.mark.parametrize("path", TOOLS, ids=[p.stem for p in TOOLS])
def test_tool_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(path.parent))  # as when run: tools import each other
    spec = importlib.util.spec_from_file_location(f"tool_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs the imports; main() is behind __name__ == "__main__"
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
