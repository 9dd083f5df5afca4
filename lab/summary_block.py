"""README.md's summary table: a headline figure of several blocks, each as its block says it.

Every row names its run's folder, commit, machine and engine dtype as the run recorded them,
and says **stale** in its own row when the run predates today's adapter of the policy it ran
(:mod:`~.staleness`, the results index's rule) or a change to the code it measures
(:mod:`~.code_age`, the experiment's ``measures``). ``tests/unit/test_readme_results.py``
checks that every figure of it is in a full block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.catalog import EXPERIMENTS
from lab.code_age import code_change
from lab.experiments.latency.policies_analysis import ONE_AT_A_TIME, one_at_a_time_load
from lab.experiments.muse.muse_defaults import (
    DEFAULTS_RUN,
    default_join_vs_first,
    default_join_vs_independent,
    load_joins,
    policy_of,
)
from lab.experiments.reliability.reliability_table import crashes_text
from lab.experiments.sft.sft_tables import ratio_text
from lab.paired import PairedDifference, PairedRatio
from lab.paths import checkout_dir
from lab.provenance import at_commit, part_commit, short_commit
from lab.run_records import read_run
from lab.staleness import STALE, Shipped, run_verdict, shipped_adapters

__all__ = ["render_summary"]


def _machine(cpu: dict[str, Any], dtype: str | None = None) -> str:
    """Name a run's machine as the speed rows do (CPU, cores, native bfloat16 or not, dtype)."""
    where = f"{cpu['cpu']}, {cpu['cores']} cores{', avx512_bf16' if cpu['avx512_bf16'] else ''}"
    if cpu.get("gpu"):
        where += f", {cpu['gpu']}"
    return where + (f", engine {dtype}" if dtype else "")


def _dtypes(*run_jsons: Path) -> str:
    """Name the engine dtypes the harness folders' ``run.json`` recorded (``machines``)."""
    found = [
        m["dtype"]
        for path in run_jsons
        if path.is_file()
        for m in json.loads(path.read_text()).get("machines") or []
        if m.get("dtype")
    ]
    return " and ".join(dict.fromkeys(found)) or "dtype not recorded"


def _stale(
    root: Path,
    folder: Path,
    commits: list[str],
    measures: tuple[str, ...],
    shipped: dict[str, Shipped],
) -> str:
    """``; **stale**: measured at X, before adapter H / before C changed F`` (or nothing).

    The adapter verdict is the results index's (the folder's own records); the code verdict
    compares the row's commits with ``HEAD`` under ``measures``.
    """
    reasons = []
    record = read_run(folder)
    if record is not None:
        verdict = run_verdict(record.models, record.commits, record.hashes, shipped, root)
        if verdict and verdict[0] == STALE:
            reasons += [f"adapter `{shipped[m].hash}` of `{m}`" for m in verdict[1]]
    change = code_change(root, commits, measures)
    if change is not None:
        # Plain text, not code: a file the change removed is no path of the checkout.
        files = ", ".join(change.files[:3])
        more = f" (+{len(change.files) - 3} more)" if len(change.files) > 3 else ""
        reasons.append(f"{short_commit(change.commit)} changed {files}{more}")
    if not reasons:
        return ""
    since = ", ".join(short_commit(c) for c in commits)
    return f"; **stale**: measured at {since}, before " + " and before ".join(reasons)


def render_summary(root: Path | None = None) -> str:
    """Render README.md's one small table: a headline figure of several blocks, as they say it."""
    root = root or checkout_dir()
    bench = root / "benchmarks"
    shipped = shipped_adapters(root)
    lines = [
        "| measure | figure | run |",
        "|---|---|---|",
        *_sft_rows(root, shipped),
        _muse_row(root, shipped),
        *_first_contact_rows(root, shipped),
        *_serving_rows(root, shipped),
    ]
    reliability = json.loads((bench / "reliability.json").read_text())
    rows = reliability["rows"]
    machine = reliability.get("machine")
    where = f", {_machine(machine)}" if machine else ", machine not recorded"
    commits = [reliability["commit"]] if reliability.get("commit") else []
    lines.append(
        f"| Fault injection (fuzzed model output, flaky searcher) | "
        f"{sum(r['cases'] for r in rows):,} runs, {crashes_text(rows)} "
        f"| `benchmarks/reliability.md`{at_commit(reliability)}{where}, a fake model (no "
        f"engine, no dtype)"
        f"{_stale(root, bench, commits, EXPERIMENTS['reliability'].measures, shipped)} |"
    )
    return "\n".join(lines)


def _sft_rows(root: Path, shipped: dict[str, Shipped]) -> list[str]:
    """Render the trained policies' rows: cost ratios and EM differences, each with its interval."""
    bench = root / "benchmarks"
    sft = json.loads((bench / "sft" / "sft.json").read_text())["datasets"]
    sft_run = json.loads((bench / "sft" / "summary.json").read_text())["experiments"]["sft"]
    stale = _stale(root, bench / "sft", [sft_run["commit"]], EXPERIMENTS["sft"].measures, shipped)
    lines = []
    for dataset, part in sft.items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        by_graph = part["by_class"]["parallelizable"]
        if not ratio:
            continue
        graphs = ("parallel-search", "sequential", "direct")
        dtype = _dtypes(*(bench / "sft" / dataset / g / "run.json" for g in graphs))
        sft_where = f"{at_commit(sft_run)}, {_machine(sft_run['machine'], dtype)}"
        ems = " / ".join(f"{by_graph[g]['em']:.3f}" for g in graphs)
        paired = part.get("paired_em", {})
        calls, turns = (ratio_text(part, "parallelizable", k) for k in ("llm_calls", "turns"))
        clock, clock_where = _wall_clock(root, shipped) if dataset == "hotpotqa" else ("", "")
        lines.append(
            f"| Trained ParallelSearch policy vs the equally trained sequential one, {dataset} "
            f"parallelizable questions | **{calls}** LLM calls, **{turns}** search turns (ratios "
            f"of means, 95% paired bootstrap){clock}; EM {ems} (parallel / sequential / closed "
            f"book){_interval(paired, 'parallel-search - sequential', 'parallelizable')} | "
            f"`benchmarks/sft/`{sft_where}, {by_graph['parallel-search']['n']} questions"
            f"{stale}{clock_where} |"
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
                f"| `benchmarks/sft/`{sft_where}, {n:.0f} questions{stale} |"
            )
    return lines


def _wall_clock(root: Path, shipped: dict[str, Shipped]) -> tuple[str, str]:
    """Return the same pair's wall-clock ratio, one question at a time, and where it ran.

    Read from ``bench run latency-policies``' table: the figure (``; wall clock ... **0.95x
    [...]**``) and its run (``; wall clock: benchmarks/latency/policies/ at ...``), or two
    empty strings before its first run.
    """
    folder = root / "benchmarks" / "latency" / "policies"
    path = folder / "policies.json"
    if not path.is_file():
        return "", ""
    result = json.loads(path.read_text(encoding="utf-8"))
    cells = result["cells"]
    parts = [
        f"{how} **{PairedRatio.from_dict(cells[cell]['ratios']['wall_s']).interval(n=False)}**"
        for cell, how in zip(ONE_AT_A_TIME, ("closed corpus", "web-search latency"), strict=True)
        if cell in cells
    ]
    if not parts:
        return "", ""
    n = " and ".join(str(cells[c]["n"]) for c in ONE_AT_A_TIME if c in cells)
    # The machine's load while the rows ran: above a few per core, the times are upper bounds.
    load = one_at_a_time_load(result) or 0.0
    steps = [
        PairedRatio.from_dict(cells[c]["ratios"]["engine_steps"]).interval(n=False)
        for c in ONE_AT_A_TIME
        if c in cells and "engine_steps" in cells[c]["ratios"]
    ][:1]
    figure = (
        f"; wall clock one question at a time, {', '.join(parts)}"
        + "".join(f", engine steps {s} (the load-free count)" for s in steps)
        + f" (n={n} comparison questions, mean load average {load:.1f})"
    )
    machines = result.get("machines") or []
    where = "; ".join(_machine(m, m.get("dtype") or "dtype not recorded") for m in machines)
    commits = list(result.get("commits") or [])
    measures = EXPERIMENTS["latency-policies"].measures
    stale = _stale(root, folder, commits, measures, shipped)
    since = ", ".join(short_commit(c) for c in commits) or "an unrecorded commit"
    return figure, (
        f"; wall clock: `benchmarks/latency/policies/` at {since}, "
        f"{where or 'machine not recorded'}{stale}"
    )


def _muse_row(root: Path, shipped: dict[str, Shipped]) -> str:
    """ParallelMuse as a user runs it: the shipped defaults, the cache warm (issue 55)."""
    folder, joins = load_joins(root / "benchmarks" / DEFAULTS_RUN)
    run = json.loads((folder / "run.json").read_text())
    name, vs_first = default_join_vs_first(joins)
    first, cost = PairedDifference.from_dict(vs_first), joins["cost"]
    rollouts = PairedDifference.from_dict(default_join_vs_independent(joins))
    machines = run.get("machines") or []
    where = "; ".join(_machine(m, m.get("dtype") or "dtype not recorded") for m in machines)
    commits = list(run.get("commits") or [])
    measures = EXPERIMENTS["parallel-muse-defaults"].measures
    stale = _stale(root, folder, commits, measures, shipped)
    return (
        "| ParallelMuse under its shipped defaults vs 8 independent rollouts (majority vote), the "
        "cache warm: a user's cost (agent + reduction tokens); its default join "
        f"({name}) vs its first rollout, and vs the rollouts' best join, EM | "
        f"**{_ratio(cost, 'user')}** (agent alone {_ratio(cost, 'agent')}; ratios of means, 95% "
        f"paired bootstrap); EM {first.a:.3f} vs {first.b:.3f}, difference "
        f"{first.interval(counts=False, mark_zero=True)}; vs the rollouts {rollouts.a:.3f} vs "
        f"{rollouts.b:.3f}, {rollouts.interval(counts=False, mark_zero=True)} | "
        f"`benchmarks/{DEFAULTS_RUN}/` at {', '.join(short_commit(c) for c in commits)}, "
        f"{where or 'machine not recorded'}, {first.n} HotpotQA bridge questions, "
        f"{policy_of(folder / 'run.json')}{stale} |"
    )


def _first_contact_rows(root: Path, shipped: dict[str, Shipped]) -> list[str]:
    """``ask`` as a new user meets it, and the warm question (measured on the default engine)."""
    folder = root / "benchmarks" / "first_contact"
    contact = json.loads((folder / "first_contact.json").read_text())
    cold, dtype = contact["cold_start"], contact["dtype"]
    measures = EXPERIMENTS["first-contact"].measures
    # The one-shot and served asks ran the engine's default dtype for this CPU (``dtype``'s
    # ``default``, measured on the same machine).
    where = _machine(contact["machine"], f"{dtype['default']} (this CPU's default)")
    cold_commits = [(cold.get("commit") or contact["commit"])]
    cold_stale = _stale(root, folder, cold_commits, measures, shipped)
    warm = dtype["by_dtype"][dtype["default"]]["warm_question_median_s"]
    first = cold["first_ever"]["process_wall_s"]
    lines = []
    if served := cold.get("daemon"):
        lines.append(
            f"| `ask` of the README question, new process, on the background server the first "
            f"`ask` starts: later asks, median of {len(served['later'])}; the first | "
            f"**{served['later_median_s']:.1f} s**; {served['first']['process_wall_s']:.1f} s | "
            f"`benchmarks/first_contact/`{part_commit(contact, 'cold_start')}, {where}"
            f"{cold_stale} |"
        )
    lines.append(
        f"| One-shot `ask --no-daemon` (engine start and stop included), median of "
        f"{len(cold['cold'])}; first ever (model preparation included) | "
        f"**{cold['cold_median_s']:.1f} s**; {first:.1f} s | "
        f"`benchmarks/first_contact/`{part_commit(contact, 'cold_start')}, {where}{cold_stale} |"
    )
    dtype_commits = [(dtype.get("commit") or contact["commit"])]
    lines.append(
        f"| Median warm question, default engine ({dtype['default']}, chosen for this CPU) | "
        f"**{warm:.2f} s** | `benchmarks/first_contact/`{part_commit(contact, 'dtype')}, "
        f"{_machine(contact['machine'], dtype['default'])}"
        f"{_stale(root, folder, dtype_commits, measures, shipped)} |"
    )
    return lines


def _serving_rows(root: Path, shipped: dict[str, Shipped]) -> list[str]:
    """One shared ``serve`` under 16 runs at once (the default engine's run)."""
    lines = []
    for path in sorted((root / "benchmarks" / "serving").glob("*/serving.json")):
        run = json.loads(path.read_text())
        if run["engine"].get("speculative_config", "default") is None:
            continue
        record = path.parent / "summary.json"
        machine = (
            json.loads(record.read_text())["experiments"]["serving"]["machine"]
            if record.is_file()
            else None
        )
        dtype = run["engine"].get("dtype") or "default dtype (not recorded)"
        where = _machine(machine, dtype) if machine else "machine not recorded"
        commits = [run["commit"]] if run.get("commit") else []
        stale = _stale(root, path.parent, commits, EXPERIMENTS["serving"].measures, shipped)
        top = run["levels"][-1]
        lines.append(
            f"| One `langgraph-parallel serve`, {top['concurrency']} runs at once | "
            f"{top['throughput_q_per_s']:.3f} questions/s, {top['errors']} errors | "
            f"`benchmarks/serving/`{at_commit(run)}, {where}{stale} |"
        )
    return lines


def _ratio(cost: dict[str, Any], who: str) -> str:
    """``0.73x [0.68, 0.77]`` from ``joins.json``'s cost (the ratio alone if it has no interval)."""
    recorded = cost.get(f"{who}_ratio_interval")
    if recorded:
        ratio, low, high = recorded
        return f"{ratio:.2f}x [{low:.2f}, {high:.2f}]"
    return f"{cost[f'{who}_ratio']:.2f}x"


def _interval(paired: dict[str, dict[str, dict[str, Any]]], pair: str, cls: str) -> str:
    """``; difference +d [low, high] (...)`` of a paired EM comparison; nothing if not recorded."""
    if cls not in paired.get(pair, {}):
        return ""
    d = PairedDifference.from_dict(paired[pair][cls])
    return f"; difference {d.interval(counts=False, mark_zero=True)}"
