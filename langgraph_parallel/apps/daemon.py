"""The background model server ``ask`` finds by itself: started once, reused, stopped when idle.

A one-shot ``ask`` pays the engine's start and stop every time (about 20 s of a 25-30 s cold
question on a 2-core CPU). So the first ``ask`` starts ``langgraph-parallel serve`` in the
background, and later ones send their steps to it, as ``ollama run`` reuses its server:

- one server per user and model, on 127.0.0.1 only, at a free port; its record
  (``<cache>/daemon/<model>.json``: pid, address, version) is written by the server itself once
  it is warmed up, and removed when it stops;
- two ``ask``s starting at once take a file lock, so one starts the server and the other waits
  for it;
- the record's version is the package's version, the modification times of the model folder
  and of the code that serves it, and the engine settings: a server of another version is
  stopped and a new one started;
- it stops itself after ``idle_timeout`` seconds (default 15 minutes) with no request
  (``serve --idle-timeout``, reading the engine's own request counters), and ``serve --stop``
  stops it at once; ``serve --status`` lists it.

``LANGGRAPH_PARALLEL_DAEMON=0`` (or ``ask --no-daemon``) keeps the one-shot behaviour; the test
suite sets it so that no test depends on a server another test left behind.

Written here rather than taken from a process manager because what it decides (which model,
which version, when idle) is ours, and a lock file, a JSON record and ``os.killpg`` do the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import cache_dir

__all__ = [
    "DAEMON_ENV",
    "IDLE_TIMEOUT",
    "Daemon",
    "daemon_enabled",
    "daemon_version",
    "daemons",
    "ensure_daemon",
    "find_daemon",
    "record_of",
    "remove_record",
    "stop_daemons",
    "watch_idle",
    "write_record",
]

DAEMON_ENV = "LANGGRAPH_PARALLEL_DAEMON"
"""``0`` turns the background server off (every ``ask`` runs its model in process)."""

IDLE_TIMEOUT = 900.0
"""Seconds without a request after which the background server stops (15 minutes)."""

START_TIMEOUT = 900.0
"""Seconds the first ``ask`` waits for the server: engine start, first-use conversion, warm-up."""


@dataclass(frozen=True)
class Daemon:
    """The record of a background server, as the server wrote it.

    Attributes:
        model: The model it serves (the name ``ask`` was given).
        url: Its OpenAI base address (``http://127.0.0.1:PORT/v1``).
        pid: The ``serve`` process (its process group holds the engine).
        version: :func:`daemon_version` when it started.
        started: When it was ready (seconds since the epoch).
        log: Its output.
        ask_url: Its question endpoint (:mod:`.ask_server`), where a later ``ask`` runs its
            whole question; empty for a server without one.
        ask_token: The endpoint's bearer token (the record is readable by its user only).
    """

    model: str
    url: str
    pid: int
    version: str
    started: float
    log: str
    ask_url: str = ""
    ask_token: str = ""


def daemon_enabled() -> bool:
    """Return whether ``ask`` may use a background server (``LANGGRAPH_PARALLEL_DAEMON``)."""
    return os.environ.get(DAEMON_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _folder() -> Path:
    return cache_dir() / "daemon"


def _slug(model: str) -> str:
    """Return a file name for ``model``: readable, unique through a hash of the exact name."""
    digest = hashlib.sha256(model.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)[-40:]}-{digest}"


def _record_path(model: str) -> Path:
    return _folder() / f"{_slug(model)}.json"


def daemon_version(model: str) -> str:
    """Return what a server of ``model`` must match to be reused.

    The package's version, the model's folder and its modification time, those of the
    package's modules (the server runs whole questions: the graphs' code counts too), and the
    engine settings of the environment (``LANGGRAPH_PARALLEL_ENGINE``): an upgraded package, a
    retrained adapter, an edited clone or other engine settings get a new server.
    """
    import langgraph_parallel
    from langgraph_parallel.models.engine import ENGINE_ENV
    from langgraph_parallel.models.folders import resolve_model

    try:
        package = version("langgraph-parallel")
    except PackageNotFoundError:  # run from a tree that is not installed
        package = "unknown"
    path, _ = resolve_model(model)
    parts = [package, path, os.environ.get(ENGINE_ENV, "")]
    folder = Path(path)
    if folder.exists():
        parts.append(str(folder.stat().st_mtime_ns))
    code = Path(langgraph_parallel.__file__).parent
    parts += [f"{p.relative_to(code)}:{p.stat().st_mtime_ns}" for p in sorted(code.rglob("*.py"))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def write_record(model: str, url: str, *, ask_url: str = "", ask_token: str = "") -> Path:
    """Write this process's record as the server of ``model`` (``serve --background``).

    The file is readable by its user only: it holds the question endpoint's token.
    """
    path = _record_path(model)
    log = str(path.with_suffix(".log"))
    record = Daemon(
        model, url, os.getpid(), daemon_version(model), time.time(), log, ask_url, ask_token
    )
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(json.dumps(asdict(record)))
    os.replace(partial, path)  # a reader sees no record or a whole one
    return path


def record_of(model: str) -> Daemon | None:
    """Return the record of ``model``'s background server as written (no check that it is up)."""
    return _read(_record_path(model))


def remove_record(model: str) -> None:
    """Remove the record of ``model``'s server if it is this process's."""
    path = _record_path(model)
    record = _read(path)
    if record is not None and record.pid == os.getpid():
        path.unlink(missing_ok=True)


def _read(path: Path) -> Daemon | None:
    try:
        return Daemon(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _alive(pid: int) -> bool:
    # An exited server this process started stays a zombie, which signal 0 still finds.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has this pid now
        return False
    return True


def _answers(record: Daemon) -> bool:
    from langgraph_parallel.models.served import served_models

    names = served_models(record.url, timeout=2.0)
    return bool(names) and record.model in (names or [])


def daemons() -> list[tuple[Daemon, bool]]:
    """Return every recorded background server and whether it answers now."""
    found = []
    for path in sorted(_folder().glob("*.json")):
        record = _read(path)
        if record is not None:
            found.append((record, _alive(record.pid) and _answers(record)))
    return found


def _stop(record: Daemon, timeout: float = 30.0) -> None:
    """Stop a server and its engine (its process group), then drop its record."""
    from langgraph_parallel.models.server import stop_group

    stop_group(record.pid, timeout=timeout)
    path = _record_path(record.model)
    if (current := _read(path)) is not None and current.pid == record.pid:
        path.unlink(missing_ok=True)


def stop_daemons(model: str | None = None) -> list[Daemon]:
    """Stop the background servers (of ``model`` only, if given); return those stopped."""
    stopped = []
    for record, _ in daemons():
        if model is None or record.model == model:
            _stop(record)
            stopped.append(record)
    return stopped


def find_daemon(model: str) -> str | None:
    """Return the address of a live, current background server of ``model``, or ``None``.

    A server of another version is stopped; a record whose server is gone is removed.
    """
    path = _record_path(model)
    record = _read(path)
    if record is None:
        return None
    if not _alive(record.pid):
        path.unlink(missing_ok=True)
        return None
    if record.version != daemon_version(model):
        _stop(record)
        return None
    return record.url if _answers(record) else None


@contextlib.contextmanager
def _locked(model: str) -> Iterator[None]:
    """Hold ``model``'s start lock: one process starts its server, the others wait for it."""
    import fcntl  # POSIX only, as the engine is: imported here so the light install need not

    _folder().mkdir(parents=True, exist_ok=True)
    with open(_folder() / f"{_slug(model)}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_command(model: str, port: int, idle_timeout: float) -> list[str]:
    """Return the command of a background server: ``serve --background`` on ``port``."""
    return [
        sys.executable,
        "-m",
        "langgraph_parallel.apps.cli",
        "serve",
        "--model",
        model,
        "--port",
        str(port),
        "--idle-timeout",
        f"{idle_timeout:g}",
        "--background",
    ]


def ensure_daemon(
    model: str, *, idle_timeout: float = IDLE_TIMEOUT, timeout: float = START_TIMEOUT
) -> tuple[str, bool]:
    """Return the address of ``model``'s background server, starting it if needed.

    Args:
        model: An embedded model name or a model folder.
        idle_timeout: Seconds without a request before a server started here stops.
        timeout: Seconds to wait for a new server to be ready.

    Returns:
        ``(url, started)``: ``started`` is true when this call started the server.

    Raises:
        UserError: The server exited or was not ready in time (the message names its log).
    """
    with _locked(model):
        url = find_daemon(model)
        if url is not None:
            return url, False
        path = _record_path(model)
        path.unlink(missing_ok=True)
        log = path.with_suffix(".log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                _serve_command(model, _free_port(), idle_timeout),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not stopped by the terminal's Ctrl-C; its own group
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            record = _read(path)
            if record is not None and record.pid == proc.pid:
                return record.url, True
            if proc.poll() is not None:
                raise UserError(
                    f"The background model server exited with status {proc.returncode}; see "
                    f"{log}, or run with --no-daemon."
                )
            time.sleep(0.2)
        _stop(Daemon(model, "", proc.pid, "", 0.0, str(log)))
        raise UserError(
            f"The background model server was not ready within {timeout:g} s; see {log}, or "
            "run with --no-daemon."
        )


def _activity(url: str) -> tuple[float, float] | None:
    """Return (requests finished, requests running or waiting) from the engine's ``/metrics``."""
    import urllib.error

    from langgraph_parallel.models.served import open_url

    try:
        with open_url(url.removesuffix("/v1") + "/metrics", timeout=5) as reply:
            text = reply.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None
    done = busy = 0.0
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name.startswith("vllm:request_success_total"):
            done += float(value)
        elif name.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting")):
            busy += float(value)
    return done, busy


def watch_idle(
    url: str, idle_timeout: float, on_idle: Callable[[], None], *, poll: float | None = None
) -> threading.Thread:
    """Call ``on_idle`` once the server at ``url`` has had no request for ``idle_timeout`` s.

    A request counts when the engine's finished-request counter moves or a request is running
    or waiting; a ``/metrics`` that does not answer counts as busy (never stop a server that
    may be working).
    """
    step = poll if poll is not None else max(0.5, min(10.0, idle_timeout / 6))

    def run() -> None:
        last: tuple[float, float] | None = None
        quiet_since = time.monotonic()
        while True:
            time.sleep(step)
            seen = _activity(url)
            now = time.monotonic()
            if seen is None or seen[1] > 0 or (last is not None and seen[0] != last[0]):
                quiet_since = now
            last = seen if seen is not None else last
            if now - quiet_since >= idle_timeout:
                on_idle()
                return

    thread = threading.Thread(target=run, name="idle-watch", daemon=True)
    thread.start()
    return thread
