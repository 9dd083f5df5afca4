"""The trained-policy experiment's model choice (``lab/experiments/sft/sft.py``)."""

from __future__ import annotations

import pytest

from lab.experiments.sft.sft import graph_models
from lab.experiments.sft.sft_tables import GRAPH_MODELS, markdown


def test_a_candidate_policy_replaces_only_its_graphs_default() -> None:
    models = graph_models(["parallel-search=runs/x/parallel"])
    assert models == {
        "direct": "smollm2",
        "sequential": "smollm2-sequential",
        "parallel-search": "runs/x/parallel",
    }
    assert graph_models([]) == {**models, "parallel-search": "smollm2-parallel"}
    for bad in ("parallel=runs/x", "sequential=", "runs/x"):
        with pytest.raises(ValueError, match="GRAPH=MODEL"):
            graph_models([bad])


def test_the_tables_name_the_models_that_ran() -> None:
    saving = {"few_shot": 570.0, "rules": 99.0, "saved": 471.0}
    models = graph_models(["sequential=runs/x/sequential"])
    text = markdown({"command": "c", "models": models, "datasets": {}, "prompt_tokens": saving})
    assert "sequential = runs/x/sequential" in text and "parallel-search = smollm2-parallel" in text
    # Results written before the option ran the defaults.
    old = markdown({"command": "c", "datasets": {}, "prompt_tokens": saving})
    assert "sequential = smollm2-sequential" in old


def test_the_declared_models_are_the_registrys_defaults() -> None:
    from langgraph_parallel.apps.registry import default_model

    # Results written before runs recorded their models name none: the tables fall back to these.
    assert {g: default_model(g) for g in GRAPH_MODELS} == GRAPH_MODELS


def test_every_em_comparison_is_paired_per_class_with_its_interval() -> None:
    from lab.experiments.sft.sft_tables import analyse, paired_lines

    def row(graph: str, i: int, em: float) -> dict[str, object]:
        cls = "parallelizable" if i % 2 else "sequential"
        return {
            "graph": graph,
            "id": f"q{i}",
            "class": cls,
            "em": em,
            "f1": em,
            "answer": "a",
            "turns": 1,
            "first_turn_parallel": 0,
        }

    # parallel-search right on every comparison question, direct on none; equal on bridge.
    rows = [row("parallel-search", i, float(i % 2)) for i in range(40)]
    rows += [row("direct", i, 0.0) for i in range(40)]
    part = analyse(rows)
    assert list(part["paired_em"]) == ["parallel-search - direct"]  # no sequential rows
    comp = part["paired_em"]["parallel-search - direct"]["parallelizable"]
    assert (comp["n"], comp["diff"], comp["wins"], comp["losses"]) == (20, 1.0, 20, 0)
    lines = paired_lines("hotpotqa", part)
    assert len(lines) == 3  # comparison, bridge and all
    assert "n=20, +20 / -0" in lines[0] and "includes zero" not in lines[0]
    assert lines[1].endswith("the interval includes zero")  # bridge: equal on every question
