"""The graph pictures of docs/graphs.md are generated from the code; drift fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_graph_drawings_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lab.graph_drawings", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_check_mode_reports_stale_pages(tmp_path: Path) -> None:
    page = tmp_path / "graphs.md"
    page.write_text("# x\n<!-- graphs:start -->\nold picture\n<!-- graphs:end -->\n")
    command = [sys.executable, "lab/graph_drawings.py", "--page", str(page)]
    check = subprocess.run([*command, "--check"], cwd=REPO, capture_output=True, text=True)
    assert check.returncode == 1 and "stale" in check.stderr
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    text = page.read_text()
    assert "old picture" not in text and text.startswith("# x\n")
    for node in ("fan_out", "observe", "think", "router", "aggregate"):
        assert f"\t{node}({node})" in text
    assert "fan_out -.-> search;" in text and "search --> observe;" in text
    assert "fan_out -.-> observe;" in text  # a turn of repeats only: no search branch
    assert "rollout --> router;" in text  # ParallelMuse's rollout: one run of the agent
    assert subprocess.run([*command, "--check"], cwd=REPO, capture_output=True).returncode == 0


def test_a_file_without_its_markers_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "graphs.md"
    page.write_text("# no markers\n")
    command = [sys.executable, "lab/graph_drawings.py", "--page", str(page)]
    done = subprocess.run([*command, "--check"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0 and "needs one <!-- graphs:start -->" in done.stderr
