"""Where one question's time goes on this CPU, and what each engine setting changes.

    .venv/bin/python tools/bench_latency.py --out benchmarks/latency

Each engine setting runs in a fresh process (``--child``), so its start-up is measured as a user
meets it: ``import`` + engine start (``start_s``), then the first request (``first_call_s``).
In that process, on the same engine:

- raw decode: 64 greedy tokens after a short prompt, one stream (median of 3) and 4 and 8
  streams at once (the fan-out's branches), in generated tokens per second;
- questions: ``parallel-search`` on the default embedded policy and hybrid index, one question
  at a time after one warm-up question, over the first ``--questions`` questions of the bundled
  HotpotQA sample (the harness's own ``evaluate``: EM, F1, counters). Per question, the time the
  engine spent on the model's calls (each request from submit to result) and in the index's
  ``batch_search``; the rest of the wall time is graph, parsing and prompt rendering.

Then a cold ``ask`` per setting: ``langgraph-parallel ask --json`` in a new process, timed from
outside (imports, index load, engine start and one question), twice, as a user at a terminal.
Settings (over the CPU engine defaults): ``eager`` (no compilation, no speculation: the engine
before this benchmark), ``eager+ngram`` (the default: prompt-lookup speculative decoding) and
``compiled+ngram`` (vLLM's torch.compile of the model too; its cache under ``~/.cache/vllm``
makes only the first start pay the compilation). Run it on an idle machine: the figures are
wall times.

``--served``: the warm path for people instead. ``langgraph-parallel serve`` is started (default
engine), then ``langgraph-parallel ask --server URL --json`` runs in a new process for each of
the same questions, timed from outside (imports, index load, the question; no engine start). The
server is warmed up first, as ``serve`` warms itself up (``warm_up``); the first ask and a
second one of the same question are reported apart. The result goes under ``served`` in the
existing ``latency.json``, with its own commit.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SETTINGS: dict[str, dict[str, Any]] = {
    # Before: eager, every token its own engine step.
    "eager": {"enforce_eager": True, "speculative_config": None},
    # The CPU default: eager with prompt-lookup speculative decoding.
    "eager+ngram": {"enforce_eager": True},
    "compiled+ngram": {"enforce_eager": False},
    # KV-cache block size (the default is 32): bigger blocks, fewer block-table entries, but the
    # prefix cache reuses only whole blocks.
    "eager+ngram+block64": {"enforce_eager": True, "block_size": 64},
    "eager+ngram+block128": {"enforce_eager": True, "block_size": 128},
}
ASK_QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
PROMPTS = [f"Question {i}: name a famous scientist and say why.\nAnswer:" for i in range(8)]


def generate(worker: Any, prompts: list[str], params: Any) -> None:
    """Run ``prompts`` at once on the engine worker and wait for all of them."""
    futures = [worker.submit(list(worker.tokenizer.encode(p)), copy.copy(params)) for p in prompts]
    for future in futures:
        future.result()


def decode_rates(worker: Any) -> dict[str, float]:
    """Generated tokens per second: one stream (median of 3), and 4 and 8 streams at once."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=64, temperature=0, ignore_eos=True)
    single = []
    for prompt in PROMPTS[:3]:
        start = time.perf_counter()
        generate(worker, [prompt], params)
        single.append(time.perf_counter() - start)
    rates = {"single_tok_s": round(64 / statistics.median(single), 1)}
    for n in (4, 8):
        start = time.perf_counter()
        generate(worker, PROMPTS[:n], params)
        rates[f"batch{n}_tok_s"] = round(64 * n / (time.perf_counter() - start), 1)
    return rates


def child(setting: str, questions: int) -> dict[str, Any]:
    """Start the engine with ``setting``, measure decode and ``questions`` warm questions."""
    t0 = time.perf_counter()
    from vllm import SamplingParams

    from langgraph_parallel.apps.registry import build_graph, load_model
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.eval.harness import evaluate
    from langgraph_parallel.models.worker import EngineWorker
    from langgraph_parallel.paths import repo_data_dir
    from langgraph_parallel.retrieval.indexes import corpus_index

    model = load_model("smollm2-parallel", engine_kwargs=SETTINGS[setting])
    index = corpus_index(None, kind="hybrid")
    graph = build_graph("parallel-search", model, index)
    worker = model.worker  # type: ignore[attr-defined]
    start_s = time.perf_counter() - t0

    # Time each engine request (submit -> result) and each index call, per question.
    spans: list[tuple[str, float]] = []
    submit = EngineWorker.submit

    def timed_submit(self: Any, prompt_token_ids: list[int], params: Any) -> Any:
        begin = time.perf_counter()
        future = submit(self, prompt_token_ids, params)
        future.add_done_callback(lambda _: spans.append(("engine", time.perf_counter() - begin)))
        return future

    EngineWorker.submit = timed_submit  # type: ignore[method-assign]
    batch_search = type(index).batch_search

    def timed_search(self: Any, queries: Any, k: int = 3) -> Any:
        begin = time.perf_counter()
        try:
            return batch_search(self, queries, k)
        finally:
            spans.append(("search", time.perf_counter() - begin))

    type(index).batch_search = timed_search  # type: ignore[method-assign]

    begin = time.perf_counter()
    generate(worker, ["warm up"], SamplingParams(max_tokens=16))
    first_call_s = time.perf_counter() - begin
    rates = decode_rates(worker)
    rows = []
    sample = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    for i, question in enumerate(sample[: questions + 1]):
        spans.clear()
        row = evaluate(graph, "parallel-search", question)
        row["engine_s"] = round(sum(s for kind, s in spans if kind == "engine"), 3)
        row["search_s"] = round(sum(s for kind, s in spans if kind == "search"), 4)
        row["warm_up"] = i == 0
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("wall_s", "engine_s", "search_s", "em")}))
    return {
        "setting": setting,
        "engine_kwargs": SETTINGS[setting],
        "start_s": round(start_s, 1),
        "first_call_s": round(first_call_s, 2),
        **rates,
        "rows": rows,
    }


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Median warm wall time, EM and where the time went, over the non-warm-up questions."""
    rows = [r for r in result["rows"] if not r["warm_up"]]
    wall = sum(r["wall_s"] for r in rows)
    return {
        "questions": len(rows),
        "first_question_s": next(r["wall_s"] for r in result["rows"] if r["warm_up"]),
        "median_wall_s": round(statistics.median(r["wall_s"] for r in rows), 2),
        "mean_wall_s": round(wall / len(rows), 2),
        "em": round(statistics.mean(r["em"] for r in rows), 3),
        "f1": round(statistics.mean(r["f1"] for r in rows), 3),
        "llm_calls": round(statistics.mean(r["llm_calls"] for r in rows), 2),
        "completion_tokens": round(statistics.mean(r["completion_tokens"] for r in rows), 1),
        "uncached_prompt_tokens": round(
            statistics.mean(r["prompt_tokens"] - r["cached_prompt_tokens"] for r in rows), 1
        ),
        "engine_share": round(sum(r["engine_s"] for r in rows) / wall, 3),
        "search_share": round(sum(r["search_s"] for r in rows) / wall, 4),
        "outside_engine_share": round(1 - sum(r["engine_s"] for r in rows) / wall, 3),
    }


def cold_ask(setting: str) -> float:
    """Seconds for ``ask --json`` in a new process with ``setting``'s engine."""
    command = [sys.executable, "-m", "langgraph_parallel.apps.cli", "ask", "--json"]
    env = {**os.environ, "LANGGRAPH_PARALLEL_ENGINE": json.dumps(SETTINGS[setting])}
    start = time.perf_counter()
    subprocess.run([*command, ASK_QUESTION], check=True, env=env, capture_output=True, cwd=REPO)
    return round(time.perf_counter() - start, 1)


def served(questions: int, log: Path) -> dict[str, Any]:
    """Cold ``ask --server`` per question against one running ``serve``, timed from outside."""
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.metrics import exact_match, f1_score
    from langgraph_parallel.models.server import start_server, stop_server
    from langgraph_parallel.paths import repo_data_dir

    with socket.socket() as sock:  # a free port
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    url = f"http://127.0.0.1:{port}"
    begin = time.perf_counter()
    proc = start_server("smollm2-parallel", port=port, log_path=str(log), warm=True)  # as serve
    start_s = time.perf_counter() - begin

    def ask(question: str) -> tuple[float, dict[str, Any]]:
        command = [sys.executable, "-m", "langgraph_parallel.apps.cli", "ask", "--json"]
        begin = time.perf_counter()
        done = subprocess.run(
            [*command, "--server", url, question], check=True, capture_output=True, text=True,
            cwd=REPO,
        )  # fmt: skip
        return time.perf_counter() - begin, json.loads(done.stdout.strip().splitlines()[-1])

    try:
        first_s, _ = ask(ASK_QUESTION)
        again_s, _ = ask(ASK_QUESTION)
        rows = []
        sample = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
        for question in sample[1 : questions + 1]:  # the in-process runs' questions after warm-up
            outside, run = ask(question.question)
            row = {
                "id": question.id,
                "cold_ask_s": round(outside, 2),
                "wall_s": run["wall_s"],
                "em": exact_match(run["answer"], question.answers),
                "f1": round(f1_score(run["answer"], question.answers), 3),
                "llm_calls": run["llm_calls"],
                "completion_tokens": run["completion_tokens"],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop_server(proc)
    asks = [r["cold_ask_s"] for r in rows]
    return {
        "server_start_s": round(start_s, 1),
        "first_ask_s": round(first_s, 2),
        "second_ask_s": round(again_s, 2),
        "summary": {
            "questions": len(rows),
            "median_cold_ask_s": round(statistics.median(asks), 2),
            "p90_cold_ask_s": round(sorted(asks)[int(0.9 * (len(asks) - 1))], 2),
            "median_question_s": round(statistics.median(r["wall_s"] for r in rows), 2),
            "within_5s": sum(a <= 5.0 for a in asks),
            "em": round(statistics.mean(r["em"] for r in rows), 3),
            "f1": round(statistics.mean(r["f1"] for r in rows), 3),
        },
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="benchmarks/latency")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--served", action="store_true", help="ask on a running serve instead")
    parser.add_argument("--child", choices=list(SETTINGS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args.questions)), flush=True)
        return 0
    from langgraph_parallel.apps.bench_cli import source_commit

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.served:
        path = out / "latency.json"
        results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        results["served"] = {
            "commit": source_commit(),
            "command": " ".join(["tools/bench_latency.py", *sys.argv[1:]]),
            **served(args.questions, out / "serve.log"),
        }
        print("served", results["served"]["summary"], flush=True)
        path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        return 0

    results: dict[str, Any] = {
        "commit": source_commit(),
        "command": " ".join(["tools/bench_latency.py", *sys.argv[1:]]),
        "settings": {},
    }
    for name in args.settings.split(","):
        command = [sys.executable, __file__, "--child", name, "--questions", str(args.questions)]
        done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        result = json.loads(line.removeprefix("RESULT "))
        result["summary"] = summarise(result)
        result["cold_ask_s"] = [cold_ask(name), cold_ask(name)]
        results["settings"][name] = result
        print(name, result["summary"], result["cold_ask_s"], flush=True)
    path = out / "latency.json"
    if path.exists():  # keep the --served part of an earlier run
        earlier = json.loads(path.read_text(encoding="utf-8"))
        if "served" in earlier:
            results["served"] = earlier["served"]
    (out / "latency.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out / 'latency.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
