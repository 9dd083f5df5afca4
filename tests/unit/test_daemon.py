"""The background server ``ask`` finds by itself: start, reuse, restart, idle stop, races.

Each test gets its own cache folder, and the server is :mod:`tests.fake_serve` (real records,
real idle watch, no engine), so nothing here depends on a server another test left behind. The
real ``serve --background`` with the engine: ``tests/integration/test_cli.py``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_parallel.apps import daemon
from langgraph_parallel.apps.cli import main
from langgraph_parallel.errors import UserError

MODEL = "fake-org/fake-model"  # a hub-style name: no model folder is resolved
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Own cache folder, the daemon on, and ``serve --background`` replaced by the fake."""
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(daemon.DAEMON_ENV, "1")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    started: list[list[str]] = []
    extra: list[str] = []

    def command(model: str, port: int, idle_timeout: float) -> list[str]:
        args = ["--model", model, "--port", str(port), "--idle-timeout", f"{idle_timeout:g}"]
        started.append([sys.executable, "-m", "tests.fake_serve", *args, *extra])
        return started[-1]

    monkeypatch.setattr(daemon, "_serve_command", command)
    command.extra = extra  # type: ignore[attr-defined]
    yield started
    daemon.stop_daemons()


def record() -> daemon.Daemon:
    ((found, up),) = daemon.daemons()
    assert up
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child of this test process that has exited is a zombie until reaped.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def wait_until(check, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


def test_the_first_call_starts_a_server_and_the_next_reuse_it(
    fake_server: list[list[str]],
) -> None:
    assert daemon.find_daemon(MODEL) is None
    url, started = daemon.ensure_daemon(MODEL)
    assert started and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert daemon.ensure_daemon(MODEL) == (url, False)
    assert daemon.find_daemon(MODEL) == url
    assert len(fake_server) == 1  # one server process for three calls
    found = record()
    assert (found.model, found.url, found.version) == (MODEL, url, daemon.daemon_version(MODEL))
    assert "--idle-timeout" in fake_server[0] and "900" in fake_server[0]


def test_two_first_calls_at_once_start_one_server(fake_server: list[list[str]]) -> None:
    fake_server_extra(["--ready-after", "1.0"])  # both callers arrive while it starts
    results: list[tuple[str, bool]] = []
    callers = [
        threading.Thread(target=lambda: results.append(daemon.ensure_daemon(MODEL)))
        for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(30)
    assert len(results) == 2 and results[0][0] == results[1][0]
    assert sorted(started for _, started in results) == [False, True]
    assert len(fake_server) == 1


def fake_server_extra(flags: list[str]) -> None:
    daemon._serve_command.extra[:] = flags  # type: ignore[attr-defined]


def test_a_server_of_another_version_is_stopped_and_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, _ = daemon.ensure_daemon(MODEL)
    old = record()
    # The package was upgraded (or the model retrained) since that server started.
    monkeypatch.setattr(daemon, "daemon_version", lambda model: "another-version")
    assert daemon.find_daemon(MODEL) is None
    assert wait_until(lambda: not alive(old.pid))
    new_url, started = daemon.ensure_daemon(MODEL)
    assert started and record().pid != old.pid


def test_a_killed_server_is_replaced_by_the_next_call() -> None:
    url, _ = daemon.ensure_daemon(MODEL)
    old = record()
    os.kill(old.pid, signal.SIGKILL)  # dies between two asks, record left behind
    assert wait_until(lambda: not alive(old.pid))
    new_url, started = daemon.ensure_daemon(MODEL)
    assert started and record().pid != old.pid
    assert daemon.find_daemon(MODEL) == new_url


def test_the_server_stops_itself_after_its_idle_timeout_and_requests_keep_it_up() -> None:
    url, _ = daemon.ensure_daemon(MODEL, idle_timeout=1.5)
    pid = record().pid
    # Requests more often than the timeout keep it serving.
    for _ in range(6):
        request = urllib.request.Request(url + "/completions", data=b"{}", method="POST")
        urllib.request.urlopen(request, timeout=5).read()
        time.sleep(0.5)
        assert alive(pid)
    assert wait_until(lambda: not alive(pid), 10)
    assert daemon.daemons() == [] and daemon.find_daemon(MODEL) is None


def test_a_server_that_exits_before_ready_names_its_log() -> None:
    fake_server_extra(["--exit-before-ready"])
    with pytest.raises(
        UserError, match=r"exited with status 3; see .*\.log, or run with --no-daemon"
    ):
        daemon.ensure_daemon(MODEL)
    log = next((Path(os.environ["LANGGRAPH_PARALLEL_CACHE"]) / "daemon").glob("*.log"))
    assert "failing on purpose" in log.read_text()


def test_a_server_not_ready_in_time_is_stopped(fake_server: list[list[str]]) -> None:
    fake_server_extra(["--ready-after", "30"])
    with pytest.raises(UserError, match="not ready within 1 s"):
        daemon.ensure_daemon(MODEL, timeout=1.0)
    assert daemon.daemons() == []


def test_serve_status_and_stop_manage_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--status"]) == 0
    assert capsys.readouterr().out == "no background server is running\n"
    url, _ = daemon.ensure_daemon(MODEL)
    pid = record().pid
    assert main(["serve", "--status"]) == 0
    out = capsys.readouterr().out
    assert f"{MODEL}: {url} pid {pid}, answering, since " in out and "log: " in out
    assert main(["serve", "--stop"]) == 0
    assert capsys.readouterr().out == f"stopped the background server of {MODEL} (pid {pid})\n"
    assert wait_until(lambda: not alive(pid))
    assert daemon.daemons() == []


def test_the_record_is_written_whole_and_read_back(tmp_path: Path) -> None:
    path = daemon.write_record(MODEL, "http://127.0.0.1:1/v1")
    data = json.loads(path.read_text())
    assert data["pid"] == os.getpid() and data["model"] == MODEL
    assert data["log"].endswith(".log") and not list(path.parent.glob(".*.tmp"))
    daemon.remove_record(MODEL)
    assert not path.exists()


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for off in ("0", "false", "off", "no"):
        monkeypatch.setenv(daemon.DAEMON_ENV, off)
        assert not daemon.daemon_enabled()
    monkeypatch.setenv(daemon.DAEMON_ENV, "1")
    assert daemon.daemon_enabled()


def test_a_question_is_asked_again_in_process_only_when_its_server_is_gone() -> None:
    from langgraph_parallel.apps.ask import _server_lost
    from tests.servers import free_port

    url, _ = daemon.ensure_daemon(MODEL)
    assert not _server_lost("answered", url, MODEL)
    # A model error while the server still serves the model: the question's own failure.
    assert not _server_lost("model_error: BadRequestError: ...", url, MODEL)
    pid = record().pid
    daemon.stop_daemons()
    assert wait_until(lambda: not alive(pid))
    assert _server_lost("model_error: APIConnectionError: Connection error.", url, MODEL)
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    assert _server_lost("model_error: APIConnectionError: Connection error.", nowhere, MODEL)
    assert not _server_lost(None, nowhere, MODEL)


_STUBBORN = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_stop_group_ends_the_leader_and_its_children_and_kills_what_ignores_sigterm() -> None:
    import subprocess

    from langgraph_parallel.models.server import stop_group, stop_server

    proc = subprocess.Popen(
        [sys.executable, "-c", _STUBBORN], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    stop_server(proc, timeout=0.5)
    assert proc.returncode == -signal.SIGKILL  # the leader ignored SIGTERM; the Popen kept it
    assert not alive(child)  # SIGTERM reached the whole group, not the leader only
    stop_group(proc.pid, timeout=0.5)  # a group already stopped: nothing left to signal


def test_a_later_ask_runs_its_whole_question_on_the_background_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_server_extra(["--questions"])
    args = ["ask", "--model", MODEL, "--index", "bm25", "--passage-sentences", "2", "--timings"]
    assert main([*args, "Is it?"]) == 0  # starts the server
    out, err = capsys.readouterr()
    assert main([*args, "Is it?"]) == 0
    out, err = capsys.readouterr()
    # The live view came from the server's events; the options reached its graph.
    assert "step 1: search a ## b\nstep 2: answer yes\n" in err
    assert "answer: yes\n" in out and "  step: parallel-search bm25 2\n" in out
    assert "answered by: the background server at http://127.0.0.1:" in out
    assert "(reused; question and index there)" in out
    timings = out.split("timings:\n", 1)[1].splitlines()
    phases = [line.strip().rsplit(": ", 1)[0] for line in timings]
    assert "first step (grammar compile, first LLM call)" in phases
    assert not {"imports", "index", "engine start"} & set(phases)  # none of them here
    path = daemon._record_path(MODEL)
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the endpoint's token
    assert record().ask_url.endswith("/ask") and record().ask_token


def test_the_question_endpoint_reports_user_errors_and_refuses_strangers() -> None:
    from langgraph_parallel.apps.ask_server import AskRequest, post_question

    fake_server_extra(["--questions"])
    daemon.ensure_daemon(MODEL)
    found = record()
    events: list[dict[str, object]] = []

    def ask(question: str, token: str = found.ask_token) -> dict[str, object] | None:
        request = AskRequest(question=question, graph="parallel-search", model=MODEL)
        return post_question(found.ask_url, token, request, events.append)

    with pytest.raises(UserError, match="Corpus not found: /nowhere"):
        ask("user-error please")
    assert ask("crash please") is None  # a server failure: the ask answers it itself
    assert ask("Is it?", token="not-the-token") is None and events == []
    result = ask("Is it?")
    assert result is not None and result["answer"] == "yes" and len(events) == 2


def test_a_question_request_with_unknown_keys_is_refused() -> None:
    from langgraph_parallel.apps.ask_server import AskRequest

    request = AskRequest.from_json(b'{"question": "q", "graph": "direct", "model": "m"}')
    assert request.index == "hybrid" and request.passage_sentences == "auto"
    with pytest.raises(UserError, match="Malformed question request"):
        AskRequest.from_json(b'{"question": "q", "graph": "direct", "model": "m", "x": 1}')
    with pytest.raises(UserError, match="Malformed question request"):
        AskRequest.from_json(b"[1, 2]")


def test_a_question_the_server_cannot_run_is_answered_in_the_ask_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_parallel.apps import registry

    fake_server_extra(["--questions"])
    here: list[str | None] = []

    def load_model(name: str, base_url: str | None = None, **_: object) -> object:
        here.append(base_url)  # the fallback builds the model itself
        raise UserError("stop here: the in-process path was taken")

    monkeypatch.setattr(registry, "load_model", load_model)
    assert main(["ask", "--model", MODEL, "--timings", "crash please"]) == 2
    err = capsys.readouterr().err
    assert f"model {MODEL}: the background server did not answer; answering in process" in err
    assert here == [None]  # in process, not on the server that failed it
