"""The ParallelMuse defaults experiment (``lab/experiments/muse/defaults/``): tables, settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.experiments.muse.defaults import defaults, forks, joins, page
from langgraph_parallel.errors import UserError


def row(graph: str, qid: str, answers: list[str], gold: str) -> dict[str, Any]:
    inputs = [
        {"id": f"t{i}", "answer": a, "em": float(a == gold), "parent": None}
        for i, a in enumerate(answers)
    ]
    return {"graph": graph, "id": qid, "join_inputs": inputs}


def test_mixtures_vote_over_the_first_k_forks_and_the_rest_fresh() -> None:
    # q1: the forks all echo the first rollout's wrong "x"; fresh rollouts find "g" by majority.
    rows = [
        row("parallel-muse", "q1", ["x"] * 8, "g"),
        row("rollouts-majority", "q1", ["x", "g", "g", "g", "g", "g", "g", "x"], "g"),
    ]
    mixed = joins.mixtures(rows)
    assert [m["k"] for m in mixed] == list(range(8))
    # t0 and k forks say "x", then fresh t(k+1)..t7: "g" wins 6-2 at k=0 and 5-3 at k=1; at
    # k=2 it is 4-4 and the tie goes to the first answer given ("x").
    assert [m["majority"] for m in mixed] == [1, 1, 0, 0, 0, 0, 0, 0]
    assert [m["any_right"] for m in mixed] == [1, 1, 1, 1, 1, 1, 0, 0]
    assert mixed[0]["vs_independent"]["diff"] == 0.0
    assert mixed[7]["vs_independent"]["diff"] == -1.0


def test_the_title_names_the_settings_a_run_changed() -> None:
    assert page.settings_title({}) == "under its defaults"
    assert page.settings_title({"branch_temperature": 1.0}) == "with `--branch-temperature 1.0`"


TREE = (
    'flowchart LR\n  a["t0 step 0: search<br/>x ## y<br/>ppl: reasoning 1.5, exploration 2.0"]\n'
    '  b["t0 step 1: search<br/>z<br/>ppl: reasoning 3.0"]\n'
    '  c["t0<br/>answer: Paris"]\n'
    '  d["t1 step 1: search<br/>w<br/>ppl: reasoning 1.2"]\n'
    '  e["t1 (fork of t0 at step 1)<br/>answer: Lyon"]\n'
)


def test_a_rows_tree_reads_back_as_its_trajectories_and_forks() -> None:
    ts = forks.trajectories(TREE)
    assert ts["t0"]["steps"] == [("search", "x ## y", 1.5), ("search", "z", 3.0)]
    assert ts["t0"]["exploration"] == [2.0, 0.0]
    assert (ts["t0"]["parent"], ts["t0"]["answer"]) == (None, "paris")
    assert (ts["t1"]["parent"], ts["t1"]["branch_step"], ts["t1"]["answer"]) == ("t0", 1, "lyon")
    counted = forks.forks_and_divergence([{"graph": "parallel-muse", "tree": TREE}])
    assert counted["questions"] == {"parallel-muse": 1, "rollouts-majority": 0}
    assert (counted["forks"], counted["forks_on_parents_answer"]) == (1, 0)
    assert counted["fork_branch_steps"] == {"1": 1}


def test_muse_setting_is_typed_as_benchs_flags() -> None:
    assert defaults.muse_settings("") == {}
    assert defaults.muse_settings("budget=11,samples-per-step=5,branch_temperature=1.0") == {
        "budget": 11,
        "samples_per_step": 5,
        "branch_temperature": 1.0,
    }
    with pytest.raises(UserError, match="KEY=VALUE"):
        defaults.muse_settings("temperature=1.0")
    with pytest.raises(UserError, match="takes a number"):
        defaults.muse_settings("budget=many")


def test_the_page_names_the_bench_run_command_that_makes_a_folders_rows() -> None:
    root = defaults.checkout_dir() / "benchmarks" / "parallel_muse" / "defaults"
    first = {"n": 25, "fresh_cache": False}
    assert defaults.command_for(first, root / "hotpotqa") == (
        "langgraph-parallel bench run parallel-muse-defaults"
    )
    tried = {
        "n": 150,
        "fresh_cache": True,
        "muse": {"budget": 11, "samples_per_step": 5},
        "rollouts_from": "hotpotqa150-pairs",
        "before": {"folder": "hotpotqa150-pairs"},
    }
    assert defaults.command_for(tried, root / "hotpotqa150-budget11") == (
        "langgraph-parallel bench run parallel-muse-defaults --limit 150 --out "
        "benchmarks/parallel_muse/defaults/hotpotqa150-budget11 --set graphs=parallel-muse "
        "--set muse=budget=11,samples_per_step=5 --set base=hotpotqa150-pairs "
        "--set fresh_cache=true"
    )


def test_a_base_that_holds_no_run_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from lab.runner import run_experiment

    with pytest.raises(UserError, match="holds no run"):
        run_experiment(
            defaults.EXPERIMENT,
            out=tmp_path / "rows",
            pairs=["base=missing", "graphs=parallel-muse"],
        )
