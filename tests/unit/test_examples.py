"""The examples stay runnable: each runs as a script (scripted model) and prints its answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_add_fan_out_to_your_graph() -> None:
    out = run_example("01_add_fan_out_to_your_graph.py")
    assert "subgraph search_all" in out  # the fan-out step is drawn inside the user's graph
    assert "[Scott Derrickson] -> Scott Derrickson" in out and "[Ed Wood] -> Ed Wood" in out
    assert out.rstrip().endswith("answer: yes")


def test_runnables() -> None:
    lines = run_example("02_runnables.py").splitlines()
    assert lines[0].startswith("invoke -> yes")
    streamed = [line.split(":")[0] for line in lines if line.startswith("stream ->")]
    assert streamed == [
        f"stream -> {n}"
        for n in ("think", "fan_out", "search", "search", "observe", "think", "answer")
    ]
    assert "batch -> ['yes', 'no']" in lines
    assert any(
        line.startswith("tool -> parallel_search") and line.endswith(" no") for line in lines
    )
    assert lines[-1] == "chain -> no"


def test_create_agent_parallel_search() -> None:
    lines = run_example("03_create_agent_parallel_search.py").splitlines()
    # One search call carrying both names, searched together, then the answer.
    assert lines[0] == "search -> ['Scott Derrickson', 'Ed Wood']"
    assert lines[1].startswith("  [Scott Derrickson] -> Scott Derrickson")
    assert lines[2].startswith("  [Ed Wood] -> Ed Wood")
    counters = next(line for line in lines if line.startswith("counters:"))
    assert "'sub_queries': 2" in counters and "'llm_calls': 2" in counters
    assert lines[-1] == "answer: yes"


def test_parallel_muse_any_agent(tmp_path: Path) -> None:
    tree = tmp_path / "run.mmd"
    lines = run_example("04_parallel_muse_any_agent.py", "--tree", str(tree)).splitlines()
    # The agent's search is its uncertain step: forked there, re-sampled, joined by vote.
    assert lines[0] == "branch point: t0 step 0 (exploration)"
    assert lines[1] == "t0: searched [['Scott Derrickson', 'Ed Wood']] -> yes"
    forks = [line for line in lines if "(fork of t0 at step 0)" in line]
    assert len(forks) == 3 and forks[1] == "t2 (fork of t0 at step 0): searched [['Ed Wood']] -> no"
    assert "join: majority {'yes': 3.0, 'no': 1.0}" in lines
    assert tree.read_text().startswith("flowchart TD") and "branch point" in tree.read_text()
    assert lines[-1] == "answer: yes"
