"""``langgraph-parallel bench`` end to end on the real engine and index, then resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_parallel.apps.cli import main
from langgraph_parallel.eval.harness import load_results
from langgraph_parallel.eval.summary import CLASSES, METRIC_KEYS

pytestmark = [pytest.mark.integration, pytest.mark.engine]

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "data" / "hotpotqa_dev_sample300.jsonl.gz"
GRAPHS = ("direct", "parallel-search")


def test_bench_writes_results_summary_report_and_plots(chat_model, hotpot_index, tmp_path, capsys):  # type: ignore[no-untyped-def]
    out = tmp_path / "bench"
    argv = ["bench", "--dataset", str(DATASET), "--limit", "2", "--graphs", ",".join(GRAPHS)]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(f"{name}: n=2 " in printed for name in GRAPHS)

    rows = load_results(out / "results.jsonl")
    assert sorted((r["graph"], r["id"]) for r in rows) == sorted(
        (g, r["id"]) for g in GRAPHS for r in rows if r["graph"] == GRAPHS[0]
    )
    assert len(rows) == 4 and all(r["error"] is None for r in rows)
    for row in rows:
        assert row["llm_calls"] >= 1 and row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
    direct = [r for r in rows if r["graph"] == "direct"]
    assert all(r["llm_calls"] == 1 and r["turns"] == 0 for r in direct)

    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["graphs"]) == list(GRAPHS)
    for block in summary["graphs"].values():
        assert set(block) == {"all", "by_type", "by_class"}
        assert tuple(block["all"]) == METRIC_KEYS and block["all"]["n"] == 2
        assert set(CLASSES) <= set(block["by_class"])
        assert sum(m["n"] for m in block["by_type"].values()) == 2

    report = (out / "report.md").read_text()
    assert "langgraph-parallel bench --dataset" in report and "--limit 2" in report
    for plot in ("em_vs_tokens.png", "calls_turns_by_class.png"):
        assert (out / plot).read_bytes().startswith(b"\x89PNG")

    # Rerunning the finished run resumes: nothing is recomputed, the summary is unchanged.
    assert main([*argv, "--out", str(out)]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 4
    assert json.loads((out / "summary.json").read_text()) == summary
