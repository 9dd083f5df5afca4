"""The ParallelMuse experiments' analysis (``experiments/muse_analysis.py``) on hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.experiments.muse import muse_analysis as tool
from langgraph_parallel.parallel_muse.tree import mermaid_tree


def step(text: str, origin: str) -> dict[str, Any]:
    return {"text": text, "origin": origin, "action": "search", "logprobs": [], "regions": {}}


def forked_tree(*branch_steps: int) -> str:
    """Mermaid of a run whose forks of ``t0`` start at ``branch_steps``."""
    own = [step("<search> a </search>", "t0"), step("<search> b </search>", "t0")]
    trajectories = [{"id": "t0", "index": 0, "parent": None, "steps": own, "answer": "x"}]
    for i, k in enumerate(branch_steps, start=1):
        steps = [*own[:k], step("<answer> y </answer>", f"t{i}")]
        trajectories.append(
            {
                "id": f"t{i}",
                "index": i,
                "parent": "t0",
                "branch_step": k,
                "steps": steps,
                "answer": "y",
            }
        )
    return mermaid_tree({"question": "Q?", "trajectories": trajectories})


def test_rows_without_the_field_take_the_first_fork_step_from_their_tree() -> None:
    assert tool._first_branch({"tree": forked_tree(2, 1)})["first_branch_step"] == 1
    assert tool._first_branch({"tree": forked_tree()})["first_branch_step"] is None
    assert tool._first_branch({"first_branch_step": 0.0, "tree": forked_tree(1)}) == {
        "first_branch_step": 0.0,
        "tree": forked_tree(1),
    }


def test_agent_cost_is_split_by_the_first_forks_step() -> None:
    partial, independent = tool.PARTIAL, tool.INDEPENDENT
    rows = [
        {"graph": partial, "id": "a", "agent_cost": 100.0, "first_branch_step": 0.0},
        {"graph": independent, "id": "a", "agent_cost": 80.0},
        {"graph": partial, "id": "b", "agent_cost": 60.0, "first_branch_step": 2.0},
        {"graph": independent, "id": "b", "agent_cost": 100.0},
        {"graph": partial, "id": "c", "agent_cost": 30.0, "first_branch_step": 1.0},
        {"graph": independent, "id": "c", "agent_cost": 100.0},
        # No fork, or no independent run of the question: in neither group.
        {"graph": partial, "id": "d", "agent_cost": 50.0, "first_branch_step": None},
        {"graph": independent, "id": "d", "agent_cost": 80.0},
        {"graph": partial, "id": "e", "agent_cost": 10.0, "first_branch_step": 1.0},
    ]
    assert tool.by_first_branch(rows) == {
        "step 0": {"n": 1, "agent_cost": 1.25},
        "a later step": {"n": 2, "agent_cost": 0.45},
    }


def test_each_join_is_paired_with_the_single_rollout_and_the_other_systems_join() -> None:
    partial, independent = tool.PARTIAL, tool.INDEPENDENT
    rows = []
    for i in range(10):  # partial's select join right on 6, its first rollout on 2
        rows.append(
            {
                "graph": partial,
                "id": str(i),
                "em_join_graph": float(i < 6),
                "em_single": float(i < 2),
                "em_any": float(i < 7),
            }
        )
        rows.append(
            {
                "graph": independent,
                "id": str(i),
                "em_join_graph": float(i < 3),
                "em_single": float(i < 2),
            }
        )
    rows.append({"graph": partial, "id": "lone", "em_join_graph": 1.0, "em_single": 0.0})
    pairs = tool.analyse(rows)["paired"]  # on the questions both systems ran
    vs_single = pairs[f"{partial} em_join_graph - single"]
    assert (vs_single["n"], vs_single["wins"], vs_single["losses"]) == (10, 4, 0)
    assert vs_single["diff"] == 0.4 and vs_single["low"] > 0
    vs_independent = pairs["partial em_join_graph - independent"]
    assert (vs_independent["a"], vs_independent["b"], vs_independent["wins"]) == (0.6, 0.3, 3)
    assert pairs[f"{partial} em_any - single"]["wins"] == 5
    assert "partial em_any - independent" not in pairs  # independent rows have no em_any


def test_the_defaults_block_names_its_join_machines_and_a_users_cost(tmp_path: Path) -> None:
    from lab.experiments.muse.muse_defaults import (
        FRESH_RUN,
        default_join_vs_independent,
        render_muse_defaults,
    )

    def paired(a: float, b: float) -> dict[str, Any]:
        low, high = a - b - 0.05, a - b + 0.05
        return {
            "n": 150,
            "a": a,
            "b": b,
            "diff": a - b,
            "low": low,
            "high": high,
            "wins": 2,
            "losses": 0,
        }

    ems = {k: 9.0 for k in ("em_join_graph", "em_join_majority", "em_join_weighted")}
    ems |= {"em_join_evidence": 8.0, "em_single": 7.0, "em_any": 20.0}
    cost = {"agent_cost": 4000.0, "reduction_cost": 0.0, "user_cost": 4000.0}
    cost |= {"model_errors": 0, "trimmed_steps": 1, "context_refusals": 0, "repeat_skips": 30}
    learned = {"score-weighted vote": paired(0.05, 0.047), "best trajectory": paired(0.04, 0.047)}
    result = {
        "n": 150,
        "graph_join": "majority",
        "em": {"parallel-muse": ems, "rollouts-majority": ems},
        "vs": {
            "the graph's join (majority) - first rollout": paired(0.06, 0.047),
            "majority - independent em_join_majority": paired(0.06, 0.06),
            "the graph's join (majority) - independent em_join_evidence": paired(0.06, 0.07),
        },
        "cost": {
            "parallel-muse": cost,
            "rollouts-majority": {**cost, "agent_cost": 5000.0, "user_cost": 5000.0},
            "user_ratio": 0.8,
            "agent_ratio": 0.8,
            "agent_ratio_interval": [0.8, 0.71, 0.88],
        },
        "learned": {"parallel-muse": learned, "rollouts-majority": learned},
        "before": {
            "folder": "earlier",
            "agent_cost_ratio": [0.78, 0.72, 0.84],
            "forks": [7.0, 3.5],
            "em_join_graph": paired(0.06, 0.05),
        },
    }
    machine = {"cpu": "AMD EPYC", "cores": 2, "avx512_bf16": False, "dtype": "float32"}
    run = {"commits": ["a" * 40], "machines": [machine, {**machine, "avx512_bf16": True}]}
    warm, fresh = tmp_path / "hotpotqa150", tmp_path / Path(FRESH_RUN).name
    for folder, figures in ((warm, result), (fresh, {**result, "n": 50})):
        folder.mkdir()
        (folder / "joins.json").write_text(json.dumps(figures))
        (folder / "run.json").write_text(json.dumps(run))
    # The join against the rollouts' best, whichever join that was (here evidence).
    assert default_join_vs_independent(result)["b"] == 0.07
    text = render_muse_defaults(warm)
    assert "join `auto`: `majority` for this policy" in text
    assert "AMD EPYC, 2 cores, no native bf16, engine float32; AMD EPYC, 2 cores, avx512_bf16" in (
        text
    )
    assert "| parallel-muse | 9 | 9 | 9 | 8 | 7 | 20 |" in text
    assert "| parallel-muse | 4000 | 0 | 4000 | 0 | 1 | 0 | 30 |" in text
    assert "A user pays **0.80x**" in text
    assert "agent alone 0.80x [0.71, 0.88], 95% bootstrap" in text
    assert "Against the earlier run in `earlier/` (the same questions; its rows)" in text
    assert "agent cost 0.78x [0.72, 0.84], forks a question 7.0 vs 3.5" in text
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "run.json").write_text(
        json.dumps({"commits": ["b" * 40], "adapters": {"smollm2-parallel": ["0123456789ab"]}})
    )
    named = "commit `bbbbbbb`, `smollm2-parallel` (adapter `0123456789ab`; today's is"
    assert f"(the same questions; {named}" in render_muse_defaults(warm)
    fresh_words = (
        "the first 50 of these questions, commit `aaaaaaa`, the shipped policy (adapter not "
        "recorded)): a user pays 0.80x"
    )
    assert f"{fresh_words} (agent alone 0.80x [0.71, 0.88])" in text
    (fresh / "joins.json").unlink()  # no fresh-cache run: no such sentence
    assert "--fresh-cache" not in render_muse_defaults(warm)
    assert "first rollout: 0.060 vs 0.047, +0.013 [-0.037, +0.063]" in text


def test_the_defaults_block_says_whether_its_run_measured_todays_adapter(tmp_path: Path) -> None:
    from lab.experiments.muse.muse_defaults import policy_of
    from langgraph_parallel.models.adapters import adapter_hash
    from langgraph_parallel.models.embedded import ADAPTERS_DIR

    today = adapter_hash(ADAPTERS_DIR / "smollm2-parallel")
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"adapters": {"smollm2-parallel": [today]}}))
    assert policy_of(run) == f"`smollm2-parallel` (adapter `{today}`, today's)"
    run.write_text(json.dumps({"adapters": {"smollm2-parallel": ["0123456789ab"]}}))
    assert policy_of(run) == f"`smollm2-parallel` (adapter `0123456789ab`; today's is `{today}`)"
    run.write_text(json.dumps({"commits": []}))
    assert policy_of(run) == "the shipped policy (adapter not recorded)"
