"""Quiet by default: the environment the engine's libraries read, and how to turn it off."""

from __future__ import annotations

import os
import warnings

import pytest

from langgraph_parallel.apps.ask import Timings
from langgraph_parallel.apps.cli import main
from langgraph_parallel.models import quiet
from langgraph_parallel.models.quiet import LOG_ENV, QUIET_ENV, quiet_environment


@pytest.fixture
def clean_env(monkeypatch):
    for key in (*QUIET_ENV, LOG_ENV):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_quiet_sets_every_default(clean_env):
    quiet_environment()
    assert {k: os.environ[k] for k in QUIET_ENV} == QUIET_ENV


def test_a_value_the_user_set_wins(clean_env):
    clean_env.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    clean_env.setenv("PYTHONWARNINGS", "error")
    quiet_environment()
    assert os.environ["VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert os.environ["PYTHONWARNINGS"] == "error"
    assert os.environ["TORCH_LOGS"] == "-torch"


def _shown_after_quiet() -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        quiet_environment()
        for module in ("vllm.triton_utils.dispatcher", "vllm.triton_utils", "mine"):
            warnings.warn_explicit(module, FutureWarning, f"{module}.py", 1, module=module)
    return [str(w.message) for w in seen]


def test_vllms_start_warning_is_ignored_in_this_process_too(clean_env):
    # A forked engine core inherits this process's filters, not PYTHONWARNINGS.
    assert _shown_after_quiet() == ["vllm.triton_utils", "mine"]


def test_a_users_pythonwarnings_keeps_vllms_warning(clean_env):
    clean_env.setenv("PYTHONWARNINGS", "default")
    assert _shown_after_quiet() == ["vllm.triton_utils.dispatcher", "vllm.triton_utils", "mine"]


@pytest.mark.parametrize("value", ["info", "DEBUG", "1"])
def test_verbose_keeps_the_libraries_defaults_but_stays_offline(clean_env, value):
    clean_env.setenv(LOG_ENV, value)
    assert quiet.verbose()
    quiet_environment()
    assert not {"VLLM_LOGGING_LEVEL", "TORCH_LOGS", "PYTHONWARNINGS"} & set(os.environ)
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_the_verbose_flag_reaches_the_environment_before_anything_starts(clean_env, capsys):
    assert main(["--verbose", "ask", "   "]) == 2  # an empty question: fails before any engine
    assert os.environ[LOG_ENV] == "info"
    assert "VLLM_LOGGING_LEVEL" not in os.environ
    assert "question is empty" in capsys.readouterr().err


def test_timings_sum_to_their_total():
    timings = Timings()
    with timings.phase("a"):
        pass
    timings.add("b", 1.25)
    lines = timings.lines()
    assert [line.split(":")[0].strip() for line in lines] == ["start", "a", "b", "total"]
    total = float(lines[-1].split(": ")[1].removesuffix(" s"))
    assert total == pytest.approx(sum(timings.phases.values()), abs=0.01)
    assert timings.phases["start"] >= 0


def test_a_preparation_hides_the_libraries_output_unless_verbose(clean_env, capsys):
    import sys

    from langgraph_parallel.models.quiet import quiet_preparation

    with quiet_preparation():
        print("Converting tensors: 100%", file=sys.stderr)
    assert capsys.readouterr().err == ""
    clean_env.setenv(LOG_ENV, "info")
    with quiet_preparation():
        print("Converting tensors: 100%", file=sys.stderr)
    assert "Converting tensors" in capsys.readouterr().err


def test_the_start_phase_counts_from_the_process_creation_not_from_a_rounded_boot_time():
    import subprocess
    import sys
    import time

    # psutil's creation time adds a boot time in whole seconds: off by up to 1 s, either way.
    code = (
        "import time; time.sleep(0.5); "
        "from langgraph_parallel.apps.ask import _since_process_start; "
        "print(_since_process_start())"
    )
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    outside = time.perf_counter() - t0
    assert 0.5 <= float(done.stdout) <= outside


def test_the_console_entry_returns_mains_status_and_freezes_the_heap_before_exit():
    import subprocess
    import sys

    # The interpreter's final collection would scan every object an engine left (seconds).
    code = (
        "import gc; from langgraph_parallel.apps import cli; cli.main = lambda: 7; "
        "status = cli.run(); print(status, gc.get_freeze_count() > 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["7", "True"]


_BLAS_THREADS = """
import ctypes, os
from langgraph_parallel.apps import cli

def report():
    import numpy
    numpy.ones((64, 64)) @ numpy.ones((64, 64))
    paths = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line}
    blas = [ctypes.CDLL(p) for p in paths]
    counts = [b.scipy_openblas_get_num_threads64_() for b in blas
              if hasattr(b, "scipy_openblas_get_num_threads64_")]
    print(os.environ.get("OPENBLAS_NUM_THREADS"), counts)
    return 0

cli.main = report
cli.run()
"""


@pytest.mark.parametrize(("given", "threads"), [(None, 1), ("2", 2)])
def test_the_console_entry_runs_numpys_blas_on_one_thread_unless_the_user_says(given, threads):
    import os
    import subprocess
    import sys

    # OpenBLAS threads spun on the cores the engine needs; the user's own setting wins.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run(
        [sys.executable, "-c", _BLAS_THREADS], capture_output=True, text=True, check=True, env=env
    )
    setting, counts = done.stdout.split(maxsplit=1)
    if counts.strip() == "[]":
        pytest.skip("numpy here is not linked with scipy-openblas")
    assert setting == str(threads)
    assert counts.strip() == f"[{threads}]"
