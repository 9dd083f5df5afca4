"""Declared experiments: ``bench list``, ``bench run NAME`` (resumable), ``summary.json``, rows."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from lab import base, bench_runs, record
from lab.base import Experiment, Run, resolve_settings
from lab.catalog import EXPERIMENTS
from lab.compare import compare
from lab.experiments.grpo import changes
from lab.record import model_identity
from lab.runner import run_experiment
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.apps.cli import main
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.harness import run_graphs
from langgraph_parallel.eval.results import compress_results, load_results, results_in
from langgraph_parallel.models.adapters import adapter_hash
from langgraph_parallel.models.embedded import ADAPTERS_DIR

MACHINE = {"cpu": "Test CPU", "cores": 2, "avx512_bf16": False, "amx": False, "gpu": None}


class Killed(BaseException):
    """Stands in for SIGKILL / Ctrl-C: not an Exception, so nothing records it."""


class CountingGraph:
    """Answers every question, raising :class:`Killed` once ``kill_after`` questions ran."""

    def __init__(self, kill_after: int | None = None) -> None:
        self.kill_after = kill_after
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def invoke(self, inputs: dict[str, Any], **_: Any) -> dict[str, Any]:
        with self._lock:
            if self.kill_after is not None and len(self.asked) >= self.kill_after:
                raise Killed
            self.asked.append(inputs["question"])
        return {"answer": "yes", "stop_reason": "answered", "counters": {"llm_calls": 1}}


def _questions(n: int) -> list[Question]:
    return [
        Question(
            id=f"q{i}",
            question=f"Question {i}?",
            answer="yes",
            answers=("yes",),
            type="comparison",
            dataset="hotpotqa",
        )
        for i in range(n)
    ]


def _experiment(graph: CountingGraph) -> Experiment:
    """A tiny declared experiment over :class:`CountingGraph`, run by the one harness."""

    def run(r: Run) -> None:
        r.uses("smollm2-parallel")
        r.folders.append(r.out / "fake")
        run_graphs(_questions(r.limit or 6), {"fake": graph}, r.out / "fake", progress=False)

    return Experiment(
        name="tiny", about="a test", out="unused", run=run, limit=4, settings={"concurrency": 1}
    )


@pytest.fixture(autouse=True)
def _this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    # lscpu and torch's probes are the machine's; the record must carry whatever they say.
    monkeypatch.setattr(record, "machine", lambda: dict(MACHINE))


def test_bench_list_names_every_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "list"]) == 0
    out = capsys.readouterr().out
    for name, e in EXPERIMENTS.items():
        assert f"{name} " in out and e.about in out and e.out.startswith("benchmarks")
    declared = {
        "parallel-search",
        "sft",
        "grpo",
        "parallel-muse",
        "reliability",
        "latency-policies",
    }
    assert declared <= set(EXPERIMENTS)


def test_the_flags_based_bench_names_what_it_lacks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["bench", "--graphs", "direct", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bench needs --dataset" in err and "bench run NAME" in err
    assert main(["bench", "run", "nope"]) == 2
    assert "No experiment 'nope'" in capsys.readouterr().err
    assert main(["bench", "run", "reliability", "--set", "budget=3"]) == 2
    assert "setting of reliability (scale)" in capsys.readouterr().err
    assert main(["bench", "--dataset", "d", "run", "reliability"]) == 2
    assert "--dataset belong to `bench` without `run`" in capsys.readouterr().err


def test_settings_are_typed_as_their_defaults() -> None:
    e = Experiment(
        name="x",
        about="",
        out="o",
        run=lambda r: None,
        settings={"n": 2, "scale": 1.0, "fault": True, "models": "a,b"},
    )
    got = resolve_settings(e, ["n=5", "scale=0.5", "fault=false", "models=c=d,e", "n=6"])
    assert got == {"n": 6, "scale": 0.5, "fault": False, "models": "c=d,e"}
    for bad, message in (("n=x", "is a number"), ("fault=maybe", "true or false"), ("n", "KEY")):
        with pytest.raises(UserError, match=message):
            resolve_settings(e, [bad])


def test_an_interrupted_run_resumes_and_its_summary_says_what_made_it(tmp_path: Path) -> None:
    killed = CountingGraph(kill_after=2)
    with pytest.raises(Killed):
        run_experiment(_experiment(killed), out=tmp_path)
    assert len(results_in(tmp_path / "fake")) == 2
    assert not (tmp_path / "summary.json").exists()  # no record of a run that did not finish

    graph = CountingGraph()
    run = run_experiment(_experiment(graph), out=tmp_path, pairs=["concurrency=2"])
    assert graph.asked == ["Question 2?", "Question 3?"]  # only what the kill left
    assert (tmp_path / "fake" / "results.jsonl.gz").exists()
    assert not (tmp_path / "fake" / "results.jsonl").exists()
    assert [r["id"] for r in results_in(tmp_path / "fake")] == ["q0", "q1", "q2", "q3"]
    summary = json.loads((tmp_path / "summary.json").read_text())["experiments"]["tiny"]
    assert (
        summary["command"]
        == run.command
        == f"langgraph-parallel bench run tiny --out {tmp_path} --set concurrency=2"
    )
    assert summary["settings"] == {"concurrency": 2}
    assert summary["machine"] == MACHINE and summary["commit"]
    parallel = ADAPTERS_DIR / "smollm2-parallel"
    assert summary["models"]["smollm2-parallel"]["adapter"] == adapter_hash(parallel)
    assert len(summary["invocations"]) == 1 and summary["wall_s"] >= 0

    # More questions later: resumed from the compressed rows, recorded as a second piece.
    more = CountingGraph()
    run_experiment(_experiment(more), limit=6, out=tmp_path)
    assert more.asked == ["Question 4?", "Question 5?"]
    summary = json.loads((tmp_path / "summary.json").read_text())["experiments"]["tiny"]
    assert len(summary["invocations"]) == 2 and summary["settings"] == {"concurrency": 1}
    assert len(results_in(tmp_path / "fake")) == 6


def test_records_of_experiments_sharing_a_folder_stay_apart(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"graphs": {"g": {}}}))
    for name in ("one", "two"):
        e = Experiment(name=name, about="", out="o", run=lambda r: None)
        run_experiment(e, out=tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["experiments"]) == {"one", "two"} and summary["graphs"] == {"g": {}}


def test_a_run_records_the_models_and_folders_of_its_bench_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[BenchSpec] = []
    monkeypatch.setattr(base, "bench_here", calls.append)
    run = Run(experiment="x", out=tmp_path, limit=None, settings={}, command="c")
    out = str(tmp_path / "a")
    folder = run.bench(BenchSpec(dataset="d", graphs=("direct", "parallel-search"), out=out))
    run.bench(BenchSpec(dataset="d", model="gemma3", graphs=("sequential",), out=out))
    assert folder == tmp_path / "a" and run.folders == [folder] and len(calls) == 2
    assert run.models == ["smollm2", "smollm2-parallel", "gemma3"]


def test_model_identity_names_the_weights(tmp_path: Path) -> None:
    shipped = model_identity("smollm2-parallel")
    assert shipped["adapter"] == adapter_hash(ADAPTERS_DIR / "smollm2-parallel")
    assert "==" in shipped["base"] or "not installed" in shipped["base"]
    assert "adapter" not in model_identity("smollm2")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    first = model_identity(str(folder))["folder"]
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert model_identity(str(folder))["folder"] != first
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"lora")
    (adapter / "langgraph_parallel.json").write_text(json.dumps({"base_model": "smollm2"}))
    assert model_identity(str(adapter)) == {
        "adapter": adapter_hash(adapter),
        "base": model_identity("smollm2"),
    }
    assert model_identity("Qwen/Qwen3-0.6B") == {"name": "Qwen/Qwen3-0.6B"}
    # What a benchmark folder records on every start: adapters only, no full weights hashed.
    from langgraph_parallel.models.identity import adapter_of

    assert adapter_of(str(adapter)) == adapter_hash(adapter)
    assert adapter_of("smollm2-parallel") == shipped["adapter"]
    assert [adapter_of(m) for m in ("smollm2", str(folder), "Qwen/Qwen3-0.6B")] == [None] * 3


def test_compressed_and_plain_rows_read_as_one_file(tmp_path: Path) -> None:
    rows = [{"graph": "g", "id": f"q{i}", "em": i} for i in range(3)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    gz = compress_results(tmp_path)
    assert gz == tmp_path / "results.jsonl.gz" and not (tmp_path / "results.jsonl").exists()
    first = gz.read_bytes()
    assert compress_results(tmp_path) is not None and gz.read_bytes() == first  # no time stamp
    # A resume appends to a new plain file, a kill cuts its last line short.
    (tmp_path / "results.jsonl").write_text(
        json.dumps(rows[0] | {"em": 9}) + "\n" + json.dumps(rows[2]) + "\n" + '{"graph": "g", "i'
    )
    assert load_results(tmp_path / "results.jsonl") == rows  # first copy of a pair wins
    compress_results(tmp_path)
    lines = gzip.decompress(gz.read_bytes()).decode().splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert compress_results(tmp_path / "empty") is None


def test_reliability_runs_as_an_experiment(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    assert main(["bench", "run", "reliability", "--limit", "1", "--out", str(out)]) == 0
    payload = json.loads((out / "reliability.json").read_text())
    assert payload["limit"] == 1 and payload["rows"]
    assert all(r["crashes"] == 0 and r["completed"] == r["cases"] for r in payload["rows"])
    assert "bench run reliability --limit 1" in (out / "reliability.md").read_text()
    summary = json.loads((out / "summary.json").read_text())["experiments"]["reliability"]
    assert summary["settings"] == {"scale": 1.0} and summary["models"] == {}


def test_compare_reports_equal_rows_and_names_a_changed_counter(tmp_path: Path) -> None:
    row = {
        "graph": "parallel-search",
        "id": "q1",
        "answer": "yes",
        "stop_reason": "answered",
        "llm_calls": 2,
        "turns": 1,
        "sub_queries": 2,
        "prompt_tokens": 300,
        "cached_prompt_tokens": 96,
        "completion_tokens": 40,
        "wall_s": 1.0,
    }
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, diff in ((old, {}), (new, {"wall_s": 9.0})):
        folder.mkdir()
        (folder / "results.jsonl").write_text(json.dumps({**row, **diff}) + "\n")
    compress_results(old)  # a committed, compressed run against a fresh one
    report, same = compare(old, new)
    assert same and "| parallel-search | 1 | 1 | - |" in report  # wall time is not behaviour
    (new / "results.jsonl").write_text(json.dumps({**row, "cached_prompt_tokens": 64}) + "\n")
    report, same = compare(old, new)
    assert not same and "| parallel-search | 1 | 0 | cached_prompt_tokens |" in report
    assert main(["bench", "compare", str(old), str(new)]) == 1


def test_grpo_counts_questions_turned_right_and_wrong_by_class() -> None:
    rows = [
        {"graph": g, "id": i, "class": c, "em": em}
        for g, i, c, em in (
            ("sft", "a", "parallelizable", 0.0),
            ("grpo", "a", "parallelizable", 1.0),
            ("sft", "b", "parallelizable", 1.0),
            ("grpo", "b", "parallelizable", 1.0),
            ("sft", "c", "sequential", 1.0),
            ("grpo", "c", "sequential", 0.0),
            ("sft", "d", "sequential", 0.0),  # not run by grpo: not counted
        )
    ]
    assert changes(rows, "sft", "grpo") == {"parallelizable_gained": 1, "sequential_lost": 1}
    assert changes(rows, "grpo", "sft") == {"parallelizable_lost": 1, "sequential_gained": 1}


def test_the_committed_grpo_summary_is_what_train_curve_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = Path(__file__).resolve().parents[2]
    assert main(["train", "curve", str(repo / "benchmarks/rl/metrics.jsonl")]) == 0
    assert capsys.readouterr().out == (repo / "benchmarks/rl/curve.md").read_text()


def test_a_rows_paragraphs_are_its_sentences_as_stored() -> None:
    from langgraph_parallel.eval.contexts import row_paragraphs

    row = {"context": [{"title": "A", "sentences": ["One.", " Two. "]}, {"title": "B"}]}
    assert row_paragraphs(row) == {"A": "One. Two.", "B": ""}
    assert row_paragraphs({"question": "no context"}) == {}


def _fake_bench(calls: list[BenchSpec]) -> Any:
    """Stands in for ``run_benchmark``: two rows per graph in the spec's ``out`` folder."""

    def bench(spec: BenchSpec, *_: Any, **__: Any) -> None:
        calls.append(spec)
        folder = Path(spec.out)
        folder.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "graph": g,
                "id": f"q{i}",
                "class": ("parallelizable", "sequential")[i],
                "em": 1.0,
                "f1": 1.0,
                "answer": "a",
                "turns": 1,
                "llm_calls": 2,
                "first_turn_parallel": 1,
                "parallel_turns": 1,
                "agent_cost": 10.0 + i,
                "steps_per_trajectory": 2.0,
                "trajectories": 8,
                "em_join_graph": 1.0,
                "em_single": 0.0,
            }
            for g in spec.graphs
            for i in range(2)
        ]
        with (folder / "results.jsonl").open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)

    return bench


@pytest.mark.parametrize(
    "name", ["parallel-search", "models", "sft", "grpo", "parallel-muse", "parallel-muse-sweep"]
)
def test_each_harness_experiment_runs_its_benches_and_writes_its_tables(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.experiments.muse import muse
    from lab.experiments.sft import sft
    from langgraph_parallel.paths import shared_data_dir

    if name in ("sft", "grpo") and not shared_data_dir().is_dir():
        pytest.skip("needs ../shared/data (the 2Wiki sample)")
    calls: list[BenchSpec] = []
    monkeypatch.setattr(base, "bench_here", _fake_bench(calls))
    monkeypatch.setattr(base, "bench_in_child", _fake_bench(calls))
    monkeypatch.setattr(sft, "prompt_saving", lambda: {"few_shot": 2.0, "rules": 1.0, "saved": 1.0})
    monkeypatch.setattr(muse, "_plot", lambda rows, path: None)
    monkeypatch.delenv("LANGGRAPH_PARALLEL_ENGINE", raising=False)
    run = run_experiment(EXPERIMENTS[name], limit=2, out=tmp_path)
    # An experiment's engine settings reach its bench children only, never this process: a
    # later engine here (another test, another experiment) keeps its own KV cache.
    assert "LANGGRAPH_PARALLEL_ENGINE" not in os.environ
    assert calls and all(c.out.startswith(str(tmp_path)) and c.graphs for c in calls)
    assert run.models and all((f / "results.jsonl.gz").exists() for f in run.folders)
    tables = {p.name for p in tmp_path.iterdir() if p.suffix in (".md", ".json")}
    expected = {
        "parallel-search": "parallel_search.md",
        "models": "models.md",
        "sft": "sft.md",
        "grpo": "grpo.md",
        "parallel-muse": "parallel_muse.md",
        "parallel-muse-sweep": "sweep.md",
    }[name]
    assert expected in tables and "summary.json" in tables
    command = f"Command: `langgraph-parallel bench run {name} --limit 2 --out {tmp_path}`"
    assert command in (tmp_path / expected).read_text()


def test_parallel_muse_takes_a_samples_own_limit_where_it_is_smaller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.experiments.muse import muse

    calls: list[BenchSpec] = []
    monkeypatch.setattr(base, "bench_here", _fake_bench(calls))
    monkeypatch.setattr(base, "bench_in_child", _fake_bench(calls))
    monkeypatch.setattr(muse, "_plot", lambda rows, path: None)
    monkeypatch.delenv("LANGGRAPH_PARALLEL_ENGINE", raising=False)
    pairs = ["sample_limits=musique:1,2wiki:5"]
    run_experiment(EXPERIMENTS["parallel-muse"], limit=3, out=tmp_path, pairs=pairs)
    limits = {c.out.rsplit("/", 1)[1]: c.limit for c in calls}
    assert limits == {"musique": 1, "2wiki": 3, "hotpotqa": 3}
    assert all(c.muse["budget"] == 8 and c.fresh_cache and c.index == "bm25" for c in calls)
    with pytest.raises(UserError, match="SAMPLE:N"):
        muse.sample_limits("musique=40")


def test_the_same_rows_compress_to_the_same_bytes_in_any_process(tmp_path) -> None:
    """The gzip header names no file (the temporary one carries a pid) and no time."""
    import subprocess
    import sys

    from langgraph_parallel.eval.results import compress_results

    made = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "results.jsonl").write_text(
            json.dumps({"graph": "g", "id": "q1", "em": 1}) + "\n"
        )
        code = "import sys; from langgraph_parallel.eval.results import compress_results as c;"
        subprocess.run([sys.executable, "-c", code + f" c({str(folder)!r})"], check=True)
        made.append((folder / "results.jsonl.gz").read_bytes())
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "results.jsonl").write_text(json.dumps({"graph": "g", "id": "q1", "em": 1}) + "\n")
    here = compress_results(folder)
    assert here is not None and made[0] == made[1] == here.read_bytes()


def test_a_child_bench_gets_its_engine_settings_in_its_own_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, str]] = []

    def child(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(kwargs["env"])
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(bench_runs.subprocess, "run", child)
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", '{"dtype": "bfloat16"}')
    run = Run(experiment="e", out=tmp_path, limit=1, settings={}, command="c")
    spec = BenchSpec(
        dataset="hotpotqa", graphs=("parallel-search",), out=str(tmp_path / "rows"), model="smollm2"
    )
    run.bench(spec, child=True, engine={"kv_cache_memory_bytes": 8 << 30})
    run.bench(spec, child=True)
    assert json.loads(seen[0]["LANGGRAPH_PARALLEL_ENGINE"]) == {"kv_cache_memory_bytes": 8 << 30}
    assert seen[1]["LANGGRAPH_PARALLEL_ENGINE"] == '{"dtype": "bfloat16"}'  # the user's, as given
    assert os.environ["LANGGRAPH_PARALLEL_ENGINE"] == '{"dtype": "bfloat16"}'
    with pytest.raises(ValueError, match="child=True"):
        run.bench(spec, engine={"dtype": "float32"})
