"""Command line: ``langgraph-parallel ask|serve|index ...``.

User errors (:class:`~langgraph_parallel.errors.UserError`) print one line, ``error: ...``, and
exit with status 2; nothing the user can fix ends in a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from langgraph_parallel.apps.arguments import add_index_argument, add_passage_argument
from langgraph_parallel.apps.bench_cli import add_bench_parser
from langgraph_parallel.apps.bench_muse import MUSE_GRAPHS
from langgraph_parallel.apps.registry import GRAPH_NAMES
from langgraph_parallel.errors import UserError, describe_error
from langgraph_parallel.parallel_muse.tree import check_tree_path, draw_tree
from langgraph_parallel.train.cli import add_train_parser


def quiet_engines() -> None:
    """Keep vLLM and transformers (INFO by default) at errors only, so output stays readable."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer one question with a named graph and print the answer and counters."""
    question = " ".join(args.question).strip()
    if not question:
        raise UserError(
            'The question is empty: pass one, e.g. langgraph-parallel ask "Who wrote Hamlet?".'
        )
    tree = None
    if args.tree:  # checked before any model loads: a bad --tree must not cost an engine start
        if args.graph not in MUSE_GRAPHS:  # the graphs whose output has trajectories
            raise UserError(f"--tree needs --graph {' or '.join(MUSE_GRAPHS)} (got {args.graph}).")
        tree = check_tree_path(args.tree)
    from langgraph_parallel.agent.run import run_question
    from langgraph_parallel.apps.registry import build_graph, default_model, load_model
    from langgraph_parallel.models.served import find_server
    from langgraph_parallel.retrieval.indexes import corpus_index

    name = args.model or default_model(args.graph)
    base_url = find_server(name, args.server)
    if base_url:
        print(
            f"model {name}: served at {base_url} (--server none: run it in process)",
            file=sys.stderr,
        )
    # check=True: a bad model name fails before the index loads.
    model = load_model(name, base_url=base_url, check=True)
    graph = build_graph(
        args.graph,
        model,
        corpus_index(args.corpus, kind=args.index),
        max_turns=args.max_turns,
        top_k=args.top_k,
        passage_sentences=args.passage_sentences,
    )
    _ = getattr(model, "worker", None)  # start the engine first: wall_s times the question only
    # The live view (steps, each sub-query and rollout as it starts and ends) goes to stderr.
    run = run_question(graph, question, on_event=None if args.json else print_event)
    if args.json:
        print(json.dumps(run.summary()))
        write_tree(run.state, tree, file=sys.stderr)  # stdout stays one JSON object
        return 0
    print(f"question: {question}")
    print("trace:")
    for line in run.trace:
        print(f"  {line}")
    print(f"answer: {run.answer if run.answer is not None else '(none)'}")
    print(f"stop_reason: {run.stop_reason}")
    for key, value in run.summary().items():
        if key != "answer":
            print(f"{key}: {value}")
    write_tree(run.state, tree, file=sys.stdout)
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


def render_event(event: dict[str, Any]) -> str:
    """Return one line of ``ask``'s live view for a progress event (see ``agent.events``)."""
    kind = event.get("event")
    if kind == "step":
        what = " ## ".join(event.get("queries") or []) or event.get("answer") or ""
        final = " (final, answer only)" if event.get("final_answer_step") else ""
        return f"step {event.get('step')}{final}: {event.get('action')} {what}".rstrip()
    if kind == "search_start":
        return f"  search {event.get('id')} started: {event.get('query')}"
    if kind == "search_end":
        found = event.get("error") or ", ".join(event.get("titles") or []) or "nothing"
        return f"  search {event.get('id')} done: {event.get('query')} -> {found}"
    if kind == "rollout_start":
        parent = event.get("parent")
        origin = f" from {parent} at step {event.get('branch_step')}" if parent else ""
        return f"rollout {event.get('rollout')} started (round {event.get('round')}{origin})"
    if kind == "rollout_end":
        answer = event.get("answer")
        return f"rollout {event.get('rollout')} done: {answer!r} ({event.get('stop_reason')})"
    return json.dumps(event, default=str)


def print_event(event: dict[str, Any]) -> None:
    """Print a progress event as it happens (stderr, so stdout keeps the result)."""
    print(render_event(event), file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve a model with vLLM's OpenAI-compatible server, warmed up, until stopped.

    The server runs as a child in this process group, its output on this terminal; Ctrl-C or
    SIGTERM reaches both, and the server is stopped if this command ends first.
    """
    import signal
    import subprocess

    from langgraph_parallel.models.served import warm_up
    from langgraph_parallel.models.server import server_command, wait_until_up

    extra = list(args.vllm_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    # Flags after ``--`` go to vLLM last, so they override the engine defaults it repeats.
    command = server_command(args.model, port=args.port, host=args.host) + extra
    print(" ".join(command), file=sys.stderr)
    local = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    url = f"http://{local}:{args.port}/v1"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    proc = subprocess.Popen(command)
    try:
        wait_until_up(proc, url, timeout=600.0)
        try:
            warmed = f"warmed up in {warm_up(url, args.model):.1f} s"
        except Exception as exc:  # a server that cannot take the warm-up can still serve
            warmed = f"warm-up failed: {describe_error(exc)}"
        print(f"serving {args.model} at {url} ({warmed})", file=sys.stderr)
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def cmd_index(args: argparse.Namespace) -> int:
    """Build (or load) the index of a corpus and report its size."""
    from langgraph_parallel.retrieval.indexes import corpus_index

    index = corpus_index(args.corpus, kind=args.index)
    print(f"indexed {len(index)} passages ({args.index})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``langgraph-parallel`` command."""
    parser = argparse.ArgumentParser(prog="langgraph-parallel", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

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
    ask.add_argument(
        "--server",
        default="auto",
        help="a `langgraph-parallel serve` address to run the model on (e.g. "
        "http://127.0.0.1:8000); auto (default): the local serve if it is up and serves the "
        "model, else in process; none: always in process",
    )
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument(
        "--tree",
        metavar="FILE",
        help="parallel-muse, rollouts-majority: draw the trajectories as a tree (branch points, "
        "step uncertainty, the chosen one) to FILE: .png, .svg, or Mermaid text .mmd / .md",
    )
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="serve a model with vLLM's OpenAI-compatible server")
    serve.add_argument("--model", default="smollm2-parallel")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "vllm_args",
        nargs=argparse.REMAINDER,
        help="vLLM server flags after --, e.g. -- --kv-cache-memory-bytes 536870912",
    )
    serve.set_defaults(func=cmd_serve)

    index = sub.add_parser("index", help="build (and cache) the index of a corpus")
    index.add_argument(
        "--corpus", default=None, help="corpus .jsonl(.gz) or folder of .txt/.md; default: bundled"
    )
    add_index_argument(index)
    index.set_defaults(func=cmd_index)
    add_bench_parser(sub)
    add_train_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``langgraph-parallel`` command."""
    args = build_parser().parse_args(argv)
    quiet_engines()
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # invalid settings from our factories and contexts
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
