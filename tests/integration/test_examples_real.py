"""The examples' ``--real`` mode: the embedded engine and the bundled corpus, as users run it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_parallel.models.engine import ENGINE_ENV, env_engine_kwargs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# A small KV cache: the test session runs other engines in this machine's memory. Over the
# session's settings (``--engine-dtype`` puts a dtype there), not instead of them.
ENV = {
    **os.environ,
    ENGINE_ENV: json.dumps({**env_engine_kwargs(), "kv_cache_memory_bytes": 536870912}),
}


def run_real(name: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--real"],
        capture_output=True,
        text=True,
        timeout=900,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # vLLM logs some lines to stdout ("(MainProcess pid=...) INFO ..."); keep the example's own.
    logs = ("(", "INFO", "WARNING", "DEBUG")
    return [x for x in done.stdout.splitlines() if not x.startswith(logs)]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("[0-9]*.py")))
def test_every_example_has_a_real_mode(name: str) -> None:
    assert 'add_argument("--real"' in (EXAMPLES / name).read_text()


@pytest.mark.engine
def test_fan_out_example_searches_the_real_corpus() -> None:
    lines = run_real("01_add_fan_out_to_your_graph.py")
    queries = ast.literal_eval(next(x for x in lines if x.startswith("queries:"))[8:].strip())
    hits = [x for x in lines if x.startswith("  [")]
    assert len(hits) == len(queries) >= 1
    assert all(" -> " in x and x.split(" -> ", 1)[1].strip() for x in hits)  # titles found
    assert lines[-1].startswith("answer:")


@pytest.mark.engine
def test_runnables_example_runs_every_way_on_the_engine() -> None:
    lines = run_real("02_runnables.py")
    assert lines[0].startswith("invoke -> ")
    streamed = [x.split(":")[0] for x in lines if x.startswith("stream ->")]
    assert streamed[0] == "stream -> think" and streamed[-1] == "stream -> answer"
    batch = next(x for x in lines if x.startswith("batch -> "))
    assert len(ast.literal_eval(batch[len("batch -> ") :])) == 2
    assert any(x.startswith("tool -> parallel_search") for x in lines)
    assert lines[-1].startswith("chain -> ")


@pytest.mark.engine
def test_create_agent_example_runs_the_policy_as_a_tool_calling_model() -> None:
    lines = run_real("03_create_agent_parallel_search.py")
    assert lines[0].startswith("search -> [")  # the policy's first step is a search call
    assert any(x.startswith("  [") and " -> " in x for x in lines)  # with results per sub-query
    counters = next(x for x in lines if x.startswith("counters:"))
    assert "'llm_calls'" in counters and "'sub_queries'" in counters
    assert lines[-1].startswith("answer:")


@pytest.mark.engine
def test_parallel_muse_example_forks_the_policy_agent() -> None:
    lines = run_real("04_parallel_muse_any_agent.py")
    assert lines[0].startswith("branch point: t0 step ")  # the policy's steps had logprobs
    forks = [x for x in lines if "(fork of t0 at step " in x]
    assert len(forks) == 3  # budget 4: the first run and three forks
    assert any(x.startswith("join: ") for x in lines)
    cached = next(x for x in lines if x.startswith("cached prompt tokens:"))
    assert int(cached.split(":")[1]) > 0  # forks re-read their parent's prompt from the cache
    assert lines[-1].startswith("answer:")
