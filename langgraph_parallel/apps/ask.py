"""``langgraph-parallel ask``: one question, its live view, the answer, and where the time went.

The model runs on a server when one serves it: the one ``--server`` names, a ``serve`` at the
default address, or the background server the first ``ask`` starts (:mod:`.daemon`); else, and
with ``--no-daemon``, in this process.

``--timings`` splits a run's wall time by phase (the program's start and imports, the model's
resolution with any first-use conversion and merge, the index load, the engine start, the first
step, the rest of the question, the engine's shutdown), so a slow cold start shows its cause.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from langgraph_parallel.agent.events import render_event
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.apps.arguments import (
    add_index_argument,
    add_passage_argument,
    add_retry_argument,
    retry_options,
)
from langgraph_parallel.apps.daemon import daemon_enabled
from langgraph_parallel.apps.registry import GRAPH_NAMES, MUSE_GRAPHS
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_muse.tree import check_tree_path, draw_tree

__all__ = ["Timings", "add_ask_parser", "cmd_ask", "print_event", "render_event"]


class Timings:
    """Wall seconds per phase of one ``ask``, in the order they ran.

    The first phase, ``start``, runs from the process's creation (as the OS recorded it) to the
    command's first line: interpreter start and the CLI's imports.
    """

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.phases["start"] = _since_process_start()
        self.path = "in process"  # which engine answered: in process, or which server

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as ``name``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = round(time.perf_counter() - t0, 3)

    def add(self, name: str, seconds: float) -> None:
        """Record a phase timed elsewhere."""
        self.phases[name] = round(seconds, 3)

    def question(self, t0: float, t1: float, first: list[float]) -> None:
        """Record a question run from ``t0`` to ``t1``, split at its first step if one came."""
        if first:
            self.add("first step (grammar compile, first LLM call)", first[0] - t0)
            self.add("rest of the question", t1 - first[0])
        else:
            self.add("question", t1 - t0)

    def lines(self) -> list[str]:
        """Return the table ``--timings`` prints: a ``phase: seconds`` line each, then the total."""
        total = sum(self.phases.values())
        return [f"  {k}: {v:.2f} s" for k, v in self.phases.items()] + [f"  total: {total:.2f} s"]


def _since_process_start() -> float:
    """Return the seconds since this process was created, or 0.0 when the OS does not say.

    On Linux both ends are read on the kernel's clock since boot (``/proc/self/stat``'s start
    time and ``/proc/uptime``, 10 ms resolution); ``psutil``'s creation time adds the boot
    time, which Linux gives in whole seconds, so it can be off by up to a second.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            started = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime", encoding="ascii") as uptime:
            now = float(uptime.read().split()[0])
        return round(max(0.0, now - started / os.sysconf("SC_CLK_TCK")), 3)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return round(max(0.0, time.time() - psutil.Process().create_time()), 3)
    except Exception:  # no psutil (it comes with vLLM) or no process table: unknown, not fatal
        return 0.0


def _background_server(model: str) -> tuple[str, bool]:
    """Return the background server of ``model`` and whether it was started now (stderr says)."""
    from langgraph_parallel.apps.daemon import IDLE_TIMEOUT, ensure_daemon, find_daemon

    if (url := find_daemon(model)) is not None:
        return url, False
    print(
        f"model {model}: starting a background server on 127.0.0.1 for this and later "
        f"questions (stops after {IDLE_TIMEOUT / 60:g} idle minutes; serve --stop stops it, "
        "--no-daemon runs in process)",
        file=sys.stderr,
        flush=True,
    )
    return ensure_daemon(model)


def _server_lost(stop_reason: str | None, url: str, model: str) -> bool:
    """Return whether a question ended on a model error because its server is gone."""
    from langgraph_parallel.models.served import served_models

    if not (stop_reason or "").startswith("model_error"):
        return False
    return model not in (served_models(url, timeout=2.0) or [])


def _first_step_clock(
    on_event: Callable[[dict[str, Any]], None] | None,
) -> tuple[Callable[[dict[str, Any]], None], list[float]]:
    """Wrap ``on_event`` to note when the first step event arrives (``perf_counter``)."""
    seen: list[float] = []

    def handle(event: dict[str, Any]) -> None:
        if event.get("event") == "step" and not seen:
            seen.append(time.perf_counter())
        if on_event is not None:
            on_event(event)

    return handle, seen


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer one question with a named graph and print the answer and counters."""
    timings = Timings()
    question = " ".join(args.question).strip()
    if not question:
        raise UserError(
            'The question is empty: pass one, e.g. langgraph-parallel ask "Who wrote Hamlet?".'
        )
    tree = None
    if args.tree:  # checked before any model loads: a bad --tree must not cost an engine start
        if args.graph not in MUSE_GRAPHS:  # the graphs whose output has trajectories
            raise UserError(f"--tree needs --graph {', '.join(MUSE_GRAPHS)} (got {args.graph}).")
        tree = check_tree_path(args.tree)
    thin = args.server in (None, "auto") and not (args.no_daemon or tree or args.retry_deadline)
    if thin and daemon_enabled():
        done = _ask_on_background_server(args, question, timings)
        if done is not None:
            return done
    with timings.phase("imports"):
        from langgraph_parallel.agent.run import run_question
        from langgraph_parallel.apps.registry import build_graph, default_model, load_model
        from langgraph_parallel.models.served import find_server
        from langgraph_parallel.retrieval.indexes import corpus_index

    name = args.model or default_model(args.graph)
    base_url = find_server(name, args.server)
    if base_url:
        timings.path = f"the server at {base_url}"
    elif args.server in (None, "auto") and not args.no_daemon and daemon_enabled():
        # Reached when the background server has no question endpoint, or with --tree or
        # --retry-deadline (both need the run here): its engine still takes the model calls.
        with timings.phase("background server (first ask: its engine start and warm-up)"):
            base_url, started = _background_server(name)
        timings.path = f"the background server at {base_url} ({'started' if started else 'reused'})"
    if base_url:
        print(
            f"model {name}: served by {timings.path} (--server none: in process)", file=sys.stderr
        )
    with timings.phase("model (first use: conversion, adapter merge)"):
        # check=True: a bad model name fails before the index loads.
        model = load_model(name, base_url=base_url, check=True)
    with timings.phase("index"):
        index = corpus_index(args.corpus, kind=args.index)
    options = {
        "max_turns": args.max_turns,
        "top_k": args.top_k,
        "passage_sentences": args.passage_sentences,
        **retry_options(args.retry_deadline),
    }
    graph = build_graph(args.graph, model, index, **options)
    with timings.phase("engine start"):
        # First: wall_s times the question only.
        worker = model.worker if policy_of(model).in_process_engine else None  # type: ignore[attr-defined]
    # The live view (steps, each sub-query and rollout as it starts and ends) goes to stderr.
    on_event, first = _first_step_clock(None if args.json else print_event)
    t0 = time.perf_counter()
    run = run_question(graph, question, on_event=on_event)
    if base_url and _server_lost(run.stop_reason, base_url, name):
        # The server died under the question: answer it here rather than lose it.
        print(
            f"model {name}: the server at {base_url} stopped; answering in process", file=sys.stderr
        )
        timings.path = "in process (the server stopped mid-question)"
        model = load_model(name, check=True)
        graph = build_graph(args.graph, model, index, **options)
        worker = model.worker if policy_of(model).in_process_engine else None  # type: ignore[attr-defined]
        on_event, first = _first_step_clock(None if args.json else print_event)
        run = run_question(graph, question, on_event=on_event)
    t1 = time.perf_counter()
    timings.question(t0, t1, first)
    if args.timings and worker is not None:
        with timings.phase("engine shutdown"):
            worker.shutdown()
    errors = int(run.extra_counters.get("search_errors", 0))
    _print_answer(
        args, question, run.answer, run.stop_reason, run.trace, run.summary(), timings, errors
    )
    write_tree(run.state, tree, file=sys.stderr if args.json else sys.stdout)
    return 0


def _print_answer(
    args: argparse.Namespace,
    question: str,
    answer: str | None,
    stop_reason: str,
    trace: list[str],
    summary: dict[str, Any],
    timings: Timings,
    search_errors: int = 0,
) -> None:
    """Print the answer, trace and counters (or one JSON object with ``--json``).

    ``search_errors`` (searches that failed or timed out) is printed after the stop reason: a
    run that answered over failed searches says so beside its answer.
    """
    if args.json:
        timed = {"timings": timings.phases, "answered_by": timings.path}
        print(json.dumps({**summary, **timed} if args.timings else summary))
        return
    print(f"question: {question}")
    print("trace:")
    for line in trace:
        print(f"  {line}")
    print(f"answer: {answer if answer is not None else '(none)'}")
    print(f"stop_reason: {stop_reason}")
    note = " (failed or timed out: the model read an error in their place)" if search_errors else ""
    print(f"search_errors: {search_errors}{note}")
    for key, value in summary.items():
        if key != "answer":
            print(f"{key}: {value}")
    if args.timings:
        print(f"answered by: {timings.path}")
        print("timings:")
        print("\n".join(timings.lines()))


def _ask_on_background_server(
    args: argparse.Namespace, question: str, timings: Timings
) -> int | None:
    """Run the whole question on the background server (:mod:`.ask_server`); 0 when answered.

    Returns ``None`` when it must be answered here instead: a ``serve`` at the default address
    serves the model (it comes first), the server has no question endpoint, or the server
    stopped under the question (then ``args.no_daemon`` is set and stderr says so).

    Raises:
        UserError: The server refused the question as one the user must fix.
    """
    from langgraph_parallel.apps import daemon
    from langgraph_parallel.apps.ask_server import AskRequest, post_question
    from langgraph_parallel.apps.registry import default_model
    from langgraph_parallel.models.served import find_server

    name = args.model or default_model(args.graph)
    if find_server(name, "auto") is not None:
        return None
    with timings.phase("background server (first ask: its engine start and warm-up)"):
        url, started = _background_server(name)
    record = daemon.record_of(name)
    if record is None or not record.ask_url:
        return None
    timings.path = (
        f"the background server at {url} ({'started' if started else 'reused'}; "
        "question and index there)"
    )
    request = AskRequest(
        question=question,
        graph=args.graph,
        model=name,
        corpus=args.corpus,
        index=args.index,
        max_turns=args.max_turns,
        top_k=args.top_k,
        passage_sentences=args.passage_sentences,
    )
    on_event, first = _first_step_clock(None if args.json else print_event)
    t0 = time.perf_counter()
    result = post_question(record.ask_url, record.ask_token, request, on_event)
    if result is None or _server_lost(result["stop_reason"], url, name):
        print(
            f"model {name}: the background server did not answer; answering in process",
            file=sys.stderr,
        )
        timings.path = "in process (the background server did not answer the question)"
        args.no_daemon = True
        return None
    t1 = time.perf_counter()
    if result["index_s"] >= 0.01:  # the first question on this corpus loaded it there
        timings.add("index (on the background server)", result["index_s"])
    timings.question(t0, t1, first)
    _print_answer(
        args,
        question,
        result["answer"],
        result["stop_reason"],
        result["trace"],
        result["summary"],
        timings,
        int(result.get("search_errors", 0)),
    )
    return 0


def write_tree(state: dict[str, Any], path: Path | None, *, file: TextIO) -> None:
    """Draw the run's trajectory tree to ``path`` (if given) and say where it went."""
    if path is None:
        return
    try:
        draw_tree(state, path)
    except OSError as exc:
        raise UserError(f"Cannot write the tree to {path}: {exc}") from exc
    print(f"tree: {path}", file=file)


def print_event(event: dict[str, Any]) -> None:
    """Print a progress event as it happens (stderr, so stdout keeps the result)."""
    print(render_event(event), file=sys.stderr, flush=True)


def add_ask_parser(sub: Any) -> None:
    """Add ``ask`` to the command's subparsers."""
    ask = sub.add_parser("ask", help="answer a question with a search agent")
    ask.add_argument("question", nargs="+", help="the question")
    ask.add_argument("--graph", choices=GRAPH_NAMES, default="parallel-search")
    ask.add_argument(
        "--model",
        default=None,
        help="smollm2-parallel (default of parallel-search/parallel-muse), smollm2-sequential "
        "(default of sequential), smollm2 (untrained base, default of direct), gemma3, or a "
        "model or adapter folder",
    )
    ask.add_argument(
        "--corpus", default=None, help="corpus .jsonl(.gz) or folder of .txt/.md; default: bundled"
    )
    add_index_argument(ask)
    ask.add_argument("--max-turns", type=int, default=4)
    ask.add_argument("--top-k", type=int, default=3)
    add_passage_argument(ask)
    add_retry_argument(ask)
    ask.add_argument(
        "--server",
        default="auto",
        help="a `langgraph-parallel serve` address to run the model on (e.g. "
        "http://127.0.0.1:8000); auto (default): a serve at 127.0.0.1:8000 if it serves the "
        "model, else the background server (started by the first ask; see --no-daemon); none: "
        "in process",
    )
    ask.add_argument(
        "--no-daemon",
        action="store_true",
        help="run the model in this process and stop it at the end, rather than start (or "
        "reuse) the background server that later asks find; LANGGRAPH_PARALLEL_DAEMON=0 "
        "does the same",
    )
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument(
        "--tree",
        metavar="FILE",
        help="parallel-muse, rollouts-majority: draw the trajectories as a tree (branch points, "
        "step uncertainty, the chosen one) to FILE: .png, .svg, or Mermaid text .mmd / .md",
    )

    ask.add_argument(
        "--timings",
        action="store_true",
        help="print the wall time of each phase (start, imports, model, index, engine start, "
        "first step, the rest, shutdown) and which engine answered; with --json, a 'timings' "
        "object and 'answered_by'",
    )
    ask.set_defaults(func=cmd_ask)
