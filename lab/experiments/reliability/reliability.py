"""Reliability table: bad model output, failing tools, limits, failing branches; no engine.

``langgraph-parallel bench run reliability`` writes ``OUT/reliability.{md,json}`` (default
``benchmarks/``). Every case runs a whole graph over a fake model
(:class:`~lab.experiments.reliability.faults.FuzzChatModel`) and a flaky searcher
(:class:`~lab.experiments.reliability.faults.FlakySearcher`), both seeded, so the table
repeats exactly; counting is :mod:`.reliability_table`'s. ``--limit N`` caps every scenario at N
cases (a quick try); setting ``scale`` shrinks them in proportion instead. A run with a crash,
or a case not completed, fails (status 1) after writing the table.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import GRAPHS, MUSE
from lab.experiments.reliability.faults import (
    FRAGMENTS,
    FlakySearcher,
    FuzzChatModel,
    fuzz_step,
)
from lab.experiments.reliability.reliability_table import markdown, scenario
from langgraph_parallel.errors import UserError, is_transient
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.paths import source_commit

__all__ = ["EXPERIMENT", "run_all"]

ALL_SEARCH_FAULTS = ("transient", "fatal", "empty", "garbage", "slow")


def fuzz_cases(graph: Any, model: FuzzChatModel, n: int, seed: int) -> Iterator[Any]:
    """Yield ``n`` cases of fuzzed model output and nonsense questions (seeded)."""
    rng = random.Random(seed)
    for _ in range(n):
        steps = [fuzz_step(rng) for _ in range(rng.randint(1, 5))]
        model.reset(steps)
        question = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 6)))
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        yield graph, {"question": question, "config": config}


def repeat(graph: Any, model: FuzzChatModel, n: int, outputs: list[Any]) -> Iterator[Any]:
    """Yield ``n`` cases of the same scripted model outputs."""
    for _ in range(n):
        model.reset(outputs)
        yield graph, {}


def fault_count(model: FuzzChatModel, searcher: FlakySearcher | None = None) -> Callable[[], int]:
    """Return a counter of the faults the model and the searcher injected so far."""
    return lambda: model.failures + (sum(searcher.failures.values()) if searcher else 0)


def run_all(scale: float, cap: int | None = None) -> list[dict[str, Any]]:
    """Run every scenario of the table; ``scale`` shrinks the case counts, ``cap`` caps them."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import RetryPolicy

    from langgraph_parallel import (
        MuseContext,
        create_parallel_muse_graph,
        independent_rollouts,
        parallel_search_rollouts,
    )
    from langgraph_parallel.baselines.direct import create_direct_graph
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph

    # Real backoff shape, millisecond delays: the table measures outcomes, not waiting.
    retry = RetryPolicy(0.001, 2.0, 0.01, max_attempts=3, jitter=False, retry_on=is_transient)

    def n(count: int) -> int:
        scaled = max(1, int(count * scale))
        return min(scaled, cap) if cap else scaled

    rows: list[dict[str, Any]] = []
    good = ["<search> a ## b </search>", "<search> c </search>", "<answer> d </answer>"]

    # 1. Fuzzed model output over a searcher failing 30% of the time (every failure mode).
    for name, decompose, saver in (("parallel-search", True, None), ("sequential", False, True)):
        model, searcher = FuzzChatModel(), FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS)
        graph = create_parallel_search_graph(
            model,
            searcher,
            decompose=decompose,
            max_turns=4,
            search_timeout=0.02,
            retry_policy=retry,
            checkpointer=InMemorySaver() if saver else None,
        )
        cases = fuzz_cases(graph, model, n(1000), seed=len(rows))
        title = "fuzzed model output + 30% search faults"
        rows.append(scenario(title, name, cases, fault_count(model, searcher)))
    model = FuzzChatModel()
    cases = fuzz_cases(create_direct_graph(model, retry_policy=retry), model, n(200), seed=7)
    rows.append(scenario("fuzzed model output", "direct", cases, fault_count(model)))

    # 2. 30% search failures, a well-behaved model.
    model, searcher = FuzzChatModel(), FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS, seed=1)
    graph = create_parallel_search_graph(model, searcher, search_timeout=0.02, retry_policy=retry)
    rows.append(
        scenario(
            "30% search faults",
            "parallel-search",
            repeat(graph, model, n(200), good),
            fault_count(model, searcher),
        )
    )

    # 3. 30% model failures (transient, retried; then context-too-long, reported at once).
    for label, error in (
        ("30% transient model faults (retried)", lambda: ConnectionError("reset")),
        ("30% context-too-long model faults", lambda: ValueError("prompt too long")),
    ):
        model = FuzzChatModel(fail_rate=0.3, seed=2, error=error)
        graph = create_parallel_search_graph(model, FlakySearcher(0.0), retry_policy=retry)
        rows.append(
            scenario(
                label, "parallel-search", repeat(graph, model, n(200), good), fault_count(model)
            )
        )

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
        scenario(
            "recursion limit 2-60 x max_turns 1-12, max_turns 7/10/25",
            "parallel-search",
            limit_cases(),
            lambda: 0,
        )
    )

    # 5. ParallelMuse: branches failing for good (context too long) or transiently, fuzzed output.
    # The fork graph's model emits token logprobs, so it forks at uncertain steps and the
    # failing calls include forked branches, not only independent rollouts.
    for label, error in (
        ("30% failing branches (context too long)", lambda: ValueError("prompt too long")),
        ("30% transient branch faults (retried)", lambda: ConnectionError("reset")),
    ):
        model = FuzzChatModel(fail_rate=0.3, seed=3, error=error)
        rollouts = parallel_search_rollouts(model, FlakySearcher(0.0))
        context = independent_rollouts(budget=4)
        graph = create_parallel_muse_graph(rollouts, context=context, retry_policy=retry)
        rows.append(
            scenario(
                label,
                "rollouts-majority",
                repeat(graph, model, n(100), good[1:]),
                fault_count(model),
            )
        )
        model = FuzzChatModel(fail_rate=0.3, seed=5, error=error, logprobs=True)
        rollouts = parallel_search_rollouts(model, FlakySearcher(0.0))
        context = MuseContext(budget=4, max_turns=3)
        graph = create_parallel_muse_graph(rollouts, context=context, retry_policy=retry)
        rows.append(
            scenario(label, "parallel-muse", repeat(graph, model, n(100), good), fault_count(model))
        )
    model = FuzzChatModel(logprobs=True)
    searcher = FlakySearcher(0.3, modes=ALL_SEARCH_FAULTS, seed=4)
    context = MuseContext(budget=3, max_turns=3, search_timeout=0.02)
    rollouts = parallel_search_rollouts(model, searcher)
    graph = create_parallel_muse_graph(rollouts, context=context, retry_policy=retry)
    rows.append(
        scenario(
            "fuzzed model output + 30% search faults",
            "parallel-muse",
            fuzz_cases(graph, model, n(200), seed=9),
            fault_count(model, searcher),
        )
    )
    return rows


def _run(run: Run) -> None:
    rows = run_all(run.settings["scale"], run.limit)
    payload = {
        "command": run.command,
        "commit": source_commit(),
        "machine": machine(),
        "scale": run.settings["scale"],
        "limit": run.limit,
        "rows": rows,
    }
    Experiment.write_tables(run.out, "reliability", payload, markdown(rows, run.command))
    failed = [
        r["scenario"]
        for r in rows
        if r["crashes"] or r["completed"] + r.get("refused", 0) != r["cases"]
    ]
    if failed:
        raise UserError(f"reliability: crashes or runs not completed in {failed}")


EXPERIMENT = Experiment(
    name="reliability",
    about="fault injection: fuzzed model output, flaky searcher, limits, failing branches",
    out="benchmarks",
    run=_run,
    limit=None,
    limit_means="cases per scenario",
    settings={"scale": 1.0},
    measures=(*GRAPHS, *MUSE, "lab/experiments/reliability"),
)
