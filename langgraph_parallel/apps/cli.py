"""Command line: ``langgraph-parallel ask|serve|index|bench|train ...``.

Other distributions add commands through the ``langgraph_parallel.commands`` entry point: a
function called with the sub-parsers and the parsers it may extend (``{"bench": the bench parser,
"train": train's sub-parsers}``). The project's lab (``lab/`` in a clone, not in the wheel) adds
``bench run|list|compare``, ``results`` and ``train chains`` that way; without it those words say
where they live.

User errors (:class:`~langgraph_parallel.errors.UserError`) print one line, ``error: ...``, and
exit with status 2; nothing the user can fix ends in a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from functools import partial
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from langgraph_parallel.apps.arguments import add_index_argument
from langgraph_parallel.apps.ask import add_ask_parser
from langgraph_parallel.apps.bench_parser import add_bench_parser
from langgraph_parallel.apps.daemon import IDLE_TIMEOUT
from langgraph_parallel.errors import UserError, describe_error
from langgraph_parallel.models.quiet import LOG_ENV, quiet_environment
from langgraph_parallel.train.cli import add_train_parser

if TYPE_CHECKING:
    from langgraph_parallel.models.server import Listener


def serve_listener(args: argparse.Namespace, env: Mapping[str, str]) -> Listener:
    """Return where ``serve`` will listen and the keys it will ask for, refusing an open door.

    The flags after ``--`` go to vLLM after ours, and vLLM keeps the last of a repeated flag,
    so with any such flag the whole command line is read by vLLM's own parser
    (:func:`~langgraph_parallel.models.server.server_listener`): ``-- --host 0.0.0.0`` binds
    every interface whatever ``--host`` said, and ``-- --api-key ""`` asks for no key. Without
    them the command is all ours: one ``--host``, and the key of ``env`` (``VLLM_API_KEY``,
    which ``--api-key`` and ``LANGGRAPH_PARALLEL_API_KEY`` set) or none.

    Args:
        args: The parsed ``serve`` arguments.
        env: The environment the server will run in.

    Raises:
        UserError: Other machines could reach the server and it would ask for no key, or it
            would listen on a Unix socket (``serve`` waits for and warms it over HTTP).
    """
    from langgraph_parallel.models.served import API_KEY_ENV
    from langgraph_parallel.models.server import (
        Listener,
        server_flags,
        server_keys,
        server_listener,
    )

    extra = _vllm_flags(args)
    if extra:
        flags = server_flags(args.model, port=args.port, host=args.host)
        listener = server_listener(["--model", args.model, *flags, *extra], env)
    else:
        listener = Listener(args.host, args.port, keys=server_keys(None, env))
    if listener.uds is not None:
        raise UserError(
            "serve waits for its server and warms it up over HTTP, so it cannot serve on "
            "--uds: drop it, or start vLLM itself with the command serve prints."
        )
    if not listener.local and not listener.keys:
        where = f"--host {listener.host}" if listener.host else "every interface"
        last = " (the last --host on vLLM's command line, after --)" if extra else ""
        raise UserError(
            f"serve would listen on {where}{last} with no API key, so other machines could use "
            f"the model: require a key with --api-key KEY (or {API_KEY_ENV}=KEY) and give "
            f"clients the same {API_KEY_ENV}, or bind 127.0.0.1."
        )
    return listener


def _vllm_flags(args: argparse.Namespace) -> list[str]:
    """Return the flags ``serve`` passes on to vLLM: those after ``--`` (without it)."""
    extra = list(args.vllm_args)
    return extra[1:] if extra[:1] == ["--"] else extra


def serve_environment(args: argparse.Namespace) -> dict[str, str]:
    """Return the environment of ``serve``'s server: the key in ``VLLM_API_KEY`` when given.

    The key reaches vLLM through its environment, not argv, which ``ps`` shows to every user;
    ``--api-key`` wins over ``LANGGRAPH_PARALLEL_API_KEY``, which wins over ``VLLM_API_KEY``.
    """
    from langgraph_parallel.models.served import API_KEY_ENV
    from langgraph_parallel.models.server import server_environment

    key = args.api_key or os.environ.get(API_KEY_ENV)
    return server_environment(VLLM_API_KEY=key) if key else server_environment()


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve a model with vLLM's OpenAI-compatible server, warmed up, until stopped.

    The server runs as a child in this process group, its output on this terminal; Ctrl-C or
    SIGTERM reaches both, and the server is stopped if this command ends first.
    """
    import signal
    import subprocess

    from langgraph_parallel.apps import daemon
    from langgraph_parallel.apps.ask_server import prepare_answerer, serve_questions
    from langgraph_parallel.models.served_chat import warm_up
    from langgraph_parallel.models.server import server_command, wait_until_up

    if args.status or args.stop:
        return _background_servers(stop=args.stop)
    env = serve_environment(args)
    listener = serve_listener(args, env)  # before anything starts
    key = listener.keys[0] if listener.keys else None
    # Flags after ``--`` go to vLLM last, so they override the engine defaults it repeats.
    command = server_command(args.model, port=args.port, host=args.host) + _vllm_flags(args)
    print(" ".join(command), file=sys.stderr)
    url = listener.url
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    proc = subprocess.Popen(command, env=env)
    # The question endpoint's imports and index load while vLLM starts (they never call it).
    answerer = _in_thread(prepare_answerer, args.model, url) if args.background else None
    try:
        wait_until_up(proc, url, timeout=600.0)
        try:
            warmed = f"warmed up in {warm_up(url, args.model, api_key=key):.1f} s"
        except Exception as exc:  # a server that cannot take the warm-up can still serve
            warmed = f"warm-up failed: {describe_error(exc)}"
        print(f"serving {args.model} at {url} ({warmed})", file=sys.stderr, flush=True)
        if answerer is not None:  # a background server (--background)
            # Later asks run their whole question here (apps.ask_server), not just its steps.
            try:
                ask_url, token = serve_questions(answerer.result())
            except Exception as exc:  # the engine still serves model calls without it
                print(f"no question endpoint: {describe_error(exc)}", file=sys.stderr)
                ask_url = token = ""
            daemon.write_record(args.model, url, ask_url=ask_url, ask_token=token)
        if args.idle_timeout:
            # SIGTERM ends this command as a user's would: the finally below stops vLLM.
            stop = partial(os.kill, os.getpid(), signal.SIGTERM)
            daemon.watch_idle(url, args.idle_timeout, stop)
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if args.background:
            daemon.remove_record(args.model)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _in_thread(function: Callable[..., Any], *args: Any) -> Future[Any]:
    """Start ``function(*args)`` in a daemon thread; return the future of its result.

    Not an executor: its worker thread is joined at exit, so a server that failed to start
    would keep the command waiting for an index it will never use.
    """
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(function(*args))
        except BaseException as exc:  # noqa: BLE001 (handed to whoever reads the result)
            future.set_exception(exc)

    threading.Thread(target=run, name=getattr(function, "__name__", "task"), daemon=True).start()
    return future


def _background_servers(*, stop: bool) -> int:
    """``serve --status``: list the background servers; ``serve --stop``: stop them."""
    from langgraph_parallel.apps import daemon

    if stop:
        stopped = daemon.stop_daemons()
        for record in stopped:
            print(f"stopped the background server of {record.model} (pid {record.pid})")
        if not stopped:
            print("no background server is running")
        return 0
    found = daemon.daemons()
    for record, up in found:
        state = "answering" if up else "not answering"
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started))
        print(f"{record.model}: {record.url} pid {record.pid}, {state}, since {since}")
        print(f"  log: {record.log}")
    if not found:
        print("no background server is running")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Build (or load) the index of a corpus and report its size."""
    from langgraph_parallel.retrieval.indexes import corpus_index

    index = corpus_index(args.corpus, kind=args.index)
    print(f"indexed {len(index)} passages ({args.index})")
    return 0


COMMANDS_GROUP = "langgraph_parallel.commands"
"""The entry-point group of command-line extensions (see the module docstring)."""
LAB_COMMANDS = {"results": "regenerate the result blocks of the docs (the project's lab)"}
LAB_BENCH_VERBS = ("run", "list", "compare")
LAB_TRAIN_VERBS = {"chains": "chain data of the shipped policies (the project's lab)"}


def _lab_missing(args: argparse.Namespace) -> int:
    raise UserError(
        "The project's declared experiments, result writers and data recipes (bench "
        "run|list|compare, results, train chains) live in lab/ of a clone of "
        "langgraph-parallel, not in the wheel: in the clone, run bash tools/setup.sh (or pip "
        "install -e lab)."
    )


def _add_extensions(sub: Any, parents: dict[str, Any]) -> None:
    """Let installed extensions add their commands; stand in for the lab's when it is absent."""
    loaded = False
    for point in entry_points(group=COMMANDS_GROUP):
        try:
            add = point.load()
        except ImportError:  # an extension whose code is gone (a deleted lab/ folder)
            continue
        add(sub, parents)
        loaded = loaded or point.name == "lab"
    if loaded:
        return
    bench: argparse.ArgumentParser = parents["bench"]
    for verb, about in LAB_TRAIN_VERBS.items():
        stand_in = parents["train"].add_parser(verb, help=about)
        stand_in.add_argument("rest", nargs=argparse.REMAINDER)
        stand_in.set_defaults(func=_lab_missing)
    verbs = bench.add_subparsers(dest="bench_verb", metavar="")
    for verb in LAB_BENCH_VERBS:
        stand_in = verbs.add_parser(verb, help=f"bench {verb}: the project's lab (a clone)")
        stand_in.add_argument("rest", nargs=argparse.REMAINDER)
        stand_in.set_defaults(func=_lab_missing)
    for name, about in LAB_COMMANDS.items():
        stand_in = sub.add_parser(name, help=about)
        stand_in.add_argument("rest", nargs=argparse.REMAINDER)
        stand_in.set_defaults(func=_lab_missing)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``langgraph-parallel`` command."""
    parser = argparse.ArgumentParser(prog="langgraph-parallel", description=__doc__)
    parser.add_argument(
        "--verbose",
        action="store_true",
        help=f"show the libraries' logs and warnings (vLLM, torch, transformers); {LOG_ENV}=info "
        "does the same",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    add_ask_parser(sub)
    serve = sub.add_parser("serve", help="serve a model with vLLM's OpenAI-compatible server")
    serve.add_argument("--model", default="smollm2-parallel")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1, this machine only; any other needs an API key)",
    )
    serve.add_argument(
        "--api-key",
        default=None,
        help="require this key as 'Authorization: Bearer KEY' on every request (default: "
        "$LANGGRAPH_PARALLEL_API_KEY; clients read the same variable, or OPENAI_API_KEY)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long with no request (the background server ask starts: "
        f"{IDLE_TIMEOUT / 60:g} minutes)",
    )
    serve.add_argument(
        "--status", action="store_true", help="list the background servers ask started"
    )
    serve.add_argument("--stop", action="store_true", help="stop the background servers")
    # The background server ask starts: it records itself for later asks to find.
    serve.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
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
    bench = add_bench_parser(sub)
    train = add_train_parser(sub)
    _add_extensions(sub, {"bench": bench, "train": train})
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``langgraph-parallel`` command."""
    args = build_parser().parse_args(argv)
    if args.verbose:
        os.environ[LOG_ENV] = "info"
    quiet_environment()
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # invalid settings from our factories and contexts
        print(f"error: {exc}", file=sys.stderr)
        return 2


BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def run() -> int:
    """Entry point of the console script and ``python -m``: :func:`main`, then a quick exit.

    numpy's OpenBLAS runs on one thread in the processes this command starts (unless the user
    set ``OPENBLAS_NUM_THREADS``): a search's products are small (a query's encoder pass, the
    exact scan, which is memory-bound), and OpenBLAS split them over the cores, whose worker
    threads then spun on the cores the engine computes on. With both cores busy, a question's
    client CPU was 0.41 s at 16 concurrent runs on two threads and 0.07 s on one (2-core AMD
    EPYC). It is set here, before numpy loads, because OpenBLAS reads it once at load and
    ``openblas_set_num_threads`` later is not honoured the same on every thread. The engine's
    torch computes with MKL and oneDNN, which do not read it.

    After an in-process engine the interpreter's exit spent 4-6 s (2-core CPU) in its final
    garbage collection over the objects torch and vLLM left, which the process's end reclaims
    anyway: they are frozen out of it (``gc.freeze``), as vLLM does for its own engine process
    on ROCm. ``atexit`` hooks still run, and objects freed by reference counting are finalized.
    """
    import gc

    os.environ.setdefault(BLAS_THREADS_ENV, "1")
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(run())
