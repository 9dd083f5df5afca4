"""Helpers for tests that start a server process: a free port and waiting for an HTTP answer."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_http(url: str, proc: subprocess.Popen[bytes], timeout: float, log: str) -> None:
    """Poll ``url`` until it answers 2xx; fail with the log's tail if ``proc`` dies or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise AssertionError(f"server did not answer {url} within {timeout:g} s:\n{tail(log)}")


def tail(path: str, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file."""
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL cluster; yield its connection URI; stop and delete it.

    Uses the server binaries of Debian's ``postgresql`` package (``initdb``, ``pg_ctl``); skips
    the calling test, saying so, where they are missing. PostgreSQL refuses to run as root, so
    as root the cluster runs as the ``postgres`` user, in a fresh folder of its own under the
    system temp dir (pytest's folders are closed to other users). Trust authentication on
    127.0.0.1 only, no fsync: a test database, gone when the block ends.
    """
    import pytest

    bindir = _postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found: apt install postgresql")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a 'postgres' user to run PostgreSQL as")
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="lgp-postgres-"))
    if as_user:
        shutil.chown(root, "postgres")
    data, log, port = root / "data", root / "postgres.log", free_port()

    def run(*command: str) -> None:
        done = subprocess.run([*as_user, *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            output = f"{done.stdout}{done.stderr}\n{tail(str(log))}"
            raise AssertionError(f"{Path(command[0]).name} failed:\n{output}")

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _postgres_bindir() -> Path | None:
    """The folder with ``initdb`` and ``pg_ctl``: on PATH, or Debian's versioned folder."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return versions[-1].parent if versions else None
