"""Every script in tools/ imports on its own: a name moved in the library breaks no tool unseen.

Tools are not type-checked (mypy covers the library), so an import of a name that no longer
exists would otherwise show only when someone re-runs a script. Scripts import the package, never
each other: each is loaded here from its file, with nothing of tools/ on ``sys.path``.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS_DIR = Path(__file__).resolve().parents[2] / "tools"
TOOLS = sorted(TOOLS_DIR.glob("*.py"))


def _load(path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tool_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs the imports; main() is behind __name__ == "__main__"
    return module


@pytest.mark.parametrize("path", TOOLS, ids=[p.stem for p in TOOLS])
def test_tool_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert str(TOOLS_DIR) not in sys.path
    module = _load(path, monkeypatch)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"


def test_no_script_imports_another_and_no_benchmark_is_left_here() -> None:
    names = {p.stem for p in TOOLS}
    for path in TOOLS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported = {node.module.split(".")[0]}
            else:
                continue
            assert not imported & names, f"{path.name} imports {imported & names}"
    # Benchmarks are declared experiments (langgraph-parallel bench run NAME), not scripts.
    assert not [p.name for p in TOOLS if p.stem.startswith("bench")]
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in TOOLS_DIR.iterdir())
    assert lines <= 1000, f"tools/ is {lines} lines: what is not a script belongs in the package"


def test_gpu_sft_packs_every_byte_into_bundles_that_fit_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    gpu_sft = _load(TOOLS_DIR / "gpu_sft.py", monkeypatch)
    pack, run_calls = gpu_sft.pack, gpu_sft.run_calls
    src = tmp_path / "src"
    src.mkdir()
    sizes = {"model.whl": 2500, "a.whl": 900, "b.whl": 300, "data-v.tar.gz": 100}
    for name, size in sizes.items():
        (src / name).write_bytes(bytes(i % 251 for i in range(size)))
    bundles = pack(sorted(src.iterdir()), tmp_path / "out", budget=1000)
    assert all(sum(f.stat().st_size for f in b.iterdir()) <= 1000 for b in bundles)
    # 2500 in parts of 1000, 1000 and 500; 300 and 100 fill the 500's bundle (first fit).
    assert len(bundles) == 4
    # The device script stages every bundle and joins the parts into the original bytes.
    stage = tmp_path / "stage"
    script = TOOLS_DIR / "gpu_sft.sh"
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
    calls = run_calls([TOOLS_DIR.parent / ".device" / f"b{i}" for i in (1, 2)], "--x 1")
    assert calls[0] == {
        "carry": [".device/b1"],
        "command": "bash tools/gpu_sft.sh stage .device/b1",
        "timeout_s": 120,
    }
    assert calls[1]["command"].endswith("stage .device/b2 && bash tools/gpu_sft.sh train --x 1")
