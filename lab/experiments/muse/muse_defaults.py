"""The docs block of ParallelMuse under its shipped defaults (issue 55), from ``joins.json``.

``bench run parallel-muse-defaults`` (:mod:`.defaults`) runs the ``parallel-muse`` and
``rollouts-majority`` graphs with every ParallelMuse default, the prefix cache warm as a user's
is, and writes ``joins.json`` beside the rows (``benchmarks/parallel_muse/defaults/``). This
block and README's summary row render that file, so the figures quoted for the defaults are the
defaults' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.experiments.muse.defaults.defaults import command_for
from lab.experiments.muse.defaults.joins import JOINS
from lab.paired import PairedDifference
from lab.paths import checkout_dir
from lab.provenance import commits_of
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.models.adapters import adapter_hash
from langgraph_parallel.models.embedded import ADAPTERS_DIR

__all__ = [
    "DEFAULTS_RUN",
    "FRESH_RUN",
    "default_join_vs_first",
    "default_join_vs_independent",
    "load_joins",
    "policy_of",
    "render_muse_defaults",
]

DEFAULTS_RUN = "parallel_muse/defaults/hotpotqa150-e306cc9"
"""The 150-question run under the defaults on the shipped policy, under ``benchmarks/``."""

FRESH_RUN = "parallel_muse/defaults/fresh-cache-pairs"
"""The same defaults, the prefix cache emptied before each question (the paper's way); a folder
beside ``DEFAULTS_RUN``, rendered when it holds a ``joins.json``."""


def load_joins(folder: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """Return the defaults run's folder (``DEFAULTS_RUN`` unless given) and its ``joins.json``."""
    folder = folder or checkout_dir() / "benchmarks" / DEFAULTS_RUN
    return folder, json.loads((folder / "joins.json").read_text())


def _interval(d: dict[str, Any]) -> str:
    return PairedDifference.from_dict(d).interval(counts=False, mark_zero=True)


def default_join_vs_first(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Return the default join's name and its paired EM difference to the first rollout.

    ``result`` is a ``joins.json``; :mod:`.defaults.joins` names the join from the rows
    (``majority`` under ``join="auto"`` for the raw-prompt policy, ``select`` where the analyst
    was called).
    """
    name = result["graph_join"]
    return name, result["vs"][f"the graph's join ({name}) - first rollout"]


def default_join_vs_independent(result: dict[str, Any]) -> dict[str, Any]:
    """Return the default join's paired EM difference to the independent rollouts' best join.

    :mod:`.defaults.joins` keys it by the best of the rollouts' joins on the same questions
    (``... - independent em_join_majority``).
    """
    head = f"the graph's join ({result['graph_join']}) - independent "
    return next(d for what, d in result["vs"].items() if what.startswith(head))


def _machines(run_json: Path) -> str:
    machines = json.loads(run_json.read_text()).get("machines") or []
    if not machines:
        return "machine not recorded"
    words = []
    for m in machines:
        isa = "avx512_bf16" if m.get("avx512_bf16") else "no native bf16"
        words.append(f"{m['cpu']}, {m['cores']} cores, {isa}, engine {m['dtype']}")
    return "; ".join(words)


def policy_of(run_json: Path) -> str:
    """Name the policy a defaults run measured, and whether it is the adapter shipped today.

    The run's ``adapters`` record (``bench`` writes each shipped policy's adapter hash) against
    today's files: a run made before a new adapter shipped names the old one, and today's beside it.
    """
    adapters = json.loads(run_json.read_text()).get("adapters") or {}
    if not adapters:
        return "the shipped policy (adapter not recorded)"
    words = []
    for name, hashes in adapters.items():
        today = adapter_hash(ADAPTERS_DIR / name)
        listed = ", ".join(f"`{h}`" for h in hashes)
        when = ", today's" if hashes == [today] else f"; today's is `{today}`"
        words.append(f"`{name}` (adapter {listed}{when})")
    return "; ".join(words)


def render_muse_defaults(folder: Path | None = None) -> str:
    """Render the defaults run's joins, costs and full-context counts (block ``muse-defaults``)."""
    folder, result = load_joins(folder)
    run_json = folder / "run.json"
    name, cost = result["graph_join"], result["cost"]
    n = result["n"]
    lines = [
        f"Made by `{command_for(result, folder)}` "
        f"({commits_of(run_json)}; {_machines(run_json)}): {n} held-out HotpotQA bridge "
        "questions, every ParallelMuse default (budget 8: 1 rollout, then 2 most uncertain "
        "exploration steps x 4 samples, shared among the steps found, no fork before step 1 nor "
        f"after a repeated search; join `auto`: `{name}` for this policy), "
        f"{policy_of(run_json)}, BM25, `max_turns` 6, concurrency 4, the prefix cache warm across "
        "questions as a user's is. The baseline: 8 independent rollouts, majority vote.",
        "",
        f"| graph | the graph's join ({name}) | majority | weighted | evidence | first rollout "
        "| any right |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in (PARTIAL, INDEPENDENT):
        e = result["em"][g]
        cells = " | ".join(f"{e[k]:.0f}" for k in (*JOINS, "em_single", "em_any"))
        lines.append(f"| {g} | {cells} |")
    lines += [
        "",
        f"Questions right of {n}. Paired EM differences (95% bootstrap): "
        + "; ".join(
            f"{what.replace('em_join_', '')}: {d['a']:.3f} vs {d['b']:.3f}, {_interval(d)}"
            for what, d in result["vs"].items()
        )
        + ".",
        "",
        "| graph | agent cost | reduction cost | a user's cost | model errors | trimmed answer "
        "steps | refused prompts | repeat skips |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in (PARTIAL, INDEPENDENT):
        c = cost[g]
        lines.append(
            f"| {g} | {c['agent_cost']:.0f} | {c['reduction_cost']:.0f} | "
            f"{c['user_cost']:.0f} | {c['model_errors']} | {c['trimmed_steps']} | "
            f"{c['context_refusals']} | {c['repeat_skips']} |"
        )
    learned = result["learned"][PARTIAL]["score-weighted vote"]
    ratio, user = cost.get("agent_ratio_interval"), cost.get("user_ratio_interval")
    spread = f" [{ratio[1]:.2f}, {ratio[2]:.2f}]" if ratio else ""
    user_spread = f" [{user[1]:.2f}, {user[2]:.2f}]" if user else ""
    lines += [
        "",
        f"Cost in tokens a question (uncached prefill + generated). A user pays "
        f"**{cost['user_ratio']:.2f}x**{user_spread} the tokens of the independent rollouts "
        f"(agent alone {cost['agent_ratio']:.2f}x{spread}, 95% bootstrap over the questions). "
        "A join learned "
        "from the trajectories (`lab/experiments/muse/defaults/scorer.py`, cross-validated by "
        "question) against the first "
        f"rollout: {_interval(learned)}.",
    ]
    if before := result.get("before"):
        r, lo, hi = before["agent_cost_ratio"]
        em = before["em_join_graph"]
        earlier = folder.parent / before["folder"] / "run.json"
        what = f"{commits_of(earlier)}, {policy_of(earlier)}" if earlier.exists() else "its rows"
        lines.append(
            f"Against the earlier run in `{before['folder']}/` (the same questions; {what}): "
            f"ParallelMuse's agent cost {r:.2f}x [{lo:.2f}, {hi:.2f}], "
            f"forks a question {before['forks'][0]:.1f} vs {before['forks'][1]:.1f}, the default "
            f"join's EM {em['a']:.3f} vs {em['b']:.3f}, {_interval(em)}."
        )
    fresh = folder.parent / Path(FRESH_RUN).name  # beside the warm run
    if (fresh / "joins.json").exists():
        _, cold = load_joins(fresh)
        c = cold["cost"]
        r, lo, hi = c["agent_ratio_interval"]
        lines.append(
            f"With the cache emptied before each question (`--fresh-cache`, the paper's "
            f"comparison; `benchmarks/{FRESH_RUN}/`, the first {cold['n']} of these questions, "
            f"{commits_of(fresh / 'run.json')}, {policy_of(fresh / 'run.json')}): a user pays "
            f"{c['user_ratio']:.2f}x (agent alone {r:.2f}x [{lo:.2f}, {hi:.2f}])."
        )
    return "\n".join(lines)
