"""Shared pytest fixtures and paths, and ``--engine-dtype`` for the real-engine tests."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
DTYPES = ("float32", "bfloat16")
PROJECT_ENV_PREFIX = "LANGGRAPH_PARALLEL_"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--engine-dtype",
        choices=(*DTYPES, "other"),
        default=None,
        help=(
            "Run every vLLM engine of the tests (in-process, servers, CLI subprocesses) in this "
            "dtype, through LANGGRAPH_PARALLEL_ENGINE. 'other': the dtype this machine's engine "
            "does not pick by default, so numerics of another kind of CPU show up here."
        ),
    )


def _default_dtype() -> str:
    from langgraph_parallel.models.engine import engine_defaults

    # No dtype in the defaults (a GPU): vLLM's auto, bfloat16 for our float32 checkpoints.
    return str(engine_defaults().get("dtype", "bfloat16"))


def pytest_configure(config: pytest.Config) -> None:
    # No test may find (or leave) a background server of `ask`: each starts its own engine, or
    # turns the daemon on with a cache folder of its own (tests/unit/test_daemon.py).
    from langgraph_parallel.apps.daemon import DAEMON_ENV

    os.environ[DAEMON_ENV] = "0"
    # Before any engine starts, and in the environment, so subprocesses and servers inherit it.
    choice = config.getoption("--engine-dtype")
    if choice is None:
        return
    if choice == "other":
        choice = next(d for d in DTYPES if d != _default_dtype())
    from langgraph_parallel.models.engine import ENGINE_ENV, env_engine_kwargs

    os.environ[ENGINE_ENV] = json.dumps({**env_engine_kwargs(), "dtype": choice})


def pytest_report_header(config: pytest.Config) -> str:
    from langgraph_parallel.models.cpu import cpu_has_native_bf16

    native = "yes" if cpu_has_native_bf16() else "no"
    return f"engine dtype: {_default_dtype()} ({platform.machine()}, native bfloat16: {native})"


@pytest.fixture(autouse=True)
def _project_environment_restored() -> Iterator[None]:
    """Put the project's own variables (``LANGGRAPH_PARALLEL_*``) back as they were after a test.

    Code under test sets some in the process on purpose (``--verbose`` sets the log level, a lab
    experiment its engine settings), and ``monkeypatch.delenv`` of an unset variable records
    nothing to restore: such a value outlived its test and reached every later engine and
    subprocess of the session (progress bars in a quiet run, an 8 GiB KV cache that did not fit).
    """
    before = {k: v for k, v in os.environ.items() if k.startswith(PROJECT_ENV_PREFIX)}
    yield
    for key in [k for k in os.environ if k.startswith(PROJECT_ENV_PREFIX)]:
        if key not in before:
            del os.environ[key]
    os.environ.update(before)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
