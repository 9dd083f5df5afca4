"""What every lab run ends with: ``Experiment.write_tables`` (a result's JSON and its page)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.base import Experiment


def test_the_json_and_its_page_are_written_side_by_side_and_the_page_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "folder"
    path = Experiment.write_tables(out, "joins", {"n": 2, "é": [1]}, "# Joins\n", indent=1)
    assert path == out / "joins.json"
    assert path.read_text(encoding="utf-8") == json.dumps({"n": 2, "é": [1]}, indent=1) + "\n"
    assert (out / "joins.md").read_text(encoding="utf-8") == "# Joins\n"
    assert capsys.readouterr().out == "# Joins\n\n"


def test_without_a_page_only_the_json_is_written_and_its_path_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Experiment.write_tables(tmp_path, "retrieval", {"k": 1})
    assert json.loads(path.read_text()) == {"k": 1}
    assert path.read_text().startswith('{\n  "k"')  # the default indent: 2
    assert [p.name for p in tmp_path.iterdir()] == ["retrieval.json"]
    assert capsys.readouterr().out == f"wrote {path}\n"


def test_a_page_may_have_its_own_name(tmp_path: Path) -> None:
    Experiment.write_tables(tmp_path, "engines", {}, "| a |\n", page_name="table.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engines.json", "table.md"]
