"""What a new user meets on this machine: cold ``ask`` phase by phase, and each dtype's speed.

Two measurements (``benchmarks/first_contact/``), on an idle machine (they are wall times):

- **Cold start.** The README's ``ask`` in a new process, timed from outside, with ``--json
  --timings`` (the phases the process reports: start and imports, model preparation, index,
  engine start, first step, rest of the question, engine shutdown). One-shot (``--no-daemon``):
  first with an empty ``LANGGRAPH_PARALLEL_CACHE`` (the first ``ask`` ever: conversion of the
  embedded model and the adapter merge included), then three times more on that cache
  (median). Then as a user's ``ask`` runs by default, on that prepared cache (as after
  ``tools/setup.sh``): the first ``ask`` starts the background server, the next five reuse it
  (median); then the server is killed (SIGKILL to its process group) and one more ``ask``
  must still answer; the server is stopped at the end.
- **Dtype.** One process per dtype (``bfloat16``, ``float32``), each on the default engine
  settings but its dtype: prefill (1 and 4 prompts of ~700 new tokens, one generated token),
  decode (1 and 4 greedy streams of 64 tokens) and the median warm ``parallel-search`` question
  over held-out comparison questions after one warm-up question; which one the default picks on
  this CPU, and how far it is from the faster.

Run: ``langgraph-parallel bench run first-contact`` (or ``python -m
lab.experiments.first_contact.measure --out benchmarks/first_contact``)
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph_parallel.models.cpu import cpu_dtype, machine
from langgraph_parallel.paths import repo_data_dir, source_commit

__all__ = ["cold_start", "dtype_speed"]

MODULE = "lab.experiments.first_contact.measure"
"""This module's import name (``__name__`` is ``__main__`` when it runs with ``-m``)."""
QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"
DTYPES = ("bfloat16", "float32")
FILLER = (
    "The museum opened in the old customs house by the river, and its collection of maps, "
    "ship models and letters grew with each donation from the families of the port. "
)


CLI = [sys.executable, "-m", "langgraph_parallel.apps.cli"]


def _ask(cache: Path, *, daemon: bool) -> dict[str, Any]:
    """Run the README's ``ask`` in a new process on ``cache``; its JSON and the process wall."""
    command = [*CLI, "ask", "--json", "--timings", *([] if daemon else ["--no-daemon"])]
    env = {**os.environ, "LANGGRAPH_PARALLEL_CACHE": str(cache)}
    env["LANGGRAPH_PARALLEL_DAEMON"] = "1" if daemon else "0"
    t0 = time.perf_counter()
    done = subprocess.run([*command, QUESTION], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    timings = payload["timings"]
    # What the process does after its last timed phase (interpreter teardown).
    timings["exit (outside the process's own clock)"] = round(wall - sum(timings.values()), 3)
    return {
        "process_wall_s": round(wall, 2),
        "answer": payload["answer"],
        "answered_by": payload.get("answered_by", "in process"),
        "timings": timings,
    }


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda c: c["process_wall_s"])[len(runs) // 2]


def _kill_background_server(cache: Path) -> int:
    """SIGKILL the background server's process group on ``cache`` (a crash); return its pid.

    Waits until the whole group (the server and its engine core) is gone; the ``ask`` that
    started the server has exited, so the system reaps it, not this process.
    """
    (path,) = (cache / "daemon").glob("*.json")
    pid = int(json.loads(path.read_text())["pid"])
    os.killpg(pid, signal.SIGKILL)  # the server is the leader of its own session's group
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return pid
        time.sleep(0.2)
    raise RuntimeError(f"the background server's group {pid} outlived SIGKILL for 60 s")


def cold_start(repeats: int = 3, later: int = 5) -> dict[str, Any]:
    """Time one-shot asks (empty cache, then ``repeats``), then the background server's.

    Last, the fault a user can meet: the background server killed between two ``ask``s; the
    next ``ask`` must still answer (it starts a new server).
    """
    with tempfile.TemporaryDirectory(prefix="lgp-cache-") as tmp:
        cache = Path(tmp)
        first = _ask(cache, daemon=False)
        cold = [_ask(cache, daemon=False) for _ in range(repeats)]
        try:
            starting = _ask(cache, daemon=True)
            reusing = [_ask(cache, daemon=True) for _ in range(later)]
            killed = _kill_background_server(cache)
            after_kill = {**_ask(cache, daemon=True), "killed_server_pid": killed}
        finally:
            env = {**os.environ, "LANGGRAPH_PARALLEL_CACHE": tmp}
            subprocess.run([*CLI, "serve", "--stop"], env=env, capture_output=True, check=False)
    walls = [c["process_wall_s"] for c in reusing]
    return {
        "first_ever": first,
        "cold": cold,
        "cold_median_s": statistics.median(c["process_wall_s"] for c in cold),
        "median_run": _median_run(cold),
        "daemon": {
            "first": starting,
            "later": reusing,
            "later_median_s": statistics.median(walls),
            "median_run": _median_run(reusing),
            "after_kill": after_kill,
        },
    }


def _child(dtype: str, questions: int) -> dict[str, Any]:
    """Measure one dtype in this process (see the module docstring)."""
    from vllm import SamplingParams

    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.eval.harness import evaluate
    from langgraph_parallel.models.engine import engine_defaults
    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from langgraph_parallel.retrieval import default_index

    model = ChatVLLM(model="smollm2-parallel", engine_kwargs={"dtype": dtype})
    worker = model.worker
    tokens = worker.tokenizer.encode

    def run(prompts: list[str], params: Any) -> float:
        t0 = time.perf_counter()
        futures = [worker.submit(list(tokens(p)), copy.copy(params)) for p in prompts]
        for future in futures:
            future.result()
        return time.perf_counter() - t0

    run(["warm up"], SamplingParams(max_tokens=8))
    prompt = FILLER * 22  # ~700 tokens; a number in front keeps every prompt out of the cache
    rates: dict[str, float] = {}
    for n in (1, 4):
        batch = [f"{i}-{n}. {prompt}" for i in range(n)]
        new = sum(len(tokens(p)) for p in batch)
        rates[f"prefill_{n}_tok_s"] = round(new / run(batch, SamplingParams(max_tokens=1)), 1)
        greedy = SamplingParams(max_tokens=64, temperature=0, ignore_eos=True)
        rates[f"decode_{n}_tok_s"] = round(
            64 * n / run([f"Story {i}:" for i in range(n)], greedy), 1
        )
    graph = create_parallel_search_graph(model, default_index())
    sample = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz", types="comparison")
    rows = [evaluate(graph, "parallel-search", q) for q in sample[: questions + 1]]
    warm = [r["wall_s"] for r in rows[1:]]
    return {
        "engine": {**engine_defaults(), "dtype": dtype},
        **rates,
        "warm_question_median_s": round(statistics.median(warm), 2),
        "warm_questions": len(warm),
        "em": round(statistics.fmean(r["em"] for r in rows[1:]), 3),
    }


def dtype_speed(questions: int = 10) -> dict[str, Any]:
    """Each dtype in its own process; the default's distance to the faster on a warm question."""
    results = {}
    for dtype in DTYPES:
        command = [sys.executable, "-m", MODULE, "--child", dtype, "--questions", str(questions)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        results[dtype] = json.loads(line.removeprefix("RESULT "))
    default = cpu_dtype()
    best = min(DTYPES, key=lambda d: results[d]["warm_question_median_s"])
    ratio = results[default]["warm_question_median_s"] / results[best]["warm_question_median_s"]
    return {
        "by_dtype": results,
        "default": default,
        "faster": best,
        "default_vs_faster": round(ratio, 3),
    }


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and write ``OUT/first_contact.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/first_contact"))
    parser.add_argument("--questions", type=int, default=10, help="warm questions per dtype")
    parser.add_argument("--repeats", type=int, default=3, help="cold asks after the first")
    parser.add_argument("--later", type=int, default=5, help="asks on the background server")
    parser.add_argument("--skip", choices=["cold", "dtype"], help="run only the other one")
    parser.add_argument("--child", choices=DTYPES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(_child(args.child, args.questions)), flush=True)
        return 0
    path = args.out / "first_contact.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    command = shlex.join(["python", "-m", MODULE, *(argv or sys.argv[1:])])
    result.update({"commit": source_commit(), "machine": machine(), "command": command})
    args.out.mkdir(parents=True, exist_ok=True)
    # Each part records its commit too: a part run again alone keeps the other's.
    if args.skip != "cold":
        result["cold_start"] = {**cold_start(args.repeats, args.later), "commit": result["commit"]}
        path.write_text(json.dumps(result, indent=1) + "\n")  # kept if the dtype part fails
    if args.skip != "dtype":
        result["dtype"] = {**dtype_speed(args.questions), "commit": result["commit"]}
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
