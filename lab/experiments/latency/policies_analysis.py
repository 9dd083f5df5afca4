"""The tables of ``bench run latency-policies``: the two policies paired per question, per cell.

Reads the rows :mod:`.policies` wrote under ``OUT/CELL/`` (a cell at sixteen at once is its
rounds' folders together: a question's figure is its mean over the rounds) and writes
``OUT/policies.json`` and ``OUT/policies.md``; ``docs/results.md``'s block
``latency-policies-results`` and the README's ParallelSearch row are rendered from the JSON.

Per cell and policy, means over the questions both policies answered without an error: wall
time, LLM calls, generated and prompt tokens (cached, uncached), the time split (prefill,
decode, queue and the engine's frontend, search, the graph's rest), EM and F1; the engine's
steps, tokens a step and the n-gram drafter's acceptance (sums over the questions at one at a
time, over the passes at sixteen). Parallel over sequential: ratios of means with a 95% paired
bootstrap over the questions (:func:`~lab.paired.paired_ratio`), and the EM difference
(:func:`~lab.paired.paired_bootstrap`).
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab.base import Experiment
from lab.paired import PairedDifference, PairedRatio, paired_bootstrap, paired_ratio
from lab.provenance import short_commit
from langgraph_parallel.eval.results import results_in

__all__ = [
    "cell_table",
    "drafter_steps",
    "one_at_a_time_load",
    "render_policies",
    "render_result",
    "summarise",
    "write_tables",
]

PARALLEL, SEQUENTIAL = "parallel-search", "sequential"
MEANS = (
    "wall_s",
    "llm_calls",
    "completion_tokens",
    "prompt_tokens",
    "cached_prompt_tokens",
    "uncached_prompt_tokens",
    "prefill_s",
    "decode_s",
    "queue_s",
    "engine_other_s",
    "search_s",
    "graph_s",
    "turns",
    "sub_queries",
    "em",
    "f1",
    "load1",
)
RATIOS = (
    "wall_s",
    "llm_calls",
    "completion_tokens",
    "uncached_prompt_tokens",
    "prefill_s",
    "decode_s",
    "search_s",
    "engine_steps",
)
COUNTERS = ("steps", "generated", "drafts", "draft_tokens", "accepted")
_CELL = re.compile(r"^(?P<searcher>[a-z]+)-c(?P<c>\d+)(?:-r(?P<round>\d+))?$")
Rows = Sequence[Mapping[str, Any]]


def _value(row: Mapping[str, Any], key: str) -> float:
    if key == "engine_steps":
        return float((row.get("engine_steps") or {}).get("steps", 0))
    if key == "uncached_prompt_tokens":
        return float(row["prompt_tokens"]) - float(row["cached_prompt_tokens"])
    return float(row.get(key) or 0.0)


def _per_question(rows: Rows, graph: str, key: str) -> dict[str, float]:
    """Question id -> ``key``'s mean over the rounds that ran it on ``graph``."""
    found: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["graph"] == graph and not row.get("error"):
            found[str(row["id"])].append(_value(row, key))
    return {qid: statistics.fmean(values) for qid, values in found.items()}


def _engine(rows: Rows, passes: Rows, graph: str, ids: set[str]) -> dict[str, Any]:
    """Return ``graph``'s engine counters: per question where rows have them, else passes'."""
    per_row = [
        r["engine_steps"]
        for r in rows
        if r["graph"] == graph and "engine_steps" in r and str(r["id"]) in ids
    ]
    parts = per_row or [p["engine_steps"] for p in passes if p["graph"] == graph]
    totals = {key: sum(int(p.get(key, 0)) for p in parts) for key in COUNTERS}
    requests = [
        q for r in rows if r["graph"] == graph and str(r["id"]) in ids for q in r["requests"]
    ]
    decode = sum(q["decode_s"] for q in requests)
    after_first = sum(max(q["generated_tokens"] - 1, 0) for q in requests)
    return {
        **totals,
        "per": "question" if per_row else "pass",
        "tokens_per_step": round(totals["generated"] / totals["steps"], 2)
        if totals["steps"]
        else None,
        "acceptance": round(totals["accepted"] / totals["draft_tokens"], 3)
        if totals["draft_tokens"]
        else None,
        # The first token of a request comes with its prefill; the rest are the decode's.
        "decode_tok_per_s": round(after_first / decode, 1) if decode else None,
        "prefill_tok_per_s": _prefill_rate(requests),
    }


def _prefill_rate(requests: Rows) -> float | None:
    seconds = sum(q["prefill_s"] for q in requests)
    tokens = sum(q["prompt_tokens"] - q["cached_tokens"] for q in requests)
    return round(tokens / seconds, 1) if seconds else None


def cell_table(rows: Rows, passes: Rows = ()) -> dict[str, Any]:
    """Return one cell's figures: per-policy means and engine counters, ratios, EM difference.

    Args:
        rows: The cell's rows, both policies (every round of it).
        passes: Its ``passes.jsonl`` records (sixteen at once).

    Raises:
        ValueError: No question was answered by both policies.
    """
    walls = {g: _per_question(rows, g, "wall_s") for g in (PARALLEL, SEQUENTIAL)}
    ids = sorted(set(walls[PARALLEL]) & set(walls[SEQUENTIAL]))
    if not ids:
        raise ValueError("no question answered by both policies in this cell")
    policies: dict[str, Any] = {}
    for graph in (PARALLEL, SEQUENTIAL):
        means: dict[str, Any] = {}
        for key in MEANS:
            values = _per_question(rows, graph, key)
            means[key] = round(statistics.fmean(values[i] for i in ids), 4)
        means["engine"] = _engine(rows, passes, graph, set(ids))
        policies[graph] = means
    ratios = {}
    for key in RATIOS:
        a, b = (_per_question(rows, g, key) for g in (PARALLEL, SEQUENTIAL))
        if sum(b[i] for i in ids):
            ratios[key] = asdict(paired_ratio([a[i] for i in ids], [b[i] for i in ids]))
    ems = [_per_question(rows, g, "em") for g in (PARALLEL, SEQUENTIAL)]
    em = paired_bootstrap([ems[0][i] for i in ids], [ems[1][i] for i in ids])
    errors = sum(1 for r in rows if r.get("error"))
    return {
        "n": len(ids),
        "errors": errors,
        "policies": policies,
        "ratios": ratios,
        "em": asdict(em),
    }


def drafter_steps(rows: Rows) -> dict[str, Any] | None:
    """Return each policy's engine steps a question, counted and replayed per drafter.

    From the rows that kept their requests' tokens (one question at a time), in the order
    they ran (:mod:`.drafts`); ``None`` when none did.
    """
    from lab.experiments.latency.drafts import replay_policy

    out: dict[str, Any] = {}
    for graph in (PARALLEL, SEQUENTIAL):
        own = [
            r
            for r in rows
            if r["graph"] == graph
            and not r.get("error")
            and r.get("requests")
            and all("output_ids" in q for q in r["requests"])
        ]
        if not own:
            return None
        counted = sum(int((r.get("engine_steps") or {}).get("steps", 0)) for r in own)
        replayed = replay_policy(r["requests"] for r in own)
        out[graph] = {
            "questions": len(own),
            "engine_steps": round(counted / len(own), 1),
            "replayed": {
                name: {**v, "steps_a_question": round(v["steps"] / len(own), 1)}
                for name, v in replayed.items()
            },
        }
    return out


def _cells(out: Path) -> dict[str, list[Path]]:
    """Cell -> its folders (a cell at sixteen at once has one per round), in running order."""
    found: dict[str, list[Path]] = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        match = _CELL.match(folder.name)
        if match:
            found.setdefault(f"{match['searcher']}-c{match['c']}", []).append(folder)
    order = {"closed": 0, "web": 1}
    return dict(
        sorted(found.items(), key=lambda kv: (int(kv[0].split("-c")[1]), order.get(kv[0], 2)))
    )


def _passes(folder: Path) -> list[dict[str, Any]]:
    path = folder / "passes.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [json.loads(line) for line in lines if line.strip()]


def summarise(out: Path, command: str | None = None) -> dict[str, Any]:
    """Return every cell's :func:`cell_table`, with the run's commits, machines and models."""
    run = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
    result: dict[str, Any] = {
        "command": command,
        "commits": run.get("commits", []),
        "machines": run.get("machines", []),
        "models": run.get("models", {}),
        "web_wait_s": run.get("web", [])[:2],
        "engine": run.get("engine", {}),
        "cells": {},
    }
    for cell, folders in _cells(out).items():
        rows = [r for f in folders for r in results_in(f)]
        passes = [p for f in folders for p in _passes(f)]
        if rows:
            result["cells"][cell] = {"rounds": len(folders), **cell_table(rows, passes)}
            if drafters := drafter_steps(rows):
                result["cells"][cell]["drafters"] = drafters
    return result


ONE_AT_A_TIME = ("closed-c1", "web-c1")
"""The cells the README's row quotes."""


def one_at_a_time_load(result: Mapping[str, Any]) -> float | None:
    """Return the mean load average of the one-at-a-time cells' rows (both policies)."""
    loads = [
        p["load1"]
        for cell in ONE_AT_A_TIME
        if cell in result["cells"]
        for p in result["cells"][cell]["policies"].values()
    ]
    return sum(loads) / len(loads) if loads else None


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _where(result: Mapping[str, Any]) -> str:
    commits = ", ".join(short_commit(c) for c in result.get("commits") or []) or "not recorded"
    machines = "; ".join(
        f"{m['cpu']}, {m['cores']} cores{', avx512_bf16' if m.get('avx512_bf16') else ''}, "
        f"engine {m.get('dtype', 'dtype not recorded')}"
        for m in result.get("machines") or []
    )
    return f"commit {commits}, {machines or 'machine not recorded'}"


def render_policies(path: Path | None = None) -> str:
    """Render the tables of ``policies.json`` (the committed one by default)."""
    from lab.paths import checkout_dir

    path = path or checkout_dir() / "benchmarks" / "latency" / "policies" / "policies.json"
    if not path.is_file():
        return "Not run yet: `langgraph-parallel bench run latency-policies`."
    return render_result(json.loads(path.read_text(encoding="utf-8")))


def render_result(result: Mapping[str, Any]) -> str:
    """Render a :func:`summarise` result as the page's two tables."""
    lines = [
        f"`{result.get('command') or 'langgraph-parallel bench run latency-policies'}` at "
        f"{_where(result)}; means a question over the questions both policies answered.",
        "",
        "| cell | policy | wall s | LLM calls | generated tokens | uncached prompt tokens "
        "| prefill s | decode s | search s | graph s | engine steps | tokens a step "
        "| drafts accepted | EM | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell, part in result["cells"].items():
        for graph, m in part["policies"].items():
            e = m["engine"]
            steps = e["steps"] / part["n"] if e["per"] == "question" else None
            lines.append(
                f"| {cell} | {graph} | {m['wall_s']:.2f} | {m['llm_calls']:.2f} "
                f"| {m['completion_tokens']:.1f} | {m['uncached_prompt_tokens']:.0f} "
                f"| {m['prefill_s']:.2f} | {m['decode_s']:.2f} | {m['search_s']:.2f} "
                f"| {m['graph_s']:.3f} | {_num(steps, 1)} | {_num(e['tokens_per_step'])} "
                f"| {_num(e['acceptance'], 3)} | {m['em']:.3f} | {m['load1']:.1f} |"
            )
    if (load := one_at_a_time_load(result)) is not None:
        lines += ["", f"Mean load average of the rows one question at a time: {load:.1f}."]
    lines += [
        "",
        "Parallel over sequential, ratios of means (95% paired bootstrap over the questions):",
        "",
        "| cell | n | wall clock | LLM calls | generated tokens | uncached prompt tokens "
        "| engine steps | decode s | EM difference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell, part in result["cells"].items():
        r = {k: PairedRatio.from_dict(v).interval(n=False) for k, v in part["ratios"].items()}
        em = PairedDifference.from_dict(part["em"])
        lines.append(
            f"| {cell} | {part['n']} | **{r['wall_s']}** | {r['llm_calls']} "
            f"| {r['completion_tokens']} | {r.get('uncached_prompt_tokens', '–')} "
            f"| {r.get('engine_steps', '–')} | {r.get('decode_s', '–')} "
            f"| {em.interval(counts=False, mark_zero=True)} |"
        )
    replays = {c: p["drafters"] for c, p in result["cells"].items() if p.get("drafters")}
    if replays:
        names = list(next(iter(next(iter(replays.values())).values()))["replayed"])
        lines += [
            "",
            "Engine steps a question: counted by the engine, and the n-gram drafter replayed on "
            "the replies it wrote (`lab/experiments/latency/drafts.py`; tokens a step in "
            "brackets):",
            "",
            f"| cell | policy | counted | {' | '.join(names)} |",
            "|---|---|---|" + "---|" * len(names),
        ]
        for cell, drafters in replays.items():
            for graph, d in drafters.items():
                cells = " | ".join(
                    f"{v['steps_a_question']:.1f} ({_num(v['tokens_per_step'])})"
                    for v in d["replayed"].values()
                )
                lines.append(f"| {cell} | {graph} | {d['engine_steps']:.1f} | {cells} |")
    return "\n".join(lines)


def write_tables(out: Path, *, command: str | None = None) -> Path:
    """Write ``OUT/policies.json`` and ``OUT/policies.md`` from the cells' rows."""
    result = summarise(out, command)
    page = "# Parallel vs sequential policy, wall clock\n\n" + render_result(result) + "\n"
    return Experiment.write_tables(out, "policies", result, page, indent=1)
