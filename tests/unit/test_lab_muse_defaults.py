"""The ParallelMuse defaults run's tables (``benchmarks/parallel_muse/defaults/analyse.py``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "parallel_muse" / "defaults"


@pytest.fixture(scope="module")
def analyse() -> Any:
    sys.path.insert(0, str(FOLDER))  # the script imports its folder's modules by name
    try:
        yield importlib.import_module("analyse")
    finally:
        sys.path.remove(str(FOLDER))
        for name in ("analyse", "answer_type", "scorer"):  # generic names: leave none behind
            sys.modules.pop(name, None)


def row(graph: str, qid: str, answers: list[str], gold: str) -> dict[str, Any]:
    inputs = [
        {"id": f"t{i}", "answer": a, "em": float(a == gold), "parent": None}
        for i, a in enumerate(answers)
    ]
    return {"graph": graph, "id": qid, "join_inputs": inputs}


def test_mixtures_vote_over_the_first_k_forks_and_the_rest_fresh(analyse: Any) -> None:
    # q1: the forks all echo the first rollout's wrong "x"; fresh rollouts find "g" by majority.
    rows = [
        row("parallel-muse", "q1", ["x"] * 8, "g"),
        row("rollouts-majority", "q1", ["x", "g", "g", "g", "g", "g", "g", "x"], "g"),
    ]
    mixed = analyse.mixtures(rows)
    assert [m["k"] for m in mixed] == list(range(8))
    # t0 and k forks say "x", then fresh t(k+1)..t7: "g" wins 6-2 at k=0 and 5-3 at k=1; at
    # k=2 it is 4-4 and the tie goes to the first answer given ("x").
    assert [m["majority"] for m in mixed] == [1, 1, 0, 0, 0, 0, 0, 0]
    assert [m["any_right"] for m in mixed] == [1, 1, 1, 1, 1, 1, 0, 0]
    assert mixed[0]["vs_independent"]["diff"] == 0.0
    assert mixed[7]["vs_independent"]["diff"] == -1.0


def test_the_title_names_the_settings_a_run_changed(analyse: Any) -> None:
    assert analyse._settings({}) == "under its defaults"
    assert analyse._settings({"branch_temperature": 1.0}) == "with `--branch-temperature 1.0`"
