"""The defaults run's page, ``joins.md``: the tables of :func:`.joins.analyse` in Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lab.experiments.muse.defaults.joins import JOINS
from lab.experiments.muse.defaults.scorer import FEATURES
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL

__all__ = ["TABLES", "flags", "markdown", "settings_title"]

TABLES = "lab/experiments/muse/defaults/joins.py"
"""What the page names as the maker of its tables."""


def flags(muse: Mapping[str, Any]) -> list[str]:
    """Return ``bench``'s flags for a run's ParallelMuse settings (``run.json``'s ``muse``)."""
    return [f"--{k.replace('_', '-')} {v}" for k, v in muse.items()]


def settings_title(muse: Mapping[str, Any]) -> str:
    """Return how the title names a run's ParallelMuse settings (its defaults, or the flags)."""
    if not muse:
        return "under its defaults"
    return "with " + ", ".join(f"`{flag}`" for flag in flags(muse))


def markdown(result: Mapping[str, Any], command: str) -> str:
    """Render :func:`.joins.analyse` as the folder's table page."""
    n = result["n"]
    lines = [
        f"# ParallelMuse {settings_title(result.get('muse') or {})} vs 8 independent rollouts "
        f"(HotpotQA bridge, n={n})",
        "",
        f"Rows: `{command}`; tables: `{TABLES}`."
        + (
            f" The independent rollouts' rows are those of `{result['rollouts_from']}` (the same "
            "questions; this run made ParallelMuse's only)."
            if result.get("rollouts_from")
            else ""
        ),
        "",
        "| graph | the graph's join | majority | weighted | evidence | first rollout | any right |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in (PARTIAL, INDEPENDENT):
        e = result["em"][g]
        cells = [f"{e[k]:.0f}" for k in (*JOINS, "em_single", "em_any")]
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    lines += ["", f"Questions right of {n}. Paired differences (95% bootstrap):", ""]
    for name, d in result["vs"].items():
        lines.append(
            f"- {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
            f"[{d['low']:+.3f}, {d['high']:+.3f}]"
        )
    lines += ["", "Joins scored offline on the same trajectories (`join_inputs`):", ""]
    for g in (PARTIAL, INDEPENDENT):
        o = result["offline"][g]
        scored = ", ".join(f"{k} {v:.0f}" for k, v in o.items() if k != "supported")
        yes, no, none = o["supported"]
        lines.append(
            f"- {g}: {scored}; answers found in their own passages {yes}, not {no}, "
            f"yes/no or none {none}"
        )
    lines += ["", "The two that read what an answer is, paired with the first rollout:", ""]
    for g in (PARTIAL, INDEPENDENT):
        for name, d in result["vs_offline"][g].items():
            lines.append(
                f"- {g}, {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
                f"[{d['low']:+.3f}, {d['high']:+.3f}]"
            )
    c = result["cost"]
    lines += [
        "",
        "Cost a question (tokens; cost = uncached prefill + generated, "
        + ("the cache emptied before each question" if result.get("fresh_cache") else "cache warm")
        + "); the last",
        "four columns are counts over all the questions:",
        "",
        "| graph | agent | reduction | user (agent + reduction) | uncached prefill | generated "
        "| cached prefill | model calls | trajectories | forks | model errors | trimmed steps "
        "| refused prompts | repeat skips |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in (PARTIAL, INDEPENDENT):
        x = c[g]
        lines.append(
            f"| {g} | {x['agent_cost']} | {x['reduction_cost']} | {x['user_cost']} | "
            f"{x['agent_uncached_prefill']} | {x['agent_generated']} | "
            f"{x['agent_cached_prefill']} | {x['llm_calls']} | {x['trajectories']} | "
            f"{x['forks']} | {x['model_errors']} | {x['trimmed_steps']} | "
            f"{x['context_refusals']} | {x['repeat_skips']} |"
        )
    ratio, low, high = c["agent_ratio_interval"]
    lines += [
        "",
        f"User cost ratio {c['user_ratio']}x, agent cost ratio {c['agent_ratio']}x (ratio of the "
        f"summed agent costs, 95% bootstrap over the questions: {ratio} [{low}, {high}]).",
        "",
    ]
    if "before" in result:
        b = result["before"]
        r, lo, hi = b["agent_cost_ratio"]
        lines += [
            f"Against the earlier run in `{b['folder']}` (ParallelMuse rows, the same questions, "
            "paired, 95% bootstrap): agent cost "
            f"{r}x [{lo}, {hi}], forks a question {b['forks'][0]} vs {b['forks'][1]}; "
            + "; ".join(
                f"{k.replace('em_', '')} {b[k]['a']:.3f} vs {b[k]['b']:.3f}: "
                f"{b[k]['diff']:+.3f} [{b[k]['low']:+.3f}, {b[k]['high']:+.3f}]"
                for k in ("em_join_graph", "em_single", "em_any")
            )
            + ".",
            "",
        ]
    f = result["forks"]
    steps = ", ".join(f"step {k}: {v}" for k, v in f["fork_branch_steps"].items())
    lines += [
        "Where forks save work (read from each row's `tree`; issue 55, item 2):",
        "",
        f"- Independent rollouts share {f['independent_shared_steps']} leading steps with the "
        f"first on average (same action and text); all 8 take the first's step 0 on "
        f"{f['independent_step0_all_same']} of {f['questions'][INDEPENDENT]} questions. The cache "
        "already shares a shared step's prefill; a fork saves only its generation.",
        f"- ParallelMuse's {f['forks']} forks branch at {steps}; {f['forks_inside_a_loop']} "
        "inherit a repeated search (a fork inside a loop).",
        f"- A fork ends on its parent's answer {f['forks_on_parents_answer']} of {f['forks']} "
        f"times; a later fresh rollout on the first rollout's {f['fresh_on_firsts_answer']} of "
        f"{f['fresh_rollouts']}. A fork's first step is its parent's step again (same action "
        f"and text) {f.get('forks_repeating_parents_step', 0)} of {f['forks']} times.",
        f"- The first rollout's most uncertain step is step 0 in "
        f"{f['first_rollouts_most_uncertain_at_step_0']} of {f['questions'][PARTIAL]} questions by "
        "reasoning perplexity, in "
        f"{f['first_rollouts_most_uncertain_exploration_at_step_0']} by exploration perplexity "
        "(the default region, which ranks branch points); `min_branch_step=1` forks neither.",
        "",
        "Forks or fresh rollouts (`mixtures`): the first rollout, its first k forks and the "
        "independent rollouts of the same seeds for the rest of the budget of 8, the "
        "trajectories of a round forking k (`--top-k-steps 1 --samples-per-step k`); majority "
        "paired with the independent rollouts' (k 0), 95% bootstrap:",
        "",
        "| forks k | majority | any right | majority - independent majority |",
        "|---|---|---|---|",
        *(
            f"| {m['k']} | {m['majority']:.0f} | {m['any_right']:.0f} | "
            f"{m['vs_independent']['diff']:+.3f} [{m['vs_independent']['low']:+.3f}, "
            f"{m['vs_independent']['high']:+.3f}] |"
            for m in result.get("mixtures", [])
        ),
        "",
        "A learned join (`scorer.py`: logistic regression over each trajectory's "
        f"{len(FEATURES)} features; the questions in 5 folds, each joined by a scorer fitted on "
        "the other 4), against the same graph's first rollout (paired, 95% bootstrap):",
        "",
    ]
    for g, joins in result["learned"].items():
        for name, d in joins.items():
            lines.append(
                f"- {g}, {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
                f"[{d['low']:+.3f}, {d['high']:+.3f}]"
            )
    lines.append("")
    return "\n".join(lines)
