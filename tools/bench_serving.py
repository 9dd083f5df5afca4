"""Many users on one shared engine: ParallelSearch runs at once against ``serve``.

    .venv/bin/python tools/bench_serving.py --out benchmarks/serving

One vLLM server (``start_server(warm=True)``, the default CPU engine as ``serve`` starts it, or
``--engine`` settings over it)
and, in this process, the ``parallel-search`` graph on ``smollm2-parallel`` through
``ChatVLLMServer`` with the hybrid index over the bundled corpus. The first ``--questions``
questions of the bundled HotpotQA sample run with 1, 4 and 16 concurrent runs (each its own
graph invocation, as a server's threads are), each question once per level, the server's prefix
cache emptied before each level (vLLM's dev-mode ``/reset_prefix_cache``), so a level does not
read the prompts of the one before from the cache. Reported per level:
throughput (questions per second of wall time), p50/p95 latency of a question, errors and
non-answers, the engine's running-request count reached (the server's ``/metrics``, sampled
every 0.1 s) and its prefix-cache hit rate over the level.

Then the fault run: the same questions at the highest level, and after ``--kill-after``
questions have finished the server is killed (SIGKILL to its whole process group, a crash) and
started again on the same port; runs that meet the dead server retry (the client's and the
graph's retry policies) and then end with a ``model_error`` stop reason. Every question must
end with an answer or a stated stop reason, none twice.

Run it on an idle machine: the figures are wall times on the 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import sys
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODEL = "smollm2-parallel"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def metric(text: str, name: str) -> float:
    """Sum of a Prometheus metric's samples (all label sets) in a ``/metrics`` page."""
    pattern = rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.eE+-]+)$"
    return sum(float(m.group(1)) for m in re.finditer(pattern, text, re.M))


class MetricsSampler:
    """Polls the server's ``/metrics``: the most requests running at once, cache counters."""

    def __init__(self, base: str) -> None:
        self.url = base + "/metrics"
        self.max_running = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def read(self) -> str:
        try:
            with urllib.request.urlopen(self.url, timeout=2) as reply:
                return str(reply.read().decode())
        except OSError:  # the server is down (fault run)
            return ""

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            running = metric(self.read(), "vllm:num_requests_running")
            self.max_running = max(self.max_running, running)

    def __enter__(self) -> MetricsSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cache_counters(sampler: MetricsSampler) -> tuple[float, float]:
    text = sampler.read()
    return metric(text, "vllm:prefix_cache_hits_total"), metric(
        text, "vllm:prefix_cache_queries_total"
    )


def reset_prefix_cache(base: str) -> None:
    request = urllib.request.Request(base + "/reset_prefix_cache", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="benchmarks/serving")
    parser.add_argument("--questions", type=int, default=64)
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--kill-after", type=int, default=16, help="fault run: kill after N done")
    parser.add_argument("--no-fault", action="store_true", help="skip the fault run")
    parser.add_argument("--engine", default="{}", help="JSON engine settings over the defaults")

    args = parser.parse_args()
    engine = json.loads(args.engine)
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # for /reset_prefix_cache between levels

    from langgraph_parallel.apps.bench_cli import source_commit
    from langgraph_parallel.apps.registry import build_graph, load_model
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.models.server import start_server, stop_server
    from langgraph_parallel.paths import repo_data_dir
    from langgraph_parallel.retrieval.indexes import corpus_index

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "server.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    begin = time.perf_counter()
    server = start_server(MODEL, port=port, log_path=str(log), warm=True, engine_kwargs=engine)
    server_start_s = time.perf_counter() - begin
    questions = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    questions = questions[: args.questions]
    model = load_model(MODEL, base_url=base + "/v1")

    graph = build_graph("parallel-search", model, corpus_index(None, kind="hybrid"))
    levels = [int(x) for x in args.levels.split(",")]
    result: dict[str, Any] = {
        "commit": source_commit(),
        "command": " ".join(["tools/bench_serving.py", *sys.argv[1:]]),
        "engine": engine,
        "server_start_s": round(server_start_s, 1),
        "levels": [],
    }
    try:
        for workers in levels:
            level = run_level(graph, questions, workers, base)
            result["levels"].append(level)
            print(json.dumps({k: v for k, v in level.items() if k != "rows"}), flush=True)
        if args.no_fault:
            return finish(result, levels, out)

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
            if done == args.kill_after:
                threading.Thread(target=kill_and_restart).start()

        fault = run_level(graph, questions, levels[-1], base, on_done=on_done)
        while "down_s" not in restarted:  # the restart may outlast the level's questions
            time.sleep(0.5)
        fault["server_down_s"] = round(restarted["down_s"], 1)
        fault["kill_after"] = args.kill_after
        fault["accounted"] = sum(
            r["answer"] is not None or bool(r["stop_reason"]) for r in fault["rows"]
        )
        result["fault"] = fault
        print("fault", json.dumps({k: v for k, v in fault.items() if k != "rows"}), flush=True)
    finally:
        stop_server(server)
    return finish(result, levels, out)


def finish(result: dict[str, Any], levels: list[int], out: Path) -> int:
    """Add the speed-up of the highest level over the lowest; write ``serving.json``."""
    one = next(lv for lv in result["levels"] if lv["concurrency"] == levels[0])
    top = next(lv for lv in result["levels"] if lv["concurrency"] == levels[-1])
    result["speedup"] = round(top["throughput_q_per_s"] / one["throughput_q_per_s"], 2)
    (out / "serving.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"speedup {levels[-1]} vs {levels[0]}: {result['speedup']}x; wrote {out}/serving.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
