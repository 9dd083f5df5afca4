"""One headline per experiment for the results index, read from its committed table.

:data:`HEADLINES` maps an experiment's name to a function of the checkout that returns its
headline figures in a few words, or ``None`` when its file is not committed (the index then
shows the run's ``n`` and its folder). An experiment without an entry has no headline; adding
one is a function here, reading the same file the experiment's full block reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.experiments.muse.muse_defaults import DEFAULTS_RUN
from lab.provenance import pct
from langgraph_parallel.apps.registry import PARTIAL

__all__ = ["HEADLINES", "headline"]


def _load(root: Path, path: str) -> dict[str, Any] | None:
    file = root / "benchmarks" / path
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None


def _parallel_search(root: Path) -> str | None:
    data = _load(root, "hotpotqa200/parallel_search.json")
    if data is None:
        return None
    ratio = data["llm_call_ratio_parallel_over_sequential"]
    return (
        f"untrained: {ratio['parallelizable']:.2f}x LLM calls of the sequential agent on "
        f"parallelizable questions, {ratio['sequential']:.2f}x on sequential ones"
    )


def _models(root: Path) -> str | None:
    data = _load(root, "models/models.json")
    if data is None:
        return None
    ratios = ", ".join(
        f"{name} {part['llm_call_ratio_parallel_over_sequential']['all']:.2f}x"
        for name, part in data.items()
    )
    return f"LLM calls of ParallelSearch over sequential: {ratios}"


def _sft(root: Path) -> str | None:
    data = _load(root, "sft/sft.json")
    if data is None:
        return None
    parts = []
    for dataset, part in data["datasets"].items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        ems = part["by_class"]["parallelizable"]
        if ratio:
            parts.append(
                f"{dataset} parallelizable: {ratio['llm_calls']:.2f}x LLM calls, EM "
                f"{ems['parallel-search']['em']:.3f} vs {ems['sequential']['em']:.3f}"
            )
    return "; ".join(parts) or None


def _grpo(root: Path) -> str | None:
    data = _load(root, "rl/sft_grpo/grpo.json")
    if data is None:
        return None
    every = data["datasets"]["hotpotqa"]["by_class"]["all"]
    names = list(data["models"])
    return "hotpotqa EM " + " vs ".join(f"{every[n]['em']:.3f} ({n})" for n in names)


def _muse(root: Path) -> str | None:
    data = _load(root, "parallel_muse/parallel_muse.json")
    if data is None:
        return None
    cost = data["all"]["partial_over_independent"]["agent_cost"]
    return f"agent cost of partial rollout vs independent rollouts: {cost:.2f}x"


def _muse_defaults(root: Path) -> str | None:
    data = _load(root, f"{DEFAULTS_RUN}/joins.json")
    if data is None:
        return None
    ratio, low, high = data["cost"]["user_ratio_interval"]
    return (
        f"a user's cost vs independent rollouts, the cache warm: {ratio:.2f}x [{low:.2f}, "
        f"{high:.2f}] ({data['n']} questions)"
    )


def _muse_repeats(root: Path) -> str | None:
    data = _load(root, "parallel_muse/repeats/compare.json")
    if data is None:
        return None
    skips = data[PARTIAL]["counts"]["after"]["repeat_skips"]
    ratio = data["muse_vs_rollouts"]["user_cost_ratio"]
    return f"{skips} searches not repeated; a user's cost vs independent rollouts {ratio:.2f}x"


def _muse_later(root: Path) -> str | None:
    data = _load(root, "parallel_muse/gpu-policy-later/later.json")
    if data is None:
        return None
    part = data["samples"]["all"]
    return (
        f"agent cost vs independent rollouts {part['partial_over_independent']['agent_cost']:.2f}x"
        f", vs forking at step 0 too {part['later_over_step0_agent_cost']:.2f}x"
    )


def _sweep(root: Path) -> str | None:
    data = _load(root, "parallel_muse/sweep.json")
    if data is None:
        return None
    costs = {n: r["partial_over_independent"]["agent_cost"] for n, r in data["runs"].items()}
    best = min(costs, key=costs.__getitem__)
    return f"lowest agent cost vs independent rollouts: {costs[best]:.2f}x ({best})"


def _engine(root: Path) -> str | None:
    data = _load(root, "engine/engine.json")
    if data is None:
        return None
    return f"{data['calls']} concurrent calls take {data['median_ratio']:.2f}x the sequential time"


def _engine_async(root: Path) -> str | None:
    data = _load(root, "engine/async/engines.json")
    if data is None:
        return None
    top = {name: runs[-1] for name, runs in data["engines"].items()}
    return f"questions/s at {next(iter(top.values()))['concurrency']} at once: " + ", ".join(
        f"{name} {run['throughput_q_per_s']:.3f}" for name, run in top.items()
    )


def _latency(root: Path) -> str | None:
    data = _load(root, "latency/latency.json")
    if data is None:
        return None
    speeds = ", ".join(f"{n} {s['single_tok_s']:.1f}" for n, s in data["settings"].items())
    return f"one stream, generated tokens/s: {speeds}"


def _latency_served(root: Path) -> str | None:
    served = (_load(root, "latency/latency.json") or {}).get("served")
    if not served:
        return None
    s = served["summary"]
    return f"median cold `ask --server` {s['median_cold_ask_s']:.2f} s, {s['questions']} questions"


def _latency_policies(root: Path) -> str | None:
    data = _load(root, "latency/policies/policies.json")
    if not data or not data["cells"]:
        return None
    ratios = ", ".join(
        f"{cell} {part['ratios']['wall_s']['ratio']:.2f}x" for cell, part in data["cells"].items()
    )
    return f"wall clock of the parallel policy over the sequential one: {ratios}"


def _serving(root: Path) -> str | None:
    data = _load(root, "serving/ngram/serving.json")
    if data is None:
        return None
    top = data["levels"][-1]
    shares = (("of_ceiling", "of the probe's ceiling"), ("of_replay", "of its requests' replay"))
    extra = "".join(f", {top[k]:.0%} {what}" for k, what in shares if top.get(k) is not None)
    return (
        f"{top['concurrency']} runs at once: {top['throughput_q_per_s']:.3f} questions/s, "
        f"{top['errors']} errors{extra}"
    )


def _retrieval(root: Path) -> str | None:
    data = _load(root, "retrieval/retrieval.json")
    if data is None:
        return None
    hotpot = data["hotpotqa"]
    kinds = ("bm25", "dense", "hybrid")
    return "hotpotqa recall@3: " + ", ".join(f"{k} {hotpot[k]['recall@3']:.3f}" for k in kinds)


def _reliability(root: Path) -> str | None:
    data = _load(root, "reliability.json")
    if data is None:
        return None
    rows = data["rows"]
    runs, crashes = sum(r["cases"] for r in rows), sum(r["crashes"] for r in rows)
    return f"{runs:,} runs, {crashes} crashes"


def _first_contact(root: Path) -> str | None:
    data = _load(root, "first_contact/first_contact.json")
    if data is None:
        return None
    dtype = data["dtype"]
    warm = dtype["by_dtype"][dtype["default"]]["warm_question_median_s"]
    cold = data["cold_start"]
    served = cold.get("daemon")
    later = f"later `ask` {served['later_median_s']:.1f} s, " if served else ""
    return f"{later}one-shot `ask` {cold['cold_median_s']:.1f} s, warm question {warm:.2f} s"


def _passage_budget(root: Path) -> str | None:
    data = _load(root, "retrieval/passage_budget/summary.json")
    if data is None:
        return None
    every, one = data["budgets"]["all"], data["budgets"]["1"]
    return (
        f"1 sentence a passage keeps {pct(one['sentence_recall'])} of gold sentences "
        f"({pct(every['sentence_recall'])} whole) at {one['tokens_per_query']:.0f} vs "
        f"{every['tokens_per_query']:.0f} tokens a query"
    )


HEADLINES: dict[str, Callable[[Path], str | None]] = {
    "parallel-search": _parallel_search,
    "models": _models,
    "sft": _sft,
    "grpo": _grpo,
    "parallel-muse": _muse,
    "parallel-muse-sweep": _sweep,
    "parallel-muse-defaults": _muse_defaults,
    "parallel-muse-repeats": _muse_repeats,
    "parallel-muse-later": _muse_later,
    "engine": _engine,
    "engine-async": _engine_async,
    "latency": _latency,
    "latency-served": _latency_served,
    "latency-policies": _latency_policies,
    "serving": _serving,
    "retrieval": _retrieval,
    "reliability": _reliability,
    "first-contact": _first_contact,
    "passage-budget": _passage_budget,
}
"""Experiment name -> its headline from the committed files of a checkout."""


def headline(name: str, root: Path) -> str | None:
    """Return experiment ``name``'s headline (``None``: none declared or its file is absent)."""
    render = HEADLINES.get(name)
    return render(root) if render else None
