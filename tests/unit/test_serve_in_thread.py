"""``serve --background`` loads the question endpoint in a thread while vLLM starts."""

from __future__ import annotations

import threading

import pytest

from langgraph_parallel.apps.cli import _in_thread


def test_the_result_comes_back_through_the_future() -> None:
    assert _in_thread(lambda a, b: a + b, 2, 3).result(timeout=10) == 5


def test_an_error_reaches_whoever_reads_the_result() -> None:
    def fail() -> None:
        raise OSError("no index here")

    with pytest.raises(OSError, match="no index here"):
        _in_thread(fail).result(timeout=10)


def test_the_thread_never_holds_the_command_at_exit() -> None:
    release = threading.Event()

    def load() -> str:
        release.wait(10)
        return "index"

    future = _in_thread(load)
    (thread,) = [t for t in threading.enumerate() if t.name == "load"]
    assert thread.daemon and not future.done()
    release.set()
    assert future.result(timeout=10) == "index"
