"""The trained-policy experiment's model choice (``apps/experiments/sft.py``)."""

from __future__ import annotations

import pytest

from langgraph_parallel.apps.experiments.sft import graph_models
from langgraph_parallel.apps.experiments.sft_tables import GRAPH_MODELS, markdown


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
