"""Where one question's time goes on this CPU, and what each engine setting changes.

``langgraph-parallel bench run latency``: each engine setting runs in a fresh process (this
module run with ``--child``), so its start-up is measured as a user
meets it: ``import`` + engine start (``start_s``), then the first request (``first_call_s``).
In that process, on the same engine:

- raw decode: 64 greedy tokens after a short prompt, one stream (median of 3) and 4 and 8
  streams at once (the fan-out's branches), in generated tokens per second;
- questions: ``parallel-search`` on the default embedded policy and hybrid index, one question
  at a time after one warm-up question, over the first ``--limit`` questions of the bundled
  HotpotQA sample (the harness's own ``evaluate``: EM, F1, counters). Per question, the time the
  engine spent on the model's calls (each request from submit to result) and in the index's
  ``batch_search``; the rest of the wall time is graph, parsing and prompt rendering.

Then a cold ``ask`` per setting: ``langgraph-parallel ask --json`` in a new process, timed from
outside (imports, index load, engine start and one question), twice, as a user at a terminal.
Settings (over the CPU engine defaults): ``eager`` (no compilation, no speculation: the engine
before this benchmark), ``eager+ngram`` (the default: prompt-lookup speculative decoding) and
``compiled+ngram`` (vLLM's torch.compile of the model too; its cache under ``~/.cache/vllm``
makes only the first start pay the compilation); setting ``settings`` picks some. On the
settings named by ``replay`` (the default one), the questions' engine calls are then replayed
per variant (:mod:`.latency_calls`: prefill and decode of one call, with and without the
grammar and the logprob alternatives, and the serving probe's text). Run it on an idle machine:
the figures are wall times.

``bench run latency-served`` (:mod:`.latency_served`) measures the warm path for people: ``ask``
on a running ``serve``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from lab.base import Experiment, Run
from lab.paths import checkout_dir
from langgraph_parallel.paths import source_commit

__all__ = ["ASK_QUESTION", "EXPERIMENT", "SETTINGS", "cold_ask", "main"]

MODULE = "lab.experiments.latency.latency"

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
    """Return generated tokens per second: one stream (median of 3), 4 and 8 streams at once."""
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


def child(setting: str, questions: int, replay: bool = False) -> dict[str, Any]:
    """Start the engine with ``setting``, measure decode and ``questions`` warm questions.

    With ``replay``, the same questions' engine calls are replayed too (:mod:`.latency_calls`).
    """
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
    result = {
        "setting": setting,
        "engine_kwargs": SETTINGS[setting],
        "start_s": round(start_s, 1),
        "first_call_s": round(first_call_s, 2),
        **rates,
        "rows": rows,
    }
    if replay:
        from lab.experiments.latency.latency_calls import replay_calls

        result["calls"] = replay_calls(worker, graph, sample[1 : questions + 1])
    return result


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
    subprocess.run(
        [*command, ASK_QUESTION], check=True, env=env, capture_output=True, cwd=checkout_dir()
    )
    return round(time.perf_counter() - start, 1)


def _run(run: Run) -> None:
    questions = run.limit or 20
    run.uses("smollm2-parallel")
    results: dict[str, Any] = {"commit": source_commit(), "command": run.command, "settings": {}}
    for name in run.settings["settings"].split(","):
        command = [sys.executable, "-m", MODULE, "--child", name, "--questions", str(questions)]
        if name in run.settings["replay"].split(","):
            command.append("--replay")
        done = subprocess.run(
            command, check=True, capture_output=True, text=True, cwd=checkout_dir()
        )
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        result = json.loads(line.removeprefix("RESULT "))
        result["summary"] = summarise(result)
        result["cold_ask_s"] = [cold_ask(name), cold_ask(name)]
        results["settings"][name] = result
        print(name, result["summary"], result["cold_ask_s"], flush=True)
    path = run.out / "latency.json"
    if path.exists():  # keep the served part of an earlier run
        earlier = json.loads(path.read_text(encoding="utf-8"))
        if "served" in earlier:
            results["served"] = earlier["served"]
    Experiment.write_tables(run.out, "latency", results)


EXPERIMENT = Experiment(
    name="latency",
    about="one question's time by phase on this CPU, per engine setting (fresh process each)",
    out="benchmarks/latency",
    run=_run,
    limit=20,
    limit_means="warm questions per setting",
    settings={"settings": ",".join(SETTINGS), "replay": "eager+ngram"},
)


def main(argv: list[str] | None = None) -> int:
    """Measure one engine setting in this process (``--child``, what :func:`_run` starts)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=list(SETTINGS), required=True)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--replay", action="store_true", help="replay the questions' calls too")
    args = parser.parse_args(argv)
    print("RESULT " + json.dumps(child(args.child, args.questions, args.replay)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
