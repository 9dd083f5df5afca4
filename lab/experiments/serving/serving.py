"""Many users on one shared engine: ParallelSearch runs at once against ``serve``.

``langgraph-parallel bench run serving`` writes ``OUT/serving.json``: one vLLM server
(``start_server(warm=True)``, the default CPU engine as ``serve`` starts it, or setting
``engine``, JSON settings over it; the committed ``plain`` run: ``--set
'engine={"speculative_config": null}' --set fault=false --out benchmarks/serving/plain``)
and, in this process, the ``parallel-search`` graph on ``smollm2-parallel`` through
``ChatVLLMServer`` with the hybrid index over the bundled corpus. The first ``--limit``
questions of the bundled HotpotQA sample run with 1, 4 and 16 concurrent runs (each its own
graph invocation, as a server's threads are; :mod:`.serving_level`), each question once per
level, the server's prefix cache emptied before each level (vLLM's dev-mode
``/reset_prefix_cache``), so a level does not read the prompts of the one before from the
cache. Reported per level: throughput (questions per second of wall time), p50/p95 latency of
a question, errors and non-answers, tokens per question (prompt, cached, uncached,
completion), the engine's running-request count reached (the server's ``/metrics``, sampled
every 0.1 s) and its prefix-cache hit rate over the level.

Against the limit (setting ``ceiling``, on by default): the same server's prefill and decode
tok/s alone at each level's concurrency (:mod:`.serving_probe`, ``decode_tokens`` per stream),
recorded raw under ``engine_throughput``; each level gets the question ceiling those rates
allow for its tokens per question and its throughput's share of it (:mod:`.serving_ceiling`).

And against this workload's own ceiling (setting ``replay``, on by default): each level's
recorded requests sent again without the agent, as many questions' chains at once as the level
had runs (:mod:`.serving_replay`); ``of_replay`` is the level's throughput over that. Each
level and each replay also records the CPU seconds of this process (the client: graph,
retrieval, HTTP) and of the server's process tree (``client_cpu_s``, ``server_cpu_s``).

Then the fault run (:mod:`.serving_fault`): the same questions at the highest level, and after
setting ``kill_after`` questions have finished the server is killed (SIGKILL to its whole
process group, a crash) and started again on the same port. Its graph retries transient errors
until setting ``retry_deadline`` (seconds of waiting, default 90: the questions in flight wait
for the restart); ``--set retry_deadline=0`` gives it the graphs' default policy instead (the
behaviour before: those questions end with ``model_error``), for comparison. Reported: the
endings split by stop reason, the questions lost, ids missing or repeated (every question must
end exactly once), and the latency of the questions in flight during the restart vs the others.

Run it on an idle machine: the figures are wall times on the 2-core CPU.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import GRAPHS, SERVING
from lab.experiments.serving.serving_ceiling import level_ceiling
from lab.experiments.serving.serving_fault import (
    Restart,
    fault_graph,
    retry_record,
    run_fault,
)
from lab.experiments.serving.serving_level import run_level
from lab.experiments.serving.serving_metrics import CpuMeter, free_port
from lab.experiments.serving.serving_probe import measure_levels
from lab.experiments.serving.serving_render import render_serving
from lab.experiments.serving.serving_replay import record_requests, replay_level
from langgraph_parallel.errors import UserError, describe_error
from langgraph_parallel.paths import repo_data_dir, source_commit

__all__ = ["EXPERIMENT", "render_serving", "run_level"]

MODEL = "smollm2-parallel"


def _run(run: Run) -> None:
    s = run.settings
    engine = json.loads(s["engine"])
    try:  # a deadline the policy refuses fails now, not after the levels' minutes
        retry = retry_record(s["retry_deadline"])
    except ValueError as exc:
        raise UserError(f"--set retry_deadline={s['retry_deadline']:g}: {exc}") from exc
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

    def start() -> Any:
        return start_server(MODEL, port=port, log_path=str(log), warm=True, engine_kwargs=engine)

    begin = time.perf_counter()
    restart = Restart(start(), start)  # restart.proc: the running server, stopped at the end
    server_start_s = time.perf_counter() - begin
    questions = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    questions = questions[: run.limit]
    model = load_model(MODEL, base_url=base + "/v1")
    search = corpus_index(None, kind="hybrid")
    graph = build_graph("parallel-search", model, search)
    levels = [int(x) for x in s["levels"].split(",")]
    result: dict[str, Any] = {
        "commit": source_commit(),
        "command": run.command,
        "engine": engine,
        "server_start_s": round(server_start_s, 1),
        "levels": [],
    }
    try:
        recordings = []
        for workers in levels:
            with record_requests() as recorded, CpuMeter(restart.proc.pid) as cpu:
                level = run_level(graph, questions, workers, base)
            level.update(cpu.record())
            recordings.append(recorded)
            result["levels"].append(level)
            print(json.dumps({k: v for k, v in level.items() if k != "rows"}), flush=True)
        if s["replay"]:
            order = [q.id for q in questions]
            for level, recorded in zip(result["levels"], recordings, strict=True):
                with CpuMeter(restart.proc.pid) as cpu:
                    replay = replay_level(base, recorded, order, level["concurrency"])
                level["replay"] = replay | cpu.record()
                if replay["ceiling_q_per_s"]:
                    share = level["throughput_q_per_s"] / replay["ceiling_q_per_s"]
                    level["of_replay"] = round(share, 3)
                print("replay", level["concurrency"], json.dumps(replay), flush=True)
        if s["ceiling"]:
            try:
                probes = measure_levels(base, MODEL, result["levels"], s["decode_tokens"])
            except Exception as exc:  # the levels' minutes are kept; the block shows "–"
                result["engine_throughput_error"] = describe_error(exc)
                print("engine probe failed:", result["engine_throughput_error"], flush=True)
            else:
                result["engine_throughput"] = probes
                for level, probe in zip(result["levels"], probes, strict=True):
                    level.update(level_ceiling(level, probe))
        finish(result, levels, out)  # written now too, in case the fault run fails
        if s["fault"]:
            # The restart runs on its own thread: the runs in flight meanwhile meet a dead server.
            fault_run = fault_graph(model, search, s["retry_deadline"])
            fault = run_fault(
                fault_run, questions, levels[-1], base, kill_after=s["kill_after"], restart=restart
            )
            fault["retry"] = retry
            result["fault"] = fault
            print("fault", json.dumps({k: v for k, v in fault.items() if k != "rows"}), flush=True)
            finish(result, levels, out)
    finally:
        stop_server(restart.proc)


def finish(result: dict[str, Any], levels: list[int], out: Path) -> None:
    """Add the speed-up of the highest level over the lowest; write ``serving.json``."""
    one = next(lv for lv in result["levels"] if lv["concurrency"] == levels[0])
    top = next(lv for lv in result["levels"] if lv["concurrency"] == levels[-1])
    result["speedup"] = round(top["throughput_q_per_s"] / one["throughput_q_per_s"], 2)
    print(f"speedup {levels[-1]} vs {levels[0]}: {result['speedup']}x")
    Experiment.write_tables(out, "serving", result)


_MEASURED = tuple(
    f"lab/experiments/serving/{name}.py"
    for name in ("serving_ceiling", "serving_fault", "serving_level")
    + ("serving_metrics", "serving_probe", "serving_replay")
)
EXPERIMENT = Experiment(
    name="serving",
    about="ParallelSearch runs at once (1/4/16) on one shared `serve`, then a server crash",
    out="benchmarks/serving/ngram",
    run=_run,
    limit=64,
    settings={
        "levels": "1,4,16",
        "ceiling": True,
        "replay": True,
        "decode_tokens": 128,
        "kill_after": 16,
        "fault": True,
        "retry_deadline": 90.0,
        "engine": "{}",
    },
    # What starts the server, sends the runs and counts them (not this declaration, whose
    # settings each run records, nor the renderer).
    measures=(*GRAPHS, *SERVING, *_MEASURED),
)
