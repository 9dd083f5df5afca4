"""The ParallelMuse experiments' tables: ``parallel_muse.md``, ``sweep.md`` and the docs block."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.experiments.muse.muse_analysis import (
    AGENT,
    INDEPENDENT,
    JOINS,
    PARTIAL,
    REDUCTION,
)
from lab.paired import PairedDifference
from lab.paths import checkout_dir
from lab.provenance import commits_of, shown_command

__all__ = [
    "LATER_RUN",
    "MAIN_RUN",
    "SWEEP",
    "flags",
    "markdown",
    "muse_setting",
    "render_parallel_muse",
    "sweep_markdown",
]

MAIN_RUN = "parallel_muse/gpu-policy"
"""The run the docs and the README quote, under ``benchmarks/``: the one on the shipped policy
(trained on a GPU, 2026-11-26); the experiment's default ``--out`` keeps the run on the policy
before it, labelled stale by the index."""
LATER_RUN = "parallel_muse/gpu-policy-later"
"""Its partial rollouts again with ``min_branch_step=1`` (the graph's default since), paired with
``MAIN_RUN``'s independent rollouts into ``later.json`` (``bench run parallel-muse-later``,
:mod:`.later`)."""

_TOP1 = {"top_k_steps": 1, "samples_per_step": 7}
SWEEP: dict[str, dict[str, Any]] = {
    "default": {},
    "entropy": {"mode": "entropy"},
    "region-reasoning": {"region": "reasoning"},
    "region-all": {"region": "all"},
    # Pinned to 0, the graph's default until 2026-11-26 that its committed runs measured.
    "ppl-top1": {"mode": "ppl", **_TOP1, "min_branch_step": 0},
    "entropy-top1": {"mode": "entropy", **_TOP1},
    "all-top1": {"region": "all", **_TOP1},
    "ppl-top1-later": {"mode": "ppl", **_TOP1, "min_branch_step": 1},
    "top4": {"top_k_steps": 4, "samples_per_step": 1},
    "rounds2": {"top_k_steps": 1, "samples_per_step": 2, "rounds": 3},
    "initial2": {"initial_rollouts": 2, "top_k_steps": 2, "samples_per_step": 3},
    "extract-select": {"join": "select", "report_style": "extract", "reports": "distinct"},
}
"""Sweep settings over the default of their runs (1 initial rollout, 2 exploration branch points
x 3 samples ranked by perplexity, 1 round, the remainder fresh; forks from step 1 since
2026-11-26; 4 samples, shared among the points found, from f8a7c0e on)."""


def flags(fields: dict[str, Any]) -> list[str]:
    """Return ``bench``'s flags for spec fields, as the tables and the runs' records show them.

    ``{"mode": "ppl", "fresh_cache": True}`` -> ``--mode ppl --fresh-cache``; a tuple joins
    with commas. The committed runs recorded their settings this way.
    """
    words: list[str] = []
    for key, value in fields.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        else:
            words += [flag, ",".join(value) if isinstance(value, tuple) else str(value)]
    return words


def _cell(value: float | None, key: str) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if key.startswith("em") else f"{value:.1f}"


def _table(keys: tuple[str, ...], rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| | n | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for name, m in rows.items():
        lines.append(f"| {name} | {m['n']} | " + " | ".join(_cell(m[k], k) for k in keys) + " |")
    return lines


def _ratios(part: dict[str, Any]) -> str:
    ratios = ", ".join(
        f"{k} {v:.3f}x" for k, v in part["partial_over_independent"].items() if v is not None
    )
    best = part["best_join"]
    gain = "" if best["relative_gain"] is None else f" ({best['relative_gain']:+.0%})"
    split = "; ".join(
        f"first fork at {name}: {g['n']} questions, agent_cost {g['agent_cost']:.3f}x"
        for name, g in part.get("by_first_branch", {}).items()
        if g["agent_cost"] is not None
    )
    return (
        f"Partial over independent: {ratios} ({split}). Best join of parallel-muse: {best['join']} "
        f"EM {best['em']:.3f} vs its first rollout alone {best['em_single']:.3f}{gain}; "
        f"independent rollouts, same join: {best['independent_same_join']:.3f}."
    )


def markdown(result: dict[str, Any]) -> str:
    """Return the tables of ``parallel_muse.md``."""
    lines = [
        "# ParallelMuse: partial vs independent rollouts on multi-hop chains",
        "",
        f"Command: `{result['command']}`",
        "",
        "Means per question. Cost = uncached prefill + generated tokens as the engine "
        "counted them; agent = the rollouts, reduction = reports + analyst.",
        "",
    ]
    parts = {**result["datasets"], "all": result["all"]}
    for name, part in parts.items():
        lines += [
            f"## {name}",
            "",
            "Agent phase:",
            "",
            *_table(AGENT, part["graphs"]),
            "",
            "Reduction and joins:",
            "",
            *_table(REDUCTION + JOINS, part["graphs"]),
            "",
            _ratios(part),
            "",
            *_paired(part),
        ]
    return "\n".join(lines)


def _paired(part: dict[str, Any]) -> list[str]:
    """Return the joins' EM differences with their intervals (none for results before them)."""
    pairs = part.get("paired", {})
    if not pairs:
        return []
    lines = ["EM differences, 95% paired bootstrap (single = the graph's own first rollout):", ""]
    for name, d in pairs.items():
        diff = PairedDifference.from_dict(d)
        lines.append(f"- {name}: {diff.a:.3f} - {diff.b:.3f} = {diff.interval(mark_zero=True)}")
    return [*lines, ""]


def sweep_markdown(result: dict[str, Any]) -> str:
    """Return the table of ``sweep.md``."""
    keys = (
        "agent_cost",
        "agent_cost_per_step",
        "exploration_tokens",
        "reasoning_tokens",
        "forks",
        "steps_per_trajectory",
        "reduction_cost",
        "em_join_graph",
        "em_join_majority",
        "em_any",
    )
    lines = [
        "# ParallelMuse sweep (agent phase, MuSiQue)",
        "",
        f"Command: `{result['command']}`",
        "",
        "Each setting's parallel-muse run over independent rollouts of the same questions "
        "run by the sweep itself (x = partial / independent); EM by majority vote.",
        "",
        "| setting | flags | n | " + " | ".join(keys) + " | independent em_join_majority |",
        "|---" * (len(keys) + 4) + "|",
    ]
    for name, part in result["runs"].items():
        m, ratio = part["graphs"][PARTIAL], part["partial_over_independent"]
        # The baseline's reduction ran with model reports and select: no ratio for it.
        cells = [
            f"{_cell(m[k], k)} ({ratio[k]:.2f}x)"
            if ratio.get(k) and k != "reduction_cost"
            else _cell(m[k], k)
            for k in keys
        ]
        lines.append(
            f"| {name} | `{' '.join(flags(SWEEP[name])) or '(defaults)'}` | {m['n']} | "
            + " | ".join(cells)
            + f" | {_cell(part['graphs'][INDEPENDENT]['em_join_majority'], 'em')} |"
        )
    base = next(iter(result["runs"].values()))["graphs"][INDEPENDENT]
    lines += [
        "",
        "Independent rollouts (the denominator): "
        + ", ".join(f"{k} {_cell(base[k], k)}" for k in keys[:-4])
        + ".",
    ]
    return "\n".join(lines) + "\n"


def muse_setting(flags: list[str]) -> str:
    """Say a ParallelMuse run's branching settings in words: the defaults under ``flags``."""
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    initial = int(given.get("--initial-rollouts", 1))
    steps = int(given.get("--top-k-steps", 2))
    # 3: the default of every run this describes (4 from f8a7c0e on, the defaults/ runs).
    samples = int(given.get("--samples-per-step", 3))
    region = given.get("--region", "exploration")
    rounds = int(given.get("--rounds", 1))
    # No --mode: the graph's default at the time of the run, which runs do not record.
    score = {"ppl": " by perplexity", "entropy": " by entropy"}.get(given.get("--mode", ""), "")
    where = "the most uncertain" if steps == 1 else f"each of the {steps} most uncertain"
    kind = "steps (either region)" if region == "all" else f"{region} steps"
    if steps == 1:
        kind = kind.replace("steps", "step", 1)
    text = (
        f"{initial} initial rollout{'s' if initial > 1 else ''}, {samples} samples at {where} "
        f"{kind}{score}"
    )
    text += f", {rounds} rounds" if rounds > 1 else ""
    # Runs before 2026-11-26 recorded no flag for the default of the time, 0.
    earliest = int(given.get("--min-branch-step", 0))
    text += f", no fork before step {earliest}" if earliest else ""
    return text + (f" (`{' '.join(flags)}`)" if flags else "")


def _report_style(result: dict[str, Any]) -> str:
    """Return the ``--report-style`` a ParallelMuse run used (its own, else the common one)."""
    flags = [*result["settings"]["common"], *result["settings"].get("parallel_muse", [])]
    styles = [flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == "--report-style"]
    return styles[-1] if styles else "auto"


def _per_sample(result: dict[str, Any]) -> str:
    """``17``, or ``70 (musique 40, 2wiki 40)`` where samples had their own limit."""
    limit, own = result["settings"]["limit"], result["settings"].get("sample_limits") or {}
    if not own:
        return str(limit)
    return f"{limit} ({', '.join(f'{k} {v}' for k, v in own.items())})"


def _difference(d: dict[str, Any]) -> str:
    return PairedDifference.from_dict(d).interval(mark_zero=True)


def render_parallel_muse(path: Path | None = None) -> str:
    """Render ParallelMuse vs independent rollouts on multi-hop chains (block ``muse-results``)."""
    path = path or checkout_dir() / "benchmarks" / MAIN_RUN / "parallel_muse.json"
    result: dict[str, Any] = json.loads(path.read_text())
    commits = "; ".join(
        f"{name}: {commits_of(path.parent / name / 'run.json')}" for name in result["datasets"]
    )
    lines = [
        f"Made by {shown_command(result['command'])}"
        f" ({commits}): per sample, {_per_sample(result)} "
        "seeded questions (n below), `max_turns` 6, budget 8 trajectories, the shipped "
        "`smollm2-parallel`, BM25, prefix cache emptied before each system. Partial rollout = "
        f"{muse_setting(result['settings'].get('parallel_muse', []))}, the rest of the budget "
        "fresh; independent = 8 rollouts. Cost = uncached prefill + generated tokens per question "
        f"(the engine's counts); reduction = reports (style `{_report_style(result)}`) + analyst.",
        "",
        "| sample | n | steps per trajectory | agent cost partial / independent | ratio "
        "| exploration tokens ratio | reduction cost (partial) | EM select / majority / weighted "
        "(partial) | EM first rollout | EM independent majority |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, part in {**result["datasets"], "all": result["all"]}.items():
        p, i = part["graphs"][PARTIAL], part["graphs"][INDEPENDENT]
        ratio = part["partial_over_independent"]
        joins = " / ".join(f"{p[k]:.3f}" for k in JOINS[:3])
        explore = (
            "–" if ratio["exploration_tokens"] is None else f"{ratio['exploration_tokens']:.2f}x"
        )
        label = f"**{name}**" if name == "all" else name
        lines.append(
            f"| {label} | {p['n']} | {i['steps_per_trajectory']:.1f} | {p['agent_cost']:.0f} / "
            f"{i['agent_cost']:.0f} | **{ratio['agent_cost']:.2f}x** | {explore} | "
            f"{p['reduction_cost']:.0f} | {joins} | {p['em_single']:.3f} | "
            f"{i['em_join_majority']:.3f} |"
        )
    best = result["all"]["best_join"]
    gain = "" if best["relative_gain"] is None else f" ({best['relative_gain']:+.0%})"
    lines += [
        "",
        f"Over all questions the best join of ParallelMuse is `{best['join'][8:]}`: EM "
        f"{best['em']:.3f} against {best['em_single']:.3f} for its first rollout alone{gain} and "
        f"{best['independent_same_join']:.3f} for independent rollouts joined the same way.",
    ]
    pairs = result["all"].get("paired", {})
    join = best["join"]
    said = {
        f"{PARTIAL} {join} - single": "best join vs its first rollout",
        f"partial {join} - independent": "vs independent rollouts' same join",
        f"{PARTIAL} em_any - single": "any trajectory right (every join's ceiling) vs the first "
        "rollout",
    }
    if all(key in pairs for key in said):
        lines[-1] += (
            " Paired EM differences (95% bootstrap): "
            + "; ".join(f"{what} {_difference(pairs[key])}" for key, what in said.items())
            + "."
        )
    split = result["all"].get("by_first_branch") or {}
    if all(group.get("agent_cost") is not None for group in split.values()) and split:
        lines[-1] += (
            " Agent cost ratio by the first fork's step: "
            + "; ".join(
                f"{name} {g['agent_cost']:.2f}x ({g['n']} questions)" for name, g in split.items()
            )
            + "."
        )
    return "\n".join(lines)
