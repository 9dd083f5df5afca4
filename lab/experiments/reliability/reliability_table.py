"""The reliability experiment's counting and its tables: what "completed" and "crash" mean.

A run is *completed* when the graph returns a final state with an answer or a stated
``stop_reason`` that is writable as UTF-8 JSON; a *crash* is any exception escaping the graph.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lab.paths import checkout_dir
from lab.provenance import at_commit, shown_command
from langgraph_parallel.errors import UserError

__all__ = ["final_state_ok", "markdown", "render_reliability", "scenario"]


def final_state_ok(state: dict[str, Any]) -> bool:
    """Say whether a final state has an answer or a stated reason, consistent, UTF-8 writable."""
    answer, reason = state.get("answer"), state.get("stop_reason")
    if not (isinstance(reason, str) and reason) or (answer is not None) != (reason == "answered"):
        return False
    produced = {k: v for k, v in state.items() if k != "question"}
    text = json.dumps(
        produced, default=lambda o: getattr(o, "content", repr(o)), ensure_ascii=False
    )
    try:
        text.encode("utf-8")  # what writing a results file does
    except UnicodeEncodeError:
        return False
    return True


def scenario(
    name: str,
    graph_name: str,
    cases: Iterator[tuple[Any, dict[str, Any]]],
    faults: Callable[[], int],
) -> dict[str, Any]:
    """Run ``cases`` (graph, invoke kwargs) and count completions, crashes and stop reasons."""
    tried = completed = crashes = forked = refused = 0
    reasons: Counter[str] = Counter()
    crash_types: Counter[str] = Counter()
    start = time.perf_counter()
    for graph, kwargs in cases:
        tried += 1
        try:
            state = graph.invoke({"question": kwargs.pop("question", "Q?")}, **kwargs)
        except UserError:
            # Bad input refused at the start with an error naming the fix (a fuzzed question
            # that is empty once cleaned): the graph's contract, not a crash.
            refused += 1
            continue
        except Exception as exc:  # the thing this table counts
            crashes += 1
            crash_types[type(exc).__name__] += 1
            continue
        completed += final_state_ok(state)
        forked += bool(state.get("branch_points"))  # ParallelMuse forked at least once
        reasons[str(state["stop_reason"]).split(":")[0]] += 1
    row = {
        "scenario": name,
        "graph": graph_name,
        "cases": tried,
        "faults_injected": faults(),
        "completed": completed,
        "crashes": crashes,
        "refused": refused,
        "forked": forked if graph_name == "parallel-muse" else None,
        "stop_reasons": dict(reasons.most_common()),
        "crash_types": dict(crash_types),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(row), flush=True)
    return row


def crash_types(row: dict[str, Any]) -> str:
    """`` (RuntimeError 1)``: what escaped the graph in a row's crashes (nothing if none)."""
    types = row.get("crash_types") or {}
    return f" ({', '.join(f'{k} {v}' for k, v in types.items())})" if types else ""


def crashes_text(rows: list[dict[str, Any]]) -> str:
    """``**0 crashes**``, or ``**1 crash** (sequential, fuzzed ... (RuntimeError 1))``.

    Runs refused at the start (a ``UserError``: bad input, loud by design) are counted apart.
    """
    crashes = sum(r["crashes"] for r in rows)
    where = "; ".join(
        f"{r['graph']}, {r['scenario']}{crash_types(r)}" for r in rows if r["crashes"]
    )
    word = "crash" if crashes == 1 else "crashes"
    refused = sum(r.get("refused", 0) for r in rows)
    said = f", {refused} refused at the start (bad input, a `UserError`)" if refused else ""
    return f"**{crashes} {word}**" + (f" ({where})" if where else "") + said


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    """Return the table of ``reliability.md``."""
    total = {
        k: sum(r[k] for r in rows) for k in ("cases", "faults_injected", "completed", "crashes")
    }
    lines = [
        "# Reliability: bad model output, failing tools, limits, failing branches",
        "",
        f"Made by `{command}` (fake model and flaky searcher, seeded; no engine).",
        "",
        "A run is *completed* when the graph returns a final state with an answer or a stated",
        "`stop_reason`, writable as UTF-8 JSON; a *crash* is an exception escaping the graph.",
        "Faults injected: model calls that raised (at a seeded rate, or scripted among fuzzed",
        "outputs) and searches that raised, timed out, returned nothing or returned garbage.",
        "",
        "| scenario | graph | cases tried | faults injected | runs completed | crashes "
        "| runs that forked | stop reasons |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        reasons = ", ".join(f"{k} {v}" for k, v in r["stop_reasons"].items())
        if r.get("refused"):
            reasons += f"; refused at the start (bad input) {r['refused']}"
        lines.append(
            f"| {r['scenario']} | {r['graph']} | {r['cases']} | {r['faults_injected']} | "
            f"{r['completed']} | {r['crashes']}{crash_types(r)} | "
            f"{'-' if r['forked'] is None else r['forked']} | {reasons} |"
        )
    lines.append(
        f"| **total** | | **{total['cases']}** | **{total['faults_injected']}** | "
        f"**{total['completed']}** | **{total['crashes']}** | | |"
    )
    return "\n".join(lines) + "\n"


def render_reliability(path: Path | None = None) -> str:
    """Render the fault-injection totals (README block ``reliability-results``)."""
    path = path or checkout_dir() / "benchmarks" / "reliability.json"
    result: dict[str, Any] = json.loads(path.read_text())
    rows = result["rows"]
    total = {k: sum(r[k] for r in rows) for k in ("cases", "faults_injected", "completed")}
    muse = [r for r in rows if r["graph"] == "parallel-muse"]
    forked = sum(r["forked"] or 0 for r in muse)
    return (
        f"**Reliability** (`benchmarks/reliability.md`, {shown_command(result['command'])}"
        f"{at_commit(result)}, "
        "fake model and "
        f"flaky searcher): {total['cases']:,} runs with fuzzed model output (unclosed/nested "
        "tags, hundreds of `##`, huge and non-UTF-8-safe text, broken JSON tool calls), 30% "
        "search faults (raise, time out, return nothing or garbage), 30% model faults "
        "(transient ones retried by the nodes' `RetryPolicy`, context-too-long ones reported), "
        "recursion limits from 2 to 60, and failing ParallelMuse branches (independent rollouts "
        f"and the fork graph, which forked in {forked} of its {sum(r['cases'] for r in muse)} "
        f"runs): {total['faults_injected']:,} faults injected, {total['completed']:,} runs "
        f"completed with an answer or a stated `stop_reason`, {crashes_text(rows)}."
    )
