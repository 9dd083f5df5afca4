"""README result blocks are rendered from the committed benchmark files; stale ones fail here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "readme_results", REPO / "tools/readme_results.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_results"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", list(_tool().BLOCKS))
def test_readme_block_matches_its_benchmark_file(name: str) -> None:
    tool = _tool()
    current = tool.block((REPO / "README.md").read_text(), name)
    assert current is not None, f"README.md lost its {name} block"
    assert current == tool.BLOCKS[name](), "run: .venv/bin/python tools/readme_results.py"


def test_a_changed_figure_makes_the_block_stale(tmp_path: Path) -> None:
    tool = _tool()
    result = json.loads((REPO / "benchmarks/sft/sft.json").read_text())
    part = result["datasets"]["hotpotqa"]["by_class"]["parallelizable"]["parallel-search"]
    part["em"] += 0.5
    changed = tmp_path / "sft.json"
    changed.write_text(json.dumps(result))
    assert tool.render_sft(changed) != tool.render_sft()
    assert f"{part['em']:.3f}" in tool.render_sft(changed)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            [],
            "1 initial rollout, 3 samples at each of the 2 most uncertain exploration steps",
        ),
        (
            ["--mode", "entropy", "--top-k-steps", "1", "--samples-per-step", "7"],
            "1 initial rollout, 7 samples at the most uncertain exploration step by entropy "
            "(`--mode entropy --top-k-steps 1 --samples-per-step 7`)",
        ),
        (["--region", "reasoning", "--rounds", "2"], "reasoning steps, 2 rounds (`--region"),
        (["--mode", "ppl"], "exploration steps by perplexity (`--mode ppl`)"),
        (["--min-branch-step", "1"], "exploration steps, no fork before step 1 (`--min"),
    ],
)
def test_the_muse_block_says_which_branching_settings_ran(flags: list[str], words: str) -> None:
    assert words in _tool()._muse_setting(flags)
