"""The parallel policy against its sequential twin, in wall-clock time (``latency-policies``).

Issue 80: the shipped parallel policy (``parallel-search`` on ``smollm2-parallel``) makes fewer
model calls than its sequential twin (``sequential`` on ``smollm2-sequential``, the registry's
pair), and the question is whether it also finishes sooner. Both run in this process, each on
its own engine (this machine's defaults, plus vLLM's stats, which time each request), over the
first ``--limit`` HotpotQA comparison questions of the bundled dev sample (never trained on),
in *cells*: each searcher (``closed``: the bundled hybrid index; ``web``: the same index
answering after a web search's seeded 0.5-1.5 s a query, :class:`~.timing.WebLatencySearcher`)
at each concurrency (``1``: one question at a time; ``16``: sixteen at once).

How load on the machine is kept off the comparison: one question at a time, each question runs
on both policies back to back, the first of them alternating from question to question; at
sixteen at once, each policy runs all the questions as one pass, ``rounds`` passes each, the
first policy alternating between rounds. Each cell starts with both engines' prefix caches
emptied (the next cell asks the same questions), and each graph answered one warm-up question
first (the grammar compiled, the encoder loaded). Every row records the load average at its
start, and ``load.jsonl`` each cell's before and after.

Per question (one row of the harness's ``evaluate`` each, under ``OUT/CELL/``): wall time, LLM
calls, tokens, EM and F1, and where the time went (:class:`~.timing.QuestionClock`: prefill,
decode, queue and the engine's frontend, search, and the graph's rest), each engine request's
own times, and at one question at a time the engine's steps and the n-gram drafter's
proposals and acceptances for that question (:class:`~.timing.EngineSteps`); at sixteen at once
those are per pass (``passes.jsonl``). The tables (:mod:`.policies_analysis`) pair the two
policies question by question. Resumable: a row already in a cell's folder is not run again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE, GRAPHS, HARNESS
from lab.experiments.latency.timing import (
    EngineSteps,
    QuestionClock,
    TimedSearcher,
    WebLatencySearcher,
    timing,
    watch_engine,
)
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.results import RESULTS_FILE, append_row, load_results

__all__ = ["EXPERIMENT", "PAIR", "Policy", "cell_name", "cells", "run_cell"]

PAIR = ("parallel-search", "sequential")
"""The two graphs compared, parallel first; each runs its registry default model."""
SEARCHERS = ("closed", "web")
GRAPH_OPTIONS: dict[str, Any] = {
    "max_turns": 4,
    "top_k": 3,
    "passage_sentences": "auto",
    "final_answer_step": True,
}
"""``bench``'s defaults, so a cell's rows are what ``bench`` would make."""


def cell_name(searcher: str, concurrency: int, round_: int = 0) -> str:
    """Return a cell's folder name: ``closed-c1``, ``web-c16-r1``."""
    return f"{searcher}-c{concurrency}" + (f"-r{round_}" if concurrency > 1 else "")


def cells(settings: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Return the ``(searcher, concurrency, round)`` cells of ``settings``, in running order.

    Raises:
        UserError: A searcher other than ``closed`` or ``web``, or a concurrency below 1.
    """
    searchers = [s.strip() for s in str(settings["searchers"]).split(",") if s.strip()]
    if unknown := sorted(set(searchers) - set(SEARCHERS)):
        raise UserError(f"--set searchers: {', '.join(unknown)} is not one of {SEARCHERS}.")
    levels = [int(c) for c in str(settings["concurrency"]).split(",") if c.strip()]
    if any(c < 1 for c in levels):
        raise UserError("--set concurrency: every level is at least 1.")
    rounds = max(1, int(settings["rounds"]))
    return [(s, c, r) for c in levels for s in searchers for r in (range(rounds) if c > 1 else [0])]


class Policy:
    """One of the pair: its graph name, model and engine counters; builds a graph per question.

    A graph is built for each question over that question's own :class:`~.timing.TimedSearcher`
    (the search pool's threads do not carry the question's context): a compile of a few
    milliseconds, outside the timed run.

    Args:
        graph: The registry's graph name.
        model: Its chat model.
        steps: The engine's step counter (``None``: a fake model, no engine).
        build: Builds a graph (the registry's ``build_graph``; tests pass their own).
    """

    def __init__(
        self,
        graph: str,
        model: Any,
        steps: EngineSteps | None,
        build: Callable[..., Any],
    ) -> None:
        self.graph, self.model, self.steps, self.build = graph, model, steps, build

    def answer(self, question: Any, searcher: Any, *, per_question_steps: bool) -> dict[str, Any]:
        """Run one question on a graph of its own; return its row with its times."""
        from langgraph_parallel.eval.harness import evaluate

        # One question at a time, the requests' tokens are kept: the drafter replay reads them.
        clock = QuestionClock(tokens=per_question_steps)
        graph = self.build(self.graph, self.model, TimedSearcher(searcher, clock), **GRAPH_OPTIONS)
        load = os.getloadavg()[0]
        before = self.steps.snapshot() if self.steps and per_question_steps else None
        with timing(clock):
            row = evaluate(graph, self.graph, question)
        row.update(clock.split(row["wall_s"]))
        if before is not None and self.steps is not None:
            row["engine_steps"] = EngineSteps.delta(before, self.steps.snapshot())
        row["requests"] = clock.requests
        row["load1"] = round(load, 2)
        return row

    def empty_cache(self) -> None:
        """Empty its engine's prefix cache (a fake model without one has nothing to empty)."""
        reset = getattr(self.model, "reset_prefix_cache", None)
        if reset is not None:
            reset()


def _load_line(out: Path, record: dict[str, Any]) -> None:
    with (out / "load.jsonl").open("a", encoding="utf-8") as fh:
        append_row(fh, {"graph": "load", "id": str(time.time()), **record})


def run_cell(
    folder: Path,
    policies: Sequence[Policy],
    questions: Sequence[Any],
    searcher: Any,
    *,
    concurrency: int,
    round_: int = 0,
) -> list[dict[str, Any]]:
    """Run the questions left in one cell's folder on both policies; return the cell's rows.

    One at a time, question ``i`` runs on both, the first policy alternating with ``i``; at
    once, each policy runs them as one pass of ``concurrency`` in flight, the first policy
    alternating with ``round_``. A pass's engine counters go to ``passes.jsonl``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RESULTS_FILE
    rows = load_results(path)
    done = {(r["graph"], r["id"]) for r in rows}
    for policy in policies:
        policy.empty_cache()
    with path.open("a", encoding="utf-8") as fh:
        if concurrency == 1:
            for i, question in enumerate(questions):
                order = policies if i % 2 == 0 else list(reversed(policies))
                for turn, policy in enumerate(order):
                    if (policy.graph, question.id) in done:
                        continue
                    row = policy.answer(question, searcher, per_question_steps=True)
                    row["ran"] = turn
                    append_row(fh, row)
                    rows.append(row)
            return rows
        order = policies if round_ % 2 == 0 else list(reversed(policies))
        for turn, policy in enumerate(order):
            todo = [q for q in questions if (policy.graph, q.id) not in done]
            if not todo:
                continue
            policy.empty_cache()
            before = policy.steps.snapshot() if policy.steps else None
            load, begin = os.getloadavg()[0], time.perf_counter()

            def one(question: Any, policy: Policy = policy, turn: int = turn) -> dict[str, Any]:
                row = policy.answer(question, searcher, per_question_steps=False)
                row["ran"] = turn
                return row

            with ThreadPoolExecutor(concurrency, thread_name_prefix="latency") as pool:
                for row in pool.map(one, todo):
                    append_row(fh, row)
                    rows.append(row)
            record = {
                "graph": policy.graph,
                "id": f"pass-{round_}",
                "questions": len(todo),
                "wall_s": round(time.perf_counter() - begin, 3),
                "load1_before": round(load, 2),
                "load1_after": round(os.getloadavg()[0], 2),
            }
            if before is not None and policy.steps is not None:
                record["engine_steps"] = EngineSteps.delta(before, policy.steps.snapshot())
            with (folder / "passes.jsonl").open("a", encoding="utf-8") as passes:
                append_row(passes, record)
    return rows


def _engine_kwargs(text: str) -> dict[str, Any]:
    """Return the ``engine`` setting (JSON over the defaults) with vLLM's stats on (they time)."""
    try:
        extra = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise UserError(f"--set engine={text!r}: not JSON ({exc}).") from None
    if not isinstance(extra, dict):
        raise UserError(f"--set engine={text!r}: a JSON object of engine settings.")
    return {**extra, "disable_log_stats": False}


def _policies(run: Run, engine: dict[str, Any]) -> list[Policy]:
    from langgraph_parallel.apps.bench import _check_settings
    from langgraph_parallel.apps.registry import build_graph, default_model, load_model
    from langgraph_parallel.eval.harness import WARMUP_QUESTION
    from langgraph_parallel.paths import repo_data_dir

    models = {g: default_model(g) for g in PAIR}
    run.uses(*models.values())
    settings = {
        "dataset": str((repo_data_dir() / run.settings["dataset"]).resolve()),
        "types": [run.settings["types"]],
        "models": models,
        "web": [run.settings["web_low"], run.settings["web_high"], run.settings["web_seed"]],
        "engine": engine,
        "graph_options": GRAPH_OPTIONS,
    }
    # run.json as bench writes it: refuses rows of other settings, names commits, adapters
    # and machines (with the engine's dtype).
    _check_settings(run.out, settings)
    policies = []
    for graph, name in models.items():
        model = load_model(name, engine_kwargs=engine, check=True)
        worker = model.worker  # type: ignore[attr-defined]
        watch_engine(worker)
        policy = Policy(graph, model, EngineSteps.attach(worker.engine), build_graph)
        policy.build(graph, model, _index(), **GRAPH_OPTIONS).invoke({"question": WARMUP_QUESTION})
        policies.append(policy)
    return policies


_INDEX: list[Any] = []


def _index() -> Any:
    """Return the bundled hybrid index, loaded once."""
    if not _INDEX:
        from langgraph_parallel.retrieval.indexes import corpus_index

        _INDEX.append(corpus_index(None, kind="hybrid"))
    return _INDEX[0]


def _run(run: Run) -> None:
    from lab.experiments.latency.policies_analysis import write_tables
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.paths import repo_data_dir

    plan = cells(run.settings)
    dataset = repo_data_dir() / run.settings["dataset"]
    questions = load_questions(dataset, types=[run.settings["types"]], limit=run.limit)
    policies = _policies(run, _engine_kwargs(run.settings["engine"]))
    web = WebLatencySearcher(
        _index(),
        low=run.settings["web_low"],
        high=run.settings["web_high"],
        seed=run.settings["web_seed"],
    )
    for searcher, concurrency, round_ in plan:
        name = cell_name(searcher, concurrency, round_)
        folder = run.out / name
        run.folders.append(folder)
        before = os.getloadavg()
        begin = time.perf_counter()
        rows = run_cell(
            folder,
            policies,
            questions,
            web if searcher == "web" else _index(),
            concurrency=concurrency,
            round_=round_,
        )
        _load_line(
            run.out,
            {
                "cell": name,
                "rows": len(rows),
                "wall_s": round(time.perf_counter() - begin, 1),
                "load_before": [round(x, 2) for x in before],
                "load_after": [round(x, 2) for x in os.getloadavg()],
            },
        )
        print(f"{name}: {len(rows)} rows", flush=True)
    write_tables(run.out, command=run.command)


EXPERIMENT = Experiment(
    name="latency-policies",
    about=(
        "parallel policy vs its sequential twin in wall-clock time, paired per question: "
        "closed corpus and web-search latency, 1 and 16 at once, time by phase"
    ),
    out="benchmarks/latency/policies",
    run=_run,
    limit=20,
    limit_means="HotpotQA comparison questions",
    settings={
        "dataset": "hotpotqa_dev_sample300.jsonl.gz",
        "types": "comparison",
        "searchers": ",".join(SEARCHERS),
        "concurrency": "1,16",
        "rounds": 2,
        "web_low": 0.5,
        "web_high": 1.5,
        "web_seed": 0,
        "engine": "",
    },
    measures=(*GRAPHS, *ENGINE, *HARNESS, "lab/experiments/latency/timing.py"),
)
