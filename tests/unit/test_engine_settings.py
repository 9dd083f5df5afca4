"""Engine settings: the CPU defaults and LANGGRAPH_PARALLEL_ENGINE, read by every command."""

from __future__ import annotations

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.models import engine


def test_the_environment_variable_updates_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CPU_ENGINE_DEFAULTS", {"enforce_eager": True, "block_size": 32})
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.delenv("LANGGRAPH_PARALLEL_ENGINE", raising=False)
    assert engine.engine_defaults() == {"enforce_eager": True, "block_size": 32}
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", '{"enforce_eager": false, "dtype": "float32"}')
    assert engine.engine_defaults() == {
        "enforce_eager": False,
        "block_size": 32,
        "dtype": "float32",
    }
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)  # a GPU: no CPU defaults
    assert engine.engine_defaults() == {"enforce_eager": False, "dtype": "float32"}


def test_a_bad_value_names_the_variable_and_an_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", "enforce_eager=false")
    with pytest.raises(UserError, match=r"LANGGRAPH_PARALLEL_ENGINE must be a JSON object.*e\.g\."):
        engine.engine_defaults()
