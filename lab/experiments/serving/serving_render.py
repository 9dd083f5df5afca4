"""The docs block of the serving experiment (``serving-results``), from ``serving.json`` files.

Files written before the engine probe and the fault accounting existed lack their fields; the
block shows ``–`` there rather than a figure the run did not measure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.paths import checkout_dir
from lab.provenance import at_commit

__all__ = ["render_serving"]

NONE = "–"


def _num(value: Any, spec: str) -> str:
    return NONE if value is None else format(value, spec)


def _ids(value: Any) -> str:
    return NONE if value is None else str(len(value))


def _engine(run: Mapping[str, Any]) -> str:
    spec = run["engine"].get("speculative_config", "default")
    return "no speculation" if spec is None else "n-gram speculation (default)"


def _level_lines(run: Mapping[str, Any]) -> list[str]:
    probes = {p["concurrency"]: p for p in run.get("engine_throughput") or []}
    one = run["levels"][0]["throughput_q_per_s"]
    lines = []
    for lv in run["levels"]:
        probe = probes.get(lv["concurrency"], {})
        rates = (
            f"{_num(probe.get('prefill_tok_per_s'), '.0f')} / "
            f"{_num(probe.get('decode_tok_per_s'), '.0f')}"
            if probe
            else NONE
        )
        lines.append(
            f"| {_engine(run)} | {lv['concurrency']} | {lv['throughput_q_per_s']:.3f} "
            f"| {lv['throughput_q_per_s'] / one:.2f}x | {lv['p50_s']:.1f} | {lv['p95_s']:.1f} "
            f"| {lv['max_running_requests']:.0f} | {_num(lv['prefix_cache_hit_rate'], '.0%')} "
            f"| {lv['answered']}/{lv['questions']} | {lv['errors']} | {rates} "
            f"| {_num(lv.get('ceiling_q_per_s'), '.3f')} | {_num(lv.get('of_ceiling'), '.0%')} "
            f"| {_num((lv.get('replay') or {}).get('ceiling_q_per_s'), '.3f')} "
            f"| {_num(lv.get('of_replay'), '.0%')} |"
        )
    return lines


def _retry(fault: Mapping[str, Any]) -> str:
    retry = fault.get("retry")
    if retry is None:
        return NONE
    if retry.get("deadline_s") is None:
        return f"default ({retry['max_attempts']} attempts)"
    return f"{retry['deadline_s']:g} s deadline ({retry['max_attempts']} attempts)"


def _fault_line(run: Mapping[str, Any]) -> str:
    fault = run["fault"]
    reasons = dict(fault["stop_reasons"])
    answered, max_turns = reasons.pop("answered", 0), reasons.pop("max_turns", 0)
    model_error = reasons.pop("model_error", 0)
    others = ", ".join(f"{n} {r}" for r, n in reasons.items()) or "0"
    flight, rest = fault.get("in_flight") or {}, fault.get("others") or {}
    in_flight = (
        f"{flight['answered']}/{flight['questions']}, p50 {_num(flight['p50_s'], '.1f')} s"
        if flight
        else NONE
    )
    return (
        f"| {_engine(run)} | {_retry(fault)} | {_num(fault.get('server_down_s'), '.0f')} "
        f"| {answered} | {max_turns} | {model_error} | {others} | {_num(fault.get('lost'), 'd')} "
        f"| {_ids(fault.get('missing'))} | {_ids(fault.get('duplicates'))} | {in_flight} "
        f"| {_num(rest.get('p50_s'), '.1f')} |"
    )


def render_serving(root: Path | None = None) -> str:
    """Render concurrent runs on one shared server per engine (block ``serving-results``)."""
    root = root or checkout_dir() / "benchmarks" / "serving"
    paths = sorted(root.glob("*/serving.json"))
    runs = [json.loads(p.read_text()) for p in paths]
    first = runs[0]
    made_by = first["command"].split(" --")[0]  # the command without its flags
    # Each engine's run names its own commit: the runs need not be made together.
    where = "; ".join(f"`{p.parent.name}/`{at_commit(r)}" for p, r in zip(paths, runs, strict=True))
    lines = [
        f"Made by `{made_by}` (`benchmarks/serving/*/`, commands there; {where}):"
        f" one `langgraph-parallel serve` on the 2-core CPU, the first "
        f"{first['levels'][0]['questions']} questions of the bundled HotpotQA sample through "
        "`parallel-search` (`smollm2-parallel`, hybrid index, `ChatVLLMServer`) with 1, 4 and 16 "
        "runs at once, the server's prefix cache emptied before each level. Engine alone: the "
        "same server's prefill / decode tok/s with that many requests at once; ceiling: the "
        "questions/s those rates allow for the level's uncached prompt and completion tokens "
        "per question; replay: the level's own requests sent again without the agent, each "
        "question's one after another, as many questions at once as the level ran, in "
        f"questions/s ({NONE}: not measured in that run).",
        "",
        "| engine | runs at once | questions/s | vs 1 run | p50 s | p95 s | engine batch reached "
        "| prefix-cache hits | answered | errors | engine alone tok/s | ceiling q/s "
        "| of ceiling | replay q/s | of replay |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines += _level_lines(run)
    faults = [run for run in runs if run.get("fault")]
    if faults:
        fault = faults[0]["fault"]
        lines += [
            "",
            f"Fault run ({fault['concurrency']} runs at once, {fault['questions']} questions; the "
            f"server killed with SIGKILL after {fault.get('kill_after', 16)} questions and started "
            "again). Lost: no answer for a model error or an exception, or no row; missing and "
            "repeated: question ids without a row or with more than one; in flight: the "
            "questions running while the server was down.",
            "",
            "| engine | retry policy | server down s | answered | max_turns | model_error "
            "| other stops | lost | ids missing | ids repeated | in flight: answered, p50 "
            "| others: p50 s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [_fault_line(run) for run in faults]
    return "\n".join(lines)
