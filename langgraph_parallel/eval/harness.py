"""Run benchmark questions through named graphs, resumably, and summarise the results.

Every finished question is one JSON line appended to ``OUT/results.jsonl`` (flushed and fsynced
before the next is written), so a run killed at any moment loses at most the questions in
flight. Rerunning with the same ``OUT`` skips the ``(graph, id)`` pairs already in the file (or
in its compressed ``results.jsonl.gz``, see :mod:`langgraph_parallel.eval.results`); a last line
cut short by the kill is dropped from the file and its question runs again.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from langgraph_parallel.agent.run import run_question
from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.errors import reported_error
from langgraph_parallel.eval.datasets import Question
from langgraph_parallel.eval.muse import muse_fields
from langgraph_parallel.eval.recall import gold_recall, run_searches
from langgraph_parallel.eval.results import RESULTS_FILE, SUMMARY_FILE, append_row, load_results
from langgraph_parallel.eval.summary import summarize, write_summary
from langgraph_parallel.metrics import cover_exact_match, exact_match, f1_score

__all__ = [
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "WARMUP_QUESTION",
    "evaluate",
    "load_results",
    "run_graphs",
]

WARMUP_QUESTION = "What is the capital city of France?"
"""Asked once per graph before a timed run; not a benchmark question, so no real prompt is
cached ahead of its timed run."""


def evaluate(graph: Any, name: str, question: Question) -> dict[str, Any]:
    """Run one question through ``graph`` and return its result row.

    An exception from the graph is recorded in ``error`` (answer ``None``, zero counters) so one
    question cannot end a benchmark; :class:`UserError` (a set-up problem that every question
    would hit) propagates.

    Args:
        graph: Anything with ``invoke({"question": str})`` returning ``answer``, ``stop_reason``
            and ``counters`` (every graph of :mod:`langgraph_parallel.apps.registry`).
        name: The graph's name in the results.
        question: The benchmark question.

    Returns:
        The row: ``graph``, ``id``, ``dataset``, ``type``, ``class``, ``question``,
        ``gold_answers``, ``answer``, ``stop_reason``, ``em``, ``f1``, ``cover_em``, the
        gold-page recall fields of :func:`~langgraph_parallel.eval.recall.gold_recall`, the six
        counters, for ParallelMuse graphs the joins and token accounting of
        :func:`~langgraph_parallel.eval.muse.muse_fields`, ``wall_s`` and ``error`` (``None``
        unless the graph raised).
    """
    start = time.perf_counter()
    error = None
    try:
        run = run_question(graph, question.question)
        answer, stop_reason = run.answer, run.stop_reason
        # Graph-specific counters (invalid_steps, parallel_turns, ...) ride along in the row.
        counters = {**run.extra_counters, **run.counters}
        searches = run_searches(run.state)
        muse = muse_fields(run.state, question.answers)
    except Exception as exc:  # recorded per question; see docstring
        error = reported_error(exc)  # results files are shared: the text has no keys in it
        answer, stop_reason, counters = None, "error", dict.fromkeys(COUNTER_KEYS, 0)
        searches, muse = [], {}
    return {
        "graph": name,
        "id": question.id,
        "dataset": question.dataset,
        "type": question.type,
        "class": question.question_class,
        "question": question.question,
        "gold_answers": list(question.answers),
        "answer": answer,
        "stop_reason": stop_reason,
        "em": exact_match(answer, question.answers),
        "f1": f1_score(answer, question.answers),
        "cover_em": cover_exact_match(answer, question.answers),
        **gold_recall(searches, question.supporting_titles),
        **counters,
        **muse,
        "wall_s": round(time.perf_counter() - start, 3),
        "error": error,
    }


def _warm_up(graph: Any) -> None:
    try:
        graph.invoke({"question": WARMUP_QUESTION})
    except Exception as exc:  # a real failure shows up again in the recorded questions
        reported_error(exc)


def run_graphs(
    questions: Sequence[Question],
    graphs: Mapping[str, Any],
    out_dir: str | Path,
    *,
    concurrency: int = 1,
    progress: bool = True,
    warmup: bool = False,
    before_graph: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every question through every graph, append rows to ``results.jsonl``, summarise.

    Pairs already in ``out_dir/results.jsonl`` are skipped, so a rerun after a kill resumes, and
    a rerun with more graphs or questions only runs the new pairs. ``concurrency`` questions run
    at once in threads; graphs over one in-process engine then share its batches. The summary
    covers exactly the requested graphs and questions and is written to ``summary.json``.

    Args:
        questions: The questions (ids must be unique).
        graphs: Graph name -> compiled graph (or anything with a compatible ``invoke``).
        out_dir: Output folder, created if missing.
        concurrency: Questions in flight at once (at least 1).
        progress: Show a tqdm progress bar on stderr.
        warmup: First run :data:`WARMUP_QUESTION` once, unrecorded, through every graph with
            questions left, so that starting the engine, loading the encoder and compiling the
            graph's output grammar are not timed as part of its first question.
        before_graph: Called with a graph's name before its questions start (graphs run one
            after the other, the questions of one graph ``concurrency`` at a time), e.g. to
            empty the engine's prefix cache so that no graph reuses another's prompts.

    Returns:
        The summary (see :func:`langgraph_parallel.eval.summary.summarize`).

    Raises:
        ValueError: ``concurrency`` below 1 or repeated question ids.
        UserError: Raised by a graph (after the questions in flight have finished).
    """
    from tqdm.auto import tqdm

    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1 (got {concurrency}).")
    repeated = sorted(i for i, count in Counter(q.id for q in questions).items() if count > 1)
    if repeated:
        raise ValueError(f"question ids must be unique to resume a run; repeated: {repeated[:5]}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    wanted = {(name, q.id) for name in graphs for q in questions}
    rows = [r for r in load_results(path) if (r["graph"], r["id"]) in wanted]
    done = {(r["graph"], r["id"]) for r in rows}
    # Graph-major order: consecutive questions of one graph share its prompt prefix in the cache.
    todo = [(name, q) for name in graphs for q in questions if (name, q.id) not in done]
    if warmup:
        for name in dict.fromkeys(name for name, _ in todo):
            _warm_up(graphs[name])
    lock = threading.Lock()
    stop = threading.Event()  # set by a fatal error: start no further question
    with (
        path.open("a", encoding="utf-8") as fh,
        tqdm(
            total=len(wanted), initial=len(done), unit="q", desc="bench", disable=not progress
        ) as bar,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench") as pool,
    ):

        def task(name: str, question: Question) -> dict[str, Any] | None:
            if stop.is_set():
                return None
            try:
                row = evaluate(graphs[name], name, question)
            except BaseException:
                stop.set()
                raise
            with lock:
                append_row(fh, row)
                bar.set_postfix_str(f"{name} {question.id}", refresh=False)
                bar.update(1)
            return row

        # One graph at a time: ``before_graph`` (emptying the prefix cache) needs an idle engine,
        # and a graph's run then starts from the same cache state whatever ran before it.
        for graph_name in dict.fromkeys(name for name, _ in todo):
            if before_graph is not None:
                before_graph(graph_name)
            futures = [pool.submit(task, name, q) for name, q in todo if name == graph_name]
            try:
                for future in as_completed(futures):
                    row = future.result()
                    if row is not None:
                        rows.append(row)
            except BaseException:
                # Questions in flight still finish and are recorded; the rest never start.
                stop.set()
                for future in futures:
                    future.cancel()
                raise
    summary = summarize(rows, list(graphs))
    write_summary(summary, out / SUMMARY_FILE)
    return summary
