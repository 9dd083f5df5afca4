"""Many users on one shared engine: ParallelSearch runs at once against ``serve``.

``langgraph-parallel bench run serving`` writes ``OUT/serving.json``: one vLLM server
(``start_server(warm=True)``, the default CPU engine as ``serve`` starts it, or setting
``engine``, JSON settings over it; the committed ``plain`` run: ``--set
'engine={"speculative_config": null}' --set fault=false --out benchmarks/serving/plain``)
and, in this process, the ``parallel-search`` graph on ``smollm2-parallel`` through
``ChatVLLMServer`` with the hybrid index over the bundled corpus. The first ``--limit``
questions of the bundled HotpotQA sample run with 1, 4 and 16 concurrent runs (each its own
graph invocation, as a server's threads are), each question once per level, the server's prefix
cache emptied before each level (vLLM's dev-mode ``/reset_prefix_cache``), so a level does not
read the prompts of the one before from the cache. Reported per level:
throughput (questions per second of wall time), p50/p95 latency of a question, errors and
non-answers, the engine's running-request count reached (the server's ``/metrics``, sampled
every 0.1 s) and its prefix-cache hit rate over the level.

Then the fault run: the same questions at the highest level, and after setting ``kill_after``
questions have finished the server is killed (SIGKILL to its whole process group, a crash) and
started again on the same port; runs that meet the dead server retry (the client's and the
graph's retry policies) and then end with a ``model_error`` stop reason. Every question must
end with an answer or a stated stop reason, none twice.

Run it on an idle machine: the figures are wall times on the 2-core CPU.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from langgraph_parallel.apps.experiments.base import Experiment, Run
from langgraph_parallel.apps.experiments.provenance import at_commit
from langgraph_parallel.apps.experiments.serving_metrics import (
    MetricsSampler,
    cache_counters,
    free_port,
    reset_prefix_cache,
)
from langgraph_parallel.paths import checkout_dir, repo_data_dir, source_commit

__all__ = ["EXPERIMENT", "render_serving", "run_level"]

MODEL = "smollm2-parallel"


def run_level(
    graph: Any, questions: list[Any], workers: int, base: str, on_done: Any = None
) -> dict[str, Any]:
    """Run every question once with ``workers`` concurrent runs; return the level's figures."""
    from langgraph_parallel.eval.harness import evaluate

    reset_prefix_cache(base)
    with MetricsSampler(base) as sampler:
        hits0, queries0 = cache_counters(sampler)
        begin = time.perf_counter()
        rows = []
        with ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(evaluate, graph, "parallel-search", q) for q in questions]
            for future in as_completed(futures):
                rows.append(future.result())
                if on_done is not None:
                    on_done(len(rows))
        wall = time.perf_counter() - begin
        hits1, queries1 = cache_counters(sampler)
    latencies = sorted(r["wall_s"] for r in rows)
    ids = [r["id"] for r in rows]
    return {
        "concurrency": workers,
        "questions": len(rows),
        "distinct_questions": len(set(ids)),
        "wall_s": round(wall, 1),
        "throughput_q_per_s": round(len(rows) / wall, 3),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
        "answered": sum(r["answer"] is not None for r in rows),
        "stop_reasons": dict(
            sorted(Counter((r["stop_reason"] or "").split(":")[0] for r in rows).items())
        ),
        "errors": sum(r["error"] is not None for r in rows),
        "em": round(statistics.mean(r["em"] for r in rows), 3),
        "f1": round(statistics.mean(r["f1"] for r in rows), 3),
        "completion_tokens": round(statistics.mean(r["completion_tokens"] for r in rows), 1),
        "max_running_requests": sampler.max_running,
        # A restarted server starts its counters again: no rate for a level that spans one.
        "prefix_cache_hit_rate": round((hits1 - hits0) / (queries1 - queries0), 3)
        if queries1 > queries0 and hits1 >= hits0
        else None,
        "rows": [
            {k: r[k] for k in ("id", "answer", "stop_reason", "wall_s", "llm_calls", "error")}
            for r in rows
        ],
    }


def _run(run: Run) -> None:
    s = run.settings
    engine = json.loads(s["engine"])
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # for /reset_prefix_cache between levels

    from langgraph_parallel.apps.registry import build_graph, load_model
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.models.server import start_server, stop_server
    from langgraph_parallel.retrieval.indexes import corpus_index

    out = run.out
    out.mkdir(parents=True, exist_ok=True)
    run.uses(MODEL)
    log = out / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    begin = time.perf_counter()
    server = start_server(MODEL, port=port, log_path=str(log), warm=True, engine_kwargs=engine)
    server_start_s = time.perf_counter() - begin
    questions = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    questions = questions[: run.limit]
    model = load_model(MODEL, base_url=base + "/v1")

    graph = build_graph("parallel-search", model, corpus_index(None, kind="hybrid"))
    levels = [int(x) for x in s["levels"].split(",")]
    result: dict[str, Any] = {
        "commit": source_commit(),
        "command": run.command,
        "engine": engine,
        "server_start_s": round(server_start_s, 1),
        "levels": [],
    }
    try:
        for workers in levels:
            level = run_level(graph, questions, workers, base)
            result["levels"].append(level)
            print(json.dumps({k: v for k, v in level.items() if k != "rows"}), flush=True)
        if not s["fault"]:
            finish(result, levels, out)
            return

        restarted: dict[str, float] = {}

        def kill_and_restart() -> None:
            nonlocal server
            restarted["killed_at_s"] = time.perf_counter()
            os.killpg(server.pid, signal.SIGKILL)  # a crash, not a shutdown
            stop_server(server)  # reaps it (and anything of its group still alive)
            server = start_server(
                MODEL, port=port, log_path=str(log), warm=True, engine_kwargs=engine
            )
            restarted["down_s"] = time.perf_counter() - restarted["killed_at_s"]

        # The restart runs on its own thread: the runs in flight meanwhile meet a dead server.
        def on_done(done: int) -> None:
            if done == s["kill_after"]:
                threading.Thread(target=kill_and_restart).start()

        fault = run_level(graph, questions, levels[-1], base, on_done=on_done)
        while "down_s" not in restarted:  # the restart may outlast the level's questions
            time.sleep(0.5)
        fault["server_down_s"] = round(restarted["down_s"], 1)
        fault["kill_after"] = s["kill_after"]
        fault["accounted"] = sum(
            r["answer"] is not None or bool(r["stop_reason"]) for r in fault["rows"]
        )
        result["fault"] = fault
        print("fault", json.dumps({k: v for k, v in fault.items() if k != "rows"}), flush=True)
    finally:
        stop_server(server)
    finish(result, levels, out)


def finish(result: dict[str, Any], levels: list[int], out: Path) -> None:
    """Add the speed-up of the highest level over the lowest; write ``serving.json``."""
    one = next(lv for lv in result["levels"] if lv["concurrency"] == levels[0])
    top = next(lv for lv in result["levels"] if lv["concurrency"] == levels[-1])
    result["speedup"] = round(top["throughput_q_per_s"] / one["throughput_q_per_s"], 2)
    (out / "serving.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"speedup {levels[-1]} vs {levels[0]}: {result['speedup']}x; wrote {out}/serving.json")


EXPERIMENT = Experiment(
    name="serving",
    about="ParallelSearch runs at once (1/4/16) on one shared `serve`, then a server crash",
    out="benchmarks/serving/ngram",
    run=_run,
    limit=64,
    settings={"levels": "1,4,16", "kill_after": 16, "fault": True, "engine": "{}"},
)


def render_serving(root: Path | None = None) -> str:
    """Render concurrent runs on one shared server per engine (block ``serving-results``)."""
    root = root or checkout_dir() / "benchmarks" / "serving"
    runs = [json.loads(p.read_text()) for p in sorted(root.glob("*/serving.json"))]
    first = runs[0]
    made_by = first["command"].split(" --")[0]  # the command without its flags
    lines = [
        f"Made by `{made_by}` (`benchmarks/serving/*/`, commands there){at_commit(first)}:"
        f" one `langgraph-parallel serve` on the 2-core CPU, the first "
        f"{first['levels'][0]['questions']} questions of the bundled HotpotQA sample through "
        "`parallel-search` (`smollm2-parallel`, hybrid index, `ChatVLLMServer`) with 1, 4 and 16 "
        "runs at once, the server's prefix cache emptied before each level.",
        "",
        "| engine | runs at once | questions/s | vs 1 run | p50 s | p95 s | engine batch reached "
        "| prefix-cache hits | answered | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        spec = run["engine"].get("speculative_config", "default")
        engine = "no speculation" if spec is None else "n-gram speculation (default)"
        one = run["levels"][0]["throughput_q_per_s"]
        for lv in run["levels"]:
            lines.append(
                f"| {engine} | {lv['concurrency']} | {lv['throughput_q_per_s']:.3f} "
                f"| {lv['throughput_q_per_s'] / one:.2f}x | {lv['p50_s']:.1f} | {lv['p95_s']:.1f} "
                f"| {lv['max_running_requests']:.0f} | {lv['prefix_cache_hit_rate']:.0%} "
                f"| {lv['answered']}/{lv['questions']} | {lv['errors']} |"
            )
    for run in runs:
        fault = run.get("fault")
        if fault:
            reasons = ", ".join(f"{n} {r}" for r, n in fault["stop_reasons"].items())
            lines += [
                "",
                f"Fault run ({fault['concurrency']} runs at once; the server killed with SIGKILL "
                f"after {fault.get('kill_after', 16)} questions and started again, down "
                f"{fault['server_down_s']:.0f} s): **{fault['accounted']} of {fault['questions']}"
                f"** questions ended with an answer or a stated stop reason ({reasons}), "
                f"{fault['distinct_questions']} distinct, none lost or repeated.",
            ]
    return "\n".join(lines)
