"""The engine's thread worker against vLLM's own async engine (``AsyncLLM``), in one run.

``langgraph-parallel bench run engine-async`` writes ``OUT/engines.json`` and ``OUT/table.md``.

Issue 16 asked whether vLLM's ``AsyncLLM`` should replace the engine worker of
``models/engine.py`` as it was until then: one thread stepping the offline ``vllm.LLM``
(``engine.step()``) with the engine core in the same process. That worker is kept here as
:class:`ThreadWorker`, so the comparison can be run again; the package's
:class:`~langgraph_parallel.models.worker.EngineWorker` is now the ``AsyncLLM`` one.

Both serve the same workload in this process: the ``parallel-search`` graph on
``smollm2-parallel`` (the in-process chat model: same prompts, same sampling) with the hybrid
index, the first ``--limit`` questions of the bundled HotpotQA sample with 1, 4 and 16 runs
at once (threads, as a server's), the engine's prefix cache emptied before each level, the same
engine settings (this machine's defaults, n-gram speculation included). At each level both
engines run one after the other, the first of them alternating between levels, so neither always
meets a warmer machine.

``AsyncLLM`` has no in-process mode: its engine core runs in a second process, started with
``spawn`` on CPU (a user script starting one needs an ``if __name__ == "__main__"`` guard; the
``langgraph-parallel`` command has one).

Reported per engine: start time (engine start and a first call); per level: throughput (questions
per second), p50/p95 question latency, answers, and how many answers equal the other engine's.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from lab.base import Experiment, Run
from langgraph_parallel.models.engine import engine_defaults
from langgraph_parallel.models.vllm_chat import ChatVLLM
from langgraph_parallel.models.worker import EngineWorker
from langgraph_parallel.paths import repo_data_dir, source_commit

__all__ = ["EXPERIMENT", "ChatThreadWorker", "ThreadWorker"]

MODEL = "smollm2-parallel"


@dataclass
class _Job:
    prompt_token_ids: list[int]
    params: Any
    future: Future[Any] = field(default_factory=Future)


class ThreadWorker:
    """The engine worker before issue 16: a thread feeding and stepping an in-process ``vllm.LLM``.

    Args:
        llm: The engine (built with ``VLLM_ENABLE_V1_MULTIPROCESSING=0``: core in this process).
    """

    dead = False  # the package's worker contract; this one never replaces its engine

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self._queue: queue.Queue[_Job | Callable[[], None]] = queue.Queue()
        self._pending: dict[str, _Job] = {}
        self._ids = itertools.count()
        threading.Thread(target=self._loop, daemon=True).start()

    def submit(self, prompt_token_ids: list[int], params: Any) -> Future[Any]:
        """Queue one request; the future resolves to its final ``vllm.RequestOutput``."""
        job = _Job(prompt_token_ids, params)
        self._queue.put(job)
        return job.future

    def reset_prefix_cache(self) -> bool:
        """Empty the prefix cache, on the worker thread (the only one touching the engine)."""
        done: Future[bool] = Future()
        self._queue.put(lambda: done.set_result(bool(self.llm.reset_prefix_cache())))
        return done.result()

    def _loop(self) -> None:
        from vllm.sampling_params import RequestOutputKind

        engine = self.llm.llm_engine
        while True:
            busy = engine.has_unfinished_requests()
            jobs: list[_Job | Callable[[], None]] = []
            try:
                jobs.append(self._queue.get(block=not busy))
                while True:
                    jobs.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            for job in jobs:
                if not isinstance(job, _Job):
                    job()
                    continue
                request_id = f"thread-{next(self._ids)}"
                job.params.output_kind = RequestOutputKind.FINAL_ONLY
                try:
                    engine.add_request(
                        request_id, {"prompt_token_ids": job.prompt_token_ids}, job.params
                    )
                except Exception as exc:
                    job.future.set_exception(exc)
                    continue
                self._pending[request_id] = job
            if engine.has_unfinished_requests():
                for output in engine.step():
                    if output.finished and output.request_id in self._pending:
                        self._pending.pop(output.request_id).future.set_result(output)


class ChatThreadWorker(ChatVLLM):
    """``ChatVLLM`` on a :class:`ThreadWorker` of its own (the engine before issue 16)."""

    def _start_engine(self, path: str) -> EngineWorker:
        from vllm import LLM

        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the engine core in this process
        kwargs = {**engine_defaults(), **self.engine_kwargs, "enable_prefix_caching": True}
        return cast(EngineWorker, ThreadWorker(LLM(model=path, seed=0, **kwargs)))


def run_level(model: ChatVLLM, graph: Any, questions: list[Any], workers: int) -> dict[str, Any]:
    """Every question once with ``workers`` concurrent runs; the level's figures and rows."""
    from langgraph_parallel.eval.harness import evaluate

    model.reset_prefix_cache()
    begin = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        rows = list(pool.map(lambda q: evaluate(graph, "parallel-search", q), questions))
    wall = time.perf_counter() - begin
    latencies = sorted(r["wall_s"] for r in rows)
    return {
        "concurrency": workers,
        "questions": len(rows),
        "wall_s": round(wall, 1),
        "throughput_q_per_s": round(len(rows) / wall, 3),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
        "answered": sum(r["answer"] is not None for r in rows),
        "errors": sum(r["error"] is not None for r in rows),
        "em": round(statistics.mean(r["em"] for r in rows), 3),
        "completion_tokens": round(statistics.mean(r["completion_tokens"] for r in rows), 1),
        "rows": [{k: r[k] for k in ("id", "answer", "wall_s", "llm_calls")} for r in rows],
    }


def same_answers(a: dict[str, Any], b: dict[str, Any]) -> int:
    """How many questions two levels answered identically."""
    answers = {r["id"]: r["answer"] for r in a["rows"]}
    return sum(answers.get(r["id"]) == r["answer"] for r in b["rows"])


def table(result: dict[str, Any]) -> str:
    """Return the Markdown table of a result: one row per engine and level."""
    lines = [
        "| engine | runs at once | questions/s | vs 1 run | p50 s | p95 s | answered | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, levels in result["engines"].items():
        one = levels[0]["throughput_q_per_s"]
        for lv in levels:
            lines.append(
                f"| {name} | {lv['concurrency']} | {lv['throughput_q_per_s']:.3f} | "
                f"{lv['throughput_q_per_s'] / one:.2f}x | {lv['p50_s']:.1f} | {lv['p95_s']:.1f} | "
                f"{lv['answered']}/{lv['questions']} | {lv['errors']} |"
            )
    return "\n".join(lines) + "\n"


def _run(run: Run) -> None:
    from langgraph_parallel.apps.registry import build_graph
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.retrieval.indexes import corpus_index

    questions = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    questions = questions[: run.limit]
    index = corpus_index(None, kind="hybrid")
    run.uses(MODEL)
    models: dict[str, ChatVLLM] = {
        "thread": ChatThreadWorker(model=MODEL),
        "asyncllm": ChatVLLM(model=MODEL),
    }
    result: dict[str, Any] = {
        "commit": source_commit(),
        "command": run.command,
        "model": MODEL,
        "engine_settings": engine_defaults(),
        "start_s": {},
        "engines": {name: [] for name in models},
    }
    graphs = {}
    for name, model in models.items():
        begin = time.perf_counter()
        model.invoke("warm up", max_tokens=4)
        result["start_s"][name] = round(time.perf_counter() - begin, 1)
        graphs[name] = build_graph("parallel-search", model, index)
    order = list(models)
    for i, workers in enumerate(int(x) for x in run.settings["levels"].split(",")):
        for name in order if i % 2 == 0 else order[::-1]:
            level = run_level(models[name], graphs[name], questions, workers)
            result["engines"][name].append(level)
            print(name, json.dumps({k: v for k, v in level.items() if k != "rows"}), flush=True)
        thread_level, async_level = (result["engines"][n][-1] for n in order)
        async_level["same_answers_as_thread"] = same_answers(thread_level, async_level)
    Experiment.write_tables(run.out, "engines", result, table(result), page_name="table.md")


EXPERIMENT = Experiment(
    name="engine-async",
    about="the engine's old thread worker vs vLLM's AsyncLLM, parallel-search at 1/4/16 at once",
    out="benchmarks/engine/async",
    run=_run,
    limit=64,
    settings={"levels": "1,4,16"},
)
