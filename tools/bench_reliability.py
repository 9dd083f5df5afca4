"""Reliability table: bad model output, failing tools, limits, failing branches; no engine.

    .venv/bin/python tools/bench_reliability.py            # writes benchmarks/reliability.{md,json}

Every case runs a whole graph over a fake model (``tests.fakes.FuzzChatModel``) and a flaky
searcher (``tests.fakes.FlakySearcher``), both seeded, so the table repeats exactly. A run is
*completed* when the graph returns a final state with an answer or a stated ``stop_reason`` that
is writable as UTF-8 JSON; a *crash* is any exception escaping the graph.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import RetryPolicy  # noqa: E402

import langgraph_parallel.parallel_muse.graph as muse  # noqa: E402
from langgraph_parallel import create_parallel_search_graph  # noqa: E402
from langgraph_parallel.apps.bench_cli import source_commit  # noqa: E402
from langgraph_parallel.baselines.direct import create_direct_graph  # noqa: E402
from langgraph_parallel.errors import is_transient  # noqa: E402
from tests.fakes import FRAGMENTS, FlakySearcher, FuzzChatModel, fuzz_step  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "benchmarks"
COMMAND = ".venv/bin/python tools/bench_reliability.py"
# Real backoff shape, millisecond delays: the table measures outcomes, not waiting.
RETRY = RetryPolicy(0.001, 2.0, 0.01, max_attempts=3, jitter=False, retry_on=is_transient)
ALL_SEARCH_FAULTS = ("transient", "fatal", "empty", "garbage", "slow")


def final_state_ok(state: dict[str, Any]) -> bool:
    """An answer or a stated reason, consistent, and writable as UTF-8 JSON."""
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
    tried = completed = crashes = forked = 0
    reasons: Counter[str] = Counter()
    crash_types: Counter[str] = Counter()
    start = time.perf_counter()
    for graph, kwargs in cases:
        tried += 1
        try:
            state = graph.invoke({"question": kwargs.pop("question", "Q?")}, **kwargs)
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
        "forked": forked if graph_name == "parallel-muse" else None,
        "stop_reasons": dict(reasons.most_common()),
        "crash_types": dict(crash_types),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(row), flush=True)
    return row


def fuzz_cases(graph: Any, model: FuzzChatModel, n: int, seed: int) -> Iterator[Any]:
    rng = random.Random(seed)
    for _ in range(n):
        steps = [fuzz_step(rng) for _ in range(rng.randint(1, 5))]
        model.reset(steps)
        question = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 6)))
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        yield graph, {"question": question, "config": config}


def repeat(graph: Any, model: FuzzChatModel, n: int, outputs: list[Any]) -> Iterator[Any]:
    for _ in range(n):
        model.reset(outputs)
        yield graph, {}


def fault_count(model: FuzzChatModel, searcher: FlakySearcher | None = None) -> Callable[[], int]:
    return lambda: model.failures + (sum(searcher.failures.values()) if searcher else 0)


def run_all(scale: float) -> list[dict[str, Any]]:
    """Every scenario of the table; ``scale`` shrinks the case counts (for a quick try)."""

    def n(count: int) -> int:
        return max(1, int(count * scale))

    rows = []
    good = ["<search> a ## b </search>", "<search> c </search>", "<answer> d </answer>"]

    # 1. Fuzzed model output over a searcher failing 30% of the time (every failure mode).
    for name, decompose, saver in (("parallel-search", True, None), ("sequential", False, True)):
        model, searcher = FuzzChatModel(), FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS)
        graph = create_parallel_search_graph(
            model, searcher, decompose=decompose, max_turns=4, search_timeout=0.02,
            retry_policy=RETRY, checkpointer=InMemorySaver() if saver else None,
        )  # fmt: skip
        cases = fuzz_cases(graph, model, n(1000), seed=len(rows))
        title = "fuzzed model output + 30% search faults"
        rows.append(scenario(title, name, cases, fault_count(model, searcher)))
    model = FuzzChatModel()
    cases = fuzz_cases(create_direct_graph(model, retry_policy=RETRY), model, n(200), seed=7)
    rows.append(scenario("fuzzed model output", "direct", cases, fault_count(model)))

    # 2. 30% search failures, a well-behaved model.
    model, searcher = FuzzChatModel(), FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS, seed=1)
    graph = create_parallel_search_graph(model, searcher, search_timeout=0.02, retry_policy=RETRY)
    rows.append(
        scenario("30% search faults", "parallel-search", repeat(graph, model, n(200), good),
                 fault_count(model, searcher))
    )  # fmt: skip

    # 3. 30% model failures (transient, retried; then context-too-long, reported at once).
    for label, error in (
        ("30% transient model faults (retried)", lambda: ConnectionError("reset")),
        ("30% context-too-long model faults", lambda: ValueError("prompt too long")),
    ):
        model = FuzzChatModel(fail_rate=0.3, seed=2, error=error)
        graph = create_parallel_search_graph(model, FlakySearcher(0.0), retry_policy=RETRY)
        rows.append(
            scenario(label, "parallel-search", repeat(graph, model, n(200), good),
                     fault_count(model))
        )  # fmt: skip

    # 4. Limits: recursion limits 2-60 against max_turns 1-12, long runs, a per-run max_turns over
    # the default limit. (A limit of 1 leaves no step for any node: run_question reports it.)
    rng = random.Random(5)
    model = FuzzChatModel(outputs=["<search> a ## b </search>"])

    def limit_cases() -> Iterator[Any]:
        for _ in range(n(200)):
            graph = create_parallel_search_graph(
                model, FlakySearcher(0.0), max_turns=rng.randint(1, 12)
            )
            yield graph, {"config": {"recursion_limit": rng.randint(2, 60)}}
        for turns in (7, 10, 25):
            yield create_parallel_search_graph(model, FlakySearcher(0.0), max_turns=turns), {}
        yield (
            create_parallel_search_graph(model, FlakySearcher(0.0), max_turns=10),
            {"context": {"max_turns": 40}},
        )

    rows.append(
        scenario("recursion limit 2-60 x max_turns 1-12, max_turns 7/10/25", "parallel-search",
                 limit_cases(), lambda: 0)
    )  # fmt: skip

    # 5. ParallelMuse: branches failing for good (context too long) or transiently, fuzzed output.
    # The fork graph's model emits token logprobs, so it forks at uncertain steps and the
    # failing calls include forked branches, not only independent rollouts.
    for label, error in (
        ("30% failing branches (context too long)", lambda: ValueError("prompt too long")),
        ("30% transient branch faults (retried)", lambda: ConnectionError("reset")),
    ):
        model = FuzzChatModel(fail_rate=0.3, seed=3, error=error)
        graph = muse.create_rollouts_graph(model, FlakySearcher(0.0), budget=4, retry_policy=RETRY)
        rows.append(
            scenario(label, "rollouts-majority", repeat(graph, model, n(100), good[1:]),
                     fault_count(model))
        )  # fmt: skip
        model = FuzzChatModel(fail_rate=0.3, seed=5, error=error, logprobs=True)
        graph = muse.create_parallel_muse_graph(
            model, FlakySearcher(0.0), budget=4, max_turns=3, retry_policy=RETRY
        )
        rows.append(
            scenario(label, "parallel-muse", repeat(graph, model, n(100), good),
                     fault_count(model))
        )  # fmt: skip
    model = FuzzChatModel(logprobs=True)
    searcher = FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS, seed=4)
    graph = muse.create_parallel_muse_graph(
        model, searcher, budget=3, max_turns=3, search_timeout=0.02, retry_policy=RETRY
    )
    rows.append(
        scenario("fuzzed model output + 30% search faults", "parallel-muse",
                 fuzz_cases(graph, model, n(200), seed=9), fault_count(model, searcher))
    )  # fmt: skip
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    total = {
        k: sum(r[k] for r in rows) for k in ("cases", "faults_injected", "completed", "crashes")
    }
    lines = [
        "# Reliability: bad model output, failing tools, limits, failing branches",
        "",
        f"Made by `{COMMAND}` (fake model and flaky searcher, seeded; no engine).",
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
        lines.append(
            f"| {r['scenario']} | {r['graph']} | {r['cases']} | {r['faults_injected']} | "
            f"{r['completed']} | {r['crashes']} | "
            f"{'-' if r['forked'] is None else r['forked']} | {reasons} |"
        )
    lines.append(
        f"| **total** | | **{total['cases']}** | **{total['faults_injected']}** | "
        f"**{total['completed']}** | **{total['crashes']}** | | |"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink case counts (quick try)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = run_all(args.scale)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reliability.md").write_text(markdown(rows), encoding="utf-8")
    payload = {"command": COMMAND, "commit": source_commit(), "scale": args.scale, "rows": rows}
    (args.out / "reliability.json").write_text(json.dumps(payload, indent=2) + "\n")
    return 1 if any(r["crashes"] or r["completed"] != r["cases"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
