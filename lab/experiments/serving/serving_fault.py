"""The serving experiment's fault run: kill the server mid-level, start it again, count the cost.

After ``kill_after`` questions of the highest level have finished, :class:`Restart` kills the
server (SIGKILL to its process group: a crash, not a shutdown) and starts it again on the same
port, on its own thread, while the other runs go on. The graph of the fault run is built by
:func:`fault_graph`: under ``deadline_retry_policy(retry_deadline)`` the questions in flight
wait for the server to come back (a refused or reset connection is transient, see
:func:`~langgraph_parallel.errors.is_transient`); ``retry_deadline=0`` builds it with the
graphs' default policy (about 1.5 s of waiting, the behaviour before the deadline), so those
questions end with ``model_error``. :func:`account` then checks every question id appears once
and splits the endings; :func:`restart_latency` compares the questions in flight during the
restart with the others.
"""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lab.experiments.serving.serving_level import run_level, stop_reasons
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY
from langgraph_parallel.retry import deadline_retry_policy, retry_waits

__all__ = [
    "LOST_REASONS",
    "Restart",
    "account",
    "fault_graph",
    "fault_options",
    "restart_latency",
    "retry_record",
    "run_fault",
]

LOST_REASONS = ("model_error", "error")
"""Stop reasons of a question the fault cost its answer (``error``: the graph raised); other
endings without an answer (``max_turns``, ...) are the model's own."""


def fault_options(retry_deadline: float) -> dict[str, Any]:
    """Return the fault run's graph options: a deadline retry policy, or none for ``0``."""
    if retry_deadline <= 0:
        return {}  # the factories' default, DEFAULT_RETRY_POLICY
    return {"retry_policy": deadline_retry_policy(retry_deadline)}


def fault_graph(model: Any, search: Any, retry_deadline: float) -> Any:
    """Build the fault run's ``parallel-search`` graph (see :func:`fault_options`)."""
    from langgraph_parallel.apps.registry import build_graph

    return build_graph("parallel-search", model, search, **fault_options(retry_deadline))


def retry_record(retry_deadline: float) -> dict[str, Any]:
    """Describe the fault run's retry policy for ``serving.json``."""
    policy = fault_options(retry_deadline).get("retry_policy", DEFAULT_RETRY_POLICY)
    least, most = retry_waits(policy)
    return {
        "deadline_s": retry_deadline if retry_deadline > 0 else None,
        "max_attempts": policy.max_attempts,
        "waits_s": [least, most],  # a server back within the first is waited for
    }


def account(rows: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> dict[str, Any]:
    """Check that every question ended exactly once and split the endings.

    Args:
        rows: The fault run's rows (``id``, ``answer``, ``stop_reason``).
        ids: The ids of the questions the run was given.

    Returns:
        ``answered`` (rows with an answer), ``stop_reasons`` (counted by reason), ``lost``
        (questions without an answer for a reason in :data:`LOST_REASONS`, or missing),
        ``missing`` (ids without a row), ``duplicates`` (ids with more than one row, each
        once), ``unexpected`` (rows of ids not asked) and ``every_question_once``.
    """
    counts = Counter(r["id"] for r in rows)
    asked = set(ids)
    missing = [i for i in dict.fromkeys(ids) if i not in counts]
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    unexpected = sorted(i for i in counts if i not in asked)
    failed = sum(
        r["answer"] is None and (r.get("stop_reason") or "").split(":")[0] in LOST_REASONS
        for r in rows
    )
    return {
        "answered": sum(r["answer"] is not None for r in rows),
        "stop_reasons": stop_reasons(rows),
        "lost": failed + len(missing),
        "missing": missing,
        "duplicates": duplicates,
        "unexpected": unexpected,
        "every_question_once": not (missing or duplicates or unexpected),
    }


def _latency(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    walls = [r["wall_s"] for r in rows]
    return {
        "questions": len(rows),
        "answered": sum(r["answer"] is not None for r in rows),
        "p50_s": round(statistics.median(walls), 2) if walls else None,
        "max_s": round(max(walls), 2) if walls else None,
    }


def restart_latency(
    rows: Sequence[Mapping[str, Any]], killed_at_s: float, back_at_s: float
) -> dict[str, Any]:
    """Compare the questions in flight while the server was down with the others.

    A question was in flight if it started before the server was back and ended after it was
    killed (``start_s``/``end_s`` of the rows, on the same clock as the two instants).

    Returns:
        ``in_flight`` and ``others``, each with ``questions``, ``answered``, ``p50_s`` and
        ``max_s`` (``None`` for an empty group).
    """
    hit = [r for r in rows if r["start_s"] < back_at_s and r["end_s"] > killed_at_s]
    rest = [r for r in rows if not (r["start_s"] < back_at_s and r["end_s"] > killed_at_s)]
    return {"in_flight": _latency(hit), "others": _latency(rest)}


class Restart:
    """Kill a server's process group with SIGKILL and start it again (on a thread, once).

    Attributes:
        proc: The server process; the new one once restarted (stop it at the end).
        killed_at: ``time.perf_counter()`` at the kill, ``None`` before.
        back_at: ``time.perf_counter()`` once the new server answers, ``None`` before.
    """

    def __init__(self, proc: Any, start: Callable[[], Any]) -> None:
        """Keep the running server ``proc`` and ``start``, which starts a new one."""
        self.proc = proc
        self.start = start
        self.killed_at: float | None = None
        self.back_at: float | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from langgraph_parallel.models.server import stop_server

        try:
            self.killed_at = time.perf_counter()
            os.killpg(self.proc.pid, signal.SIGKILL)  # a crash, not a shutdown
            stop_server(self.proc)  # reaps it (and anything of its group still alive)
            self.proc = self.start()
            self.back_at = time.perf_counter()
        except BaseException as exc:  # raised on the experiment's thread by wait()
            self.error = exc

    def begin(self) -> None:
        """Kill and restart on the restart thread; return at once."""
        self.thread.start()

    def wait(self) -> None:
        """Wait for a begun restart to end; raise what it raised."""
        if self.thread.ident is not None:
            self.thread.join()
        if self.error is not None:
            raise self.error


def run_fault(
    graph: Any,
    questions: Sequence[Any],
    workers: int,
    base: str,
    *,
    kill_after: int,
    restart: Restart,
) -> dict[str, Any]:
    """Run the level with a restart after ``kill_after`` questions; return it with the accounts.

    Returns:
        :func:`~.serving_level.run_level`'s figures, then ``kill_after``, ``killed_at_s``,
        ``back_at_s`` and ``server_down_s`` (``None`` if the level ended first),
        :func:`account`'s fields and :func:`restart_latency`'s ``in_flight``/``others``.
    """
    epoch = time.perf_counter()

    def on_done(done: int) -> None:
        if done == kill_after:
            restart.begin()

    level = run_level(graph, questions, workers, base, on_done=on_done, epoch=epoch)
    restart.wait()  # the restart may outlast the level's questions
    level["kill_after"] = kill_after
    level.update(account(level["rows"], [q.id for q in questions]))
    if restart.killed_at is None or restart.back_at is None:
        level.update(killed_at_s=None, back_at_s=None, server_down_s=None)
        return level
    killed, back = restart.killed_at - epoch, restart.back_at - epoch
    level.update(killed_at_s=round(killed, 1), back_at_s=round(back, 1))
    level["server_down_s"] = round(back - killed, 1)
    level.update(restart_latency(level["rows"], killed, back))
    return level
