"""``langgraph-parallel results --draw``: the uncommitted plots and trees, drawn again from the
committed files by the functions a run draws them with; and the compressed context corpora."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from lab import results as results_tool
from lab.drawings import draw_folder
from langgraph_parallel.eval.muse import MUSE_KEYS
from langgraph_parallel.eval.muse_report import plot_saving_vs_length
from langgraph_parallel.eval.report import write_report
from langgraph_parallel.eval.summary import summarize
from langgraph_parallel.train.reward_curve import plot_rewards

GRAPHS = ["parallel-muse", "rollouts-majority"]


def muse_rows(prefix: str = "q") -> list[dict[str, Any]]:
    """Two questions, both systems, with ParallelMuse fields and a tree each."""
    rows = []
    for n, cost in ((1, 100.0), (2, 300.0)):
        for graph, factor in (("parallel-muse", 0.5), ("rollouts-majority", 1.0)):
            fields = {key: 1.0 for key in MUSE_KEYS}
            fields |= {"agent_cost": cost * factor, "steps_per_trajectory": 1.0 + n}
            rows.append(
                {
                    "graph": graph,
                    "id": f"{prefix}{n}",
                    "question": f"{prefix}{n}?",
                    "type": "bridge",
                    "class": "sequential",
                    "em": float(n == 1),
                    "answer": "a",
                    **fields,
                    "tree": f'flowchart TD\n    q["{graph} {prefix}{n}"]',
                }
            )
    return rows


def write_rows(folder: Path, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    (folder / "results.jsonl.gz").write_bytes(gzip.compress(body, mtime=0))


def bench_folder(folder: Path) -> dict[str, bytes]:
    """A committed bench folder as a run leaves it, less its drawings; return what a run drew."""
    rows = muse_rows()
    summary = summarize(rows, GRAPHS)
    made = folder.parent / f"{folder.name}-as-run"
    made.mkdir(parents=True)
    drawn = write_report(summary, made, command="bench ...", rows=rows)
    # A row of a graph the summary does not cover (an earlier run's) draws nothing.
    stray = {**rows[0], "graph": "sequential", "tree": "flowchart TD\n    s"}
    write_rows(folder, [*rows, stray])
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "report.md").write_text((made / "report.md").read_text())
    return {p.name: p.read_bytes() for p in drawn if p.name != "report.md"}


def test_a_bench_folder_is_drawn_as_the_run_drew_it_and_its_files_are_kept(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "benchmarks" / "muse"
    expected = bench_folder(folder)
    assert set(expected) == {
        "em_vs_tokens.png",
        "calls_turns_by_class.png",
        "muse_saving.png",
        "trees.md",
    }
    kept = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    assert {p.name for p in kept} == {"results.jsonl.gz", "summary.json", "report.md"}

    paths = draw_folder(folder)

    assert {p.name: p.read_bytes() for p in paths} == expected  # byte for byte
    assert "sequential" not in (folder / "trees.md").read_text()
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in kept} == kept  # untouched
    assert {p.name for p in folder.iterdir()} == {*expected, *(p.name for p in kept)}


def test_an_experiment_folder_gets_its_saving_plot_over_its_samples(tmp_path: Path) -> None:
    out = tmp_path / "parallel_muse"
    every = []
    for name in ("musique", "2wiki"):
        rows = muse_rows(prefix=name)
        write_rows(out / name, rows)
        every += [{**r, "dataset": name} for r in rows]
    (out / "parallel_muse.json").write_text(json.dumps({"datasets": {"musique": {}, "2wiki": {}}}))
    plot_saving_vs_length(every, tmp_path / "expected.png")

    assert draw_folder(out) == [out / "muse_saving.png"]
    assert (out / "muse_saving.png").read_bytes() == (tmp_path / "expected.png").read_bytes()


def test_a_grpo_log_gets_its_reward_curve_and_an_sft_log_nothing(tmp_path: Path) -> None:
    grpo, sft = tmp_path / "grpo", tmp_path / "sft"
    for folder in (grpo, sft):
        folder.mkdir()
    steps = [{"step": s, "reward": s / 10, "rollout/em": 0.5} for s in range(1, 5)]
    (grpo / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))
    (sft / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    plot_rewards(grpo / "metrics.jsonl", tmp_path / "expected.png")

    assert draw_folder(grpo) == [grpo / "reward_curve.png"]
    assert (grpo / "reward_curve.png").read_bytes() == (tmp_path / "expected.png").read_bytes()
    assert draw_folder(sft) == [] and not (sft / "reward_curve.png").exists()


def test_results_draw_walks_benchmarks_and_prints_a_line_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_parallel.apps.cli import main

    expected = bench_folder(tmp_path / "benchmarks" / "a" / "b")
    (tmp_path / "benchmarks" / "summary.json").write_text(json.dumps({"experiments": {}}))
    report = (tmp_path / "benchmarks" / "a" / "b" / "report.md").read_text()
    monkeypatch.setattr(results_tool, "checkout_dir", lambda: tmp_path)

    assert main(["results", "--draw"]) == 0

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "benchmarks/a/b/: " + ", ".join(expected)
    assert out[1].startswith("drew 4 files in 1 folders (")
    assert (tmp_path / "benchmarks" / "a" / "b" / "report.md").read_text() == report
    with pytest.raises(SystemExit):
        main(["results", "--draw", "--check"])


def test_context_corpora_are_compressed_the_same_way_and_old_plain_ones_still_read(
    tmp_path: Path,
) -> None:
    from langgraph_parallel.eval.contexts import context_corpus
    from langgraph_parallel.retrieval.corpus import load_corpus

    contexts = [{"B": "b text"}, {"A": "a text"}]
    first = context_corpus(contexts, tmp_path / "x")
    again = context_corpus(contexts, tmp_path / "y")
    assert first.name.endswith(".jsonl.gz") and first.name.startswith("contexts-")
    assert first.read_bytes() == again.read_bytes()  # no time stamp: the same bytes
    assert [(p.title, p.text) for p in load_corpus(first)] == [("A", "a text"), ("B", "b text")]

    # A folder from before the compression keeps its plain file, which runs there name.
    old = tmp_path / "old"
    old.mkdir()
    plain = old / first.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(first.read_bytes()))
    digest = hashlib.sha256(plain.read_bytes()).hexdigest()[:12]
    assert plain.name == f"contexts-{digest}.jsonl"  # the name is the plain content's hash
    assert context_corpus(contexts, old) == plain
    assert [(p.title, p.text) for p in load_corpus(plain)] == [("A", "a text"), ("B", "b text")]
    assert sorted(p.name for p in old.iterdir()) == [plain.name]


def test_a_run_made_on_a_plain_context_corpus_resumes_on_its_compressed_copy(
    tmp_path: Path,
) -> None:
    from langgraph_parallel.apps.bench import _check_settings
    from langgraph_parallel.errors import UserError

    plain = str(tmp_path / "contexts-0123456789ab.jsonl")
    _check_settings(tmp_path, {"corpus": plain})
    _check_settings(tmp_path, {"corpus": plain + ".gz"})
    assert json.loads((tmp_path / "run.json").read_text())["corpus"] == plain + ".gz"
    with pytest.raises(UserError, match="corpus="):
        _check_settings(tmp_path, {"corpus": str(tmp_path / "other.jsonl.gz")})
