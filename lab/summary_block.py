"""README.md's summary table: a headline figure of several blocks, each as its block says it.

``tests/unit/test_readme_results.py`` checks that every figure of it is in a full block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.experiments.muse.muse_defaults import (
    DEFAULTS_RUN,
    default_join_vs_first,
    default_join_vs_independent,
    load_joins,
    policy_of,
)
from lab.paired import PairedDifference
from lab.paths import checkout_dir
from lab.provenance import at_commit, part_commit

__all__ = ["render_summary"]


def _machine(cpu: dict[str, Any]) -> str:
    """Name a run's machine as the speed rows do (CPU, cores, native bfloat16 or not)."""
    return f"{cpu['cpu']}, {cpu['cores']} cores{', avx512_bf16' if cpu['avx512_bf16'] else ''}"


def render_summary(root: Path | None = None) -> str:
    """Render README.md's one small table: a headline figure of several blocks, as they say it."""
    bench = (root or checkout_dir()) / "benchmarks"
    sft = json.loads((bench / "sft" / "sft.json").read_text())["datasets"]
    sft_run = json.loads((bench / "sft" / "summary.json").read_text())["experiments"]["sft"]
    sft_where = f"{at_commit(sft_run)}, {_machine(sft_run['machine'])}"
    serving = [
        json.loads(p.read_text()) for p in sorted((bench / "serving").glob("*/serving.json"))
    ]
    reliability = json.loads((bench / "reliability.json").read_text())
    lines = [
        "| measure | figure | run |",
        "|---|---|---|",
    ]
    for dataset, part in sft.items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        by_graph = part["by_class"]["parallelizable"]
        if not ratio:
            continue
        ems = " / ".join(
            f"{by_graph[g]['em']:.3f}" for g in ("parallel-search", "sequential", "direct")
        )
        paired = part.get("paired_em", {})
        lines.append(
            f"| Trained ParallelSearch policy vs the equally trained sequential one, {dataset} "
            f"parallelizable questions | **{ratio['llm_calls']:.2f}x** LLM calls, "
            f"**{ratio['turns']:.2f}x** search turns; EM {ems} (parallel / sequential / closed "
            f"book){_interval(paired, 'parallel-search - sequential', 'parallelizable')} | "
            f"`benchmarks/sft/`{sft_where}, {by_graph['parallel-search']['n']} questions |"
        )
        vs_direct = paired.get("parallel-search - direct", {})
        cells = [
            f"{what} EM **{vs_direct[cls]['a']:.3f}** vs {vs_direct[cls]['b']:.3f}"
            f"{_interval(paired, 'parallel-search - direct', cls)}"
            for cls, what in (("parallelizable", "comparison"), ("sequential", "bridge (chain)"))
            if cls in vs_direct
        ]
        if cells:
            n = sum(d["n"] for c, d in vs_direct.items() if c != "all")
            lines.append(
                f"| Trained ParallelSearch policy vs closed book, {dataset} | {'; '.join(cells)} "
                f"| `benchmarks/sft/`{sft_where}, {n:.0f} questions |"
            )
    # ParallelMuse as a user runs it: the shipped defaults, the cache warm (issue 55).
    folder, joins = load_joins(bench / DEFAULTS_RUN)
    name, vs_first = default_join_vs_first(joins)
    first, cost = PairedDifference.from_dict(vs_first), joins["cost"]
    rollouts = PairedDifference.from_dict(default_join_vs_independent(joins))
    lines.append(
        "| ParallelMuse under its shipped defaults vs 8 independent rollouts (majority vote), the "
        "cache warm: a user's cost (agent + reduction tokens); its default join "
        f"({name}) vs its first rollout, and vs the rollouts' best join, EM | "
        f"**{cost['user_ratio']:.2f}x** (agent alone {cost['agent_ratio']:.2f}x); EM "
        f"{first.a:.3f} vs {first.b:.3f}, difference {first.interval(counts=False, mark_zero=True)}"
        f"; vs the rollouts {rollouts.a:.3f} vs {rollouts.b:.3f}, "
        f"{rollouts.interval(counts=False, mark_zero=True)} | `benchmarks/{DEFAULTS_RUN}/`, "
        f"{first.n} HotpotQA bridge questions, {policy_of(folder / 'run.json')} |"
    )
    # First contact replaces the latency row: measured on today's default engine and policy.
    contact = json.loads((bench / "first_contact" / "first_contact.json").read_text())
    cpu = contact["machine"]
    where = _machine(cpu)
    cold, dtype = contact["cold_start"], contact["dtype"]
    warm = dtype["by_dtype"][dtype["default"]]["warm_question_median_s"]
    first = cold["first_ever"]["process_wall_s"]
    if served := cold.get("daemon"):
        lines.append(
            f"| `ask` of the README question, new process, on the background server the first "
            f"`ask` starts: later asks, median of {len(served['later'])}; the first | "
            f"**{served['later_median_s']:.1f} s**; {served['first']['process_wall_s']:.1f} s | "
            f"`benchmarks/first_contact/`{part_commit(contact, 'cold_start')}, {where} |"
        )
    lines.append(
        f"| One-shot `ask --no-daemon` (engine start and stop included), median of "
        f"{len(cold['cold'])}; first ever (model preparation included) | "
        f"**{cold['cold_median_s']:.1f} s**; {first:.1f} s | "
        f"`benchmarks/first_contact/`{part_commit(contact, 'cold_start')}, {where} |"
    )
    lines.append(
        f"| Median warm question, default engine ({dtype['default']}, chosen for this CPU) | "
        f"**{warm:.2f} s** | `benchmarks/first_contact/`{part_commit(contact, 'dtype')}, {where} |"
    )
    for run in serving:
        if run["engine"].get("speculative_config", "default") is not None:
            top = run["levels"][-1]
            lines.append(
                f"| One `langgraph-parallel serve`, {top['concurrency']} runs at once | "
                f"{top['throughput_q_per_s']:.3f} questions/s, {top['errors']} errors | "
                f"`benchmarks/serving/`{at_commit(run)} |"
            )
    rows = reliability["rows"]
    lines.append(
        f"| Fault injection (fuzzed model output, flaky searcher) | "
        f"{sum(r['cases'] for r in rows):,} runs, **{sum(r['crashes'] for r in rows)} crashes** "
        f"| `benchmarks/reliability.md`{at_commit(reliability)} |"
    )
    return "\n".join(lines)


def _interval(paired: dict[str, dict[str, dict[str, Any]]], pair: str, cls: str) -> str:
    """``; difference +d [low, high] (...)`` of a paired EM comparison; nothing if not recorded."""
    if cls not in paired.get(pair, {}):
        return ""
    d = PairedDifference.from_dict(paired[pair][cls])
    return f"; difference {d.interval(counts=False, mark_zero=True)}"
