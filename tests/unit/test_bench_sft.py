"""The trained-policy benchmark's model choice (``tools/bench_sft.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    if str(REPO / "tools") not in sys.path:  # the tool imports its sibling benchmarks
        sys.path.insert(0, str(REPO / "tools"))
    import bench_sft

    return bench_sft


def test_a_candidate_policy_replaces_only_its_graphs_default() -> None:
    tool = _tool()
    models = tool.graph_models(["parallel-search=runs/x/parallel"])
    assert models == {
        "direct": "smollm2",
        "sequential": "smollm2-sequential",
        "parallel-search": "runs/x/parallel",
    }
    assert tool.graph_models([]) == {**models, "parallel-search": "smollm2-parallel"}
    for bad in ("parallel=runs/x", "sequential=", "runs/x"):
        with pytest.raises(ValueError, match="GRAPH=MODEL"):
            tool.graph_models([bad])


def test_the_tables_name_the_models_that_ran() -> None:
    tool = _tool()
    saving = {"few_shot": 570.0, "rules": 99.0, "saved": 471.0}
    models = tool.graph_models(["sequential=runs/x/sequential"])
    text = tool.markdown({"command": "c", "models": models, "datasets": {},
                          "prompt_tokens": saving})  # fmt: skip
    assert "sequential = runs/x/sequential" in text and "parallel-search = smollm2-parallel" in text
    # Results written before the option ran the defaults.
    old = tool.markdown({"command": "c", "datasets": {}, "prompt_tokens": saving})
    assert "sequential = smollm2-sequential" in old
