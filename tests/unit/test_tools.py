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


def test_gpu_sft_packs_every_byte_into_bundles_that_fit_one_call(tmp_path: Path) -> None:
    import subprocess

    sys.path.insert(0, str(TOOLS[0].parent))
    try:
        from gpu_sft import pack, run_calls
    finally:
        sys.path.remove(str(TOOLS[0].parent))
    src = tmp_path / "src"
    src.mkdir()
    sizes = {"model.whl": 2500, "a.whl": 900, "b.whl": 300, "data.jsonl": 100}
    for name, size in sizes.items():
        (src / name).write_bytes(bytes(i % 251 for i in range(size)))
    bundles = pack(sorted(src.iterdir()), tmp_path / "out", budget=1000)
    assert all(sum(f.stat().st_size for f in b.iterdir()) <= 1000 for b in bundles)
    # 2500 in parts of 1000, 1000 and 500; 300 and 100 fill the 500's bundle (first fit).
    assert len(bundles) == 4
    # The device script stages every bundle and joins the parts into the original bytes.
    stage = tmp_path / "stage"
    script = TOOLS[0].parent / "gpu_sft.sh"
    env = {"GPU_SFT_STAGE": str(stage), "PATH": "/usr/bin:/bin"}
    for bundle in bundles:
        subprocess.run(["bash", str(script), "stage", str(bundle)], env=env, check=True)
    done = subprocess.run(
        ["bash", str(script), "train"],
        env={**env, "OUT": str(tmp_path / "o"), "PYTHON": "false"},
        capture_output=True,
    )
    assert done.returncode != 0  # PYTHON=false: it stops at the install, after joining
    assert sorted(p.name for p in stage.iterdir()) == sorted(sizes)
    assert all((stage / n).read_bytes() == (src / n).read_bytes() for n in sizes)
    calls = run_calls([TOOLS[0].parent.parent / ".device" / f"b{i}" for i in (1, 2)], "--x 1")
    assert calls[0] == {
        "carry": [".device/b1"],
        "command": "bash tools/gpu_sft.sh stage .device/b1",
        "timeout_s": 120,
    }
    assert calls[1]["command"].endswith("stage .device/b2 && bash tools/gpu_sft.sh train --x 1")
