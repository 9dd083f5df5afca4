"""Every script in tools/ imports: a name moved or renamed in the library breaks no tool unseen.

Tools are not type-checked (mypy covers the library), so an import of a name that no longer
exists would otherwise show only when someone re-runs a benchmark.
"""

from __future__ import annotations

import importlib.util
import json
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


def test_compare_runs_reports_equal_rows_and_names_a_changed_counter(tmp_path: Path) -> None:
    sys.path.insert(0, str(TOOLS[0].parent))
    try:
        from compare_runs import compare
    finally:
        sys.path.remove(str(TOOLS[0].parent))
    row = {"graph": "parallel-search", "id": "q1", "answer": "yes", "stop_reason": "answered",
           "llm_calls": 2, "turns": 1, "sub_queries": 2, "prompt_tokens": 300,
           "cached_prompt_tokens": 96, "completion_tokens": 40, "wall_s": 1.0}  # fmt: skip
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, changes in ((old, {}), (new, {"wall_s": 9.0})):
        folder.mkdir()
        (folder / "results.jsonl").write_text(json.dumps({**row, **changes}) + "\n")
    report, same = compare(old, new)
    assert same and "| parallel-search | 1 | 1 | - |" in report  # wall time is not behaviour
    (new / "results.jsonl").write_text(json.dumps({**row, "cached_prompt_tokens": 64}) + "\n")
    report, same = compare(old, new)
    assert not same and "| parallel-search | 1 | 0 | cached_prompt_tokens |" in report


def test_bench_grpo_counts_questions_turned_right_and_wrong_by_class() -> None:
    sys.path.insert(0, str(TOOLS[0].parent))
    try:
        from bench_grpo import changes
    finally:
        sys.path.remove(str(TOOLS[0].parent))
    rows = [
        {"graph": g, "id": i, "class": c, "em": em}
        for g, i, c, em in (
            ("sft", "a", "parallelizable", 0.0), ("grpo", "a", "parallelizable", 1.0),
            ("sft", "b", "parallelizable", 1.0), ("grpo", "b", "parallelizable", 1.0),
            ("sft", "c", "sequential", 1.0), ("grpo", "c", "sequential", 0.0),
            ("sft", "d", "sequential", 0.0),  # not run by grpo: not counted
        )
    ]  # fmt: skip
    assert changes(rows, "sft", "grpo") == {"parallelizable_gained": 1, "sequential_lost": 1}
    assert changes(rows, "grpo", "sft") == {"parallelizable_lost": 1, "sequential_gained": 1}
