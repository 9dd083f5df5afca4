"""README's graph pictures are generated from the code; this fails when they drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_graph_drawings_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "tools/draw_graphs.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_check_mode_reports_a_stale_readme(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    stale.write_text("# x\n<!-- graphs:start -->\nold picture\n<!-- graphs:end -->\n")
    command = [sys.executable, "tools/draw_graphs.py", "--readme", str(stale)]
    check = subprocess.run([*command, "--check"], cwd=REPO, capture_output=True, text=True)
    assert check.returncode == 1 and "stale" in check.stderr
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    text = stale.read_text()
    assert "old picture" not in text and text.startswith("# x\n")
    for node in ("fan_out", "observe", "think", "router", "aggregate"):
        assert f"\t{node}({node})" in text
    assert "fan_out -.-> search;" in text and "search --> observe;" in text
    assert subprocess.run([*command, "--check"], cwd=REPO, capture_output=True).returncode == 0
