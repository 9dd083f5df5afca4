"""ParallelMuse over a ``create_agent`` app vs our ``parallel-muse`` graph, on the same policy.

``langgraph-parallel bench run parallel-muse-agent`` runs ``--graphs
parallel-muse-agent,parallel-muse`` on the ParallelMuse experiment's three samples of multi-hop
chains (:func:`~.muse.datasets`: MuSiQue, 2Wiki compositional/inference, HotpotQA bridge;
``--limit`` each, seeded) with its settings (:data:`~.muse.COMMON`: budget 8, ``max_turns`` 6,
BM25, extracted reports, the prefix cache emptied before each graph) and join ``select``. The
wrapper forks the agent's checkpoints (:func:`~langgraph_parallel.parallel_muse.graph.
create_parallel_muse_graph` over an agent); the graph forks the ParallelSearch loop. Both run
the shipped policy (``smollm2-parallel``), the wrapper as a tool-calling model inside
``create_agent``.

Then writes ``OUT/muse_agent.json``/``.md``: per sample and over all, EM of each join for both
with the 95% paired bootstrap interval of the difference, agent cost and exploration tokens with
their ratio, and how many questions the two ran identically (same answer, same engine token
counts), with the ids of those that differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lab.base import Experiment, Run
from lab.experiments.muse.muse import COMMON, bench_chains, datasets
from lab.experiments.muse.muse_tables import flags
from lab.paired import paired_by_id
from langgraph_parallel.apps.registry import MUSE_AGENT, PARTIAL
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of

__all__ = ["EXPERIMENT", "compare", "markdown"]

WRAPPER, GRAPH = MUSE_AGENT, PARTIAL
"""The two graphs compared: ParallelMuse over a ``create_agent`` app, and over our own loop."""
JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_single", "em_any")
COSTS = (
    "agent_cost",
    "agent_uncached_prefill",
    "agent_generated",
    "agent_cached_prefill",
    "exploration_tokens",
    "reasoning_tokens",
    "reduction_cost",
    "llm_calls",
)
SAME = ("answer", "agent_uncached_prefill", "agent_generated", "agent_cached_prefill")
"""A question ran identically when both systems agree on all of these."""


def compare(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the paired comparison of the wrapper's and the graph's rows on their shared ids."""
    by = {g: {str(r["id"]): r for r in rows if r["graph"] == g} for g in (WRAPPER, GRAPH)}
    ids = sorted(set(by[WRAPPER]) & set(by[GRAPH]))
    a, b = ([{**by[g][i], "id": i} for i in ids] for g in (WRAPPER, GRAPH))
    out: dict[str, Any] = {"n": len(ids), "joins": {}, "costs": {}}
    for key in JOINS:
        d = paired_by_id({r["id"]: r[key] for r in a}, {r["id"]: r[key] for r in b})
        out["joins"][key] = {
            **{"wrapper": round(d.a, 3), "graph": round(d.b, 3), "diff": round(d.diff, 3)},
            **{"low": round(d.low, 3), "high": round(d.high, 3)},
            **{"wins": d.wins, "losses": d.losses},
        }
    for key in COSTS:
        ma, mb = mean_of(a, key), mean_of(b, key)
        ratio = round(ma / mb, 3) if mb else None
        out["costs"][key] = {"wrapper": round(ma, 1), "graph": round(mb, 1), "ratio": ratio}
    same = [x["id"] for x, y in zip(a, b, strict=True) if all(x.get(k) == y.get(k) for k in SAME)]
    out["identical"] = len(same)
    out["differ"] = [i for i in ids if i not in set(same)]
    out["errors"] = {g: sum(bool(by[g][i].get("error")) for i in ids) for g in (WRAPPER, GRAPH)}
    return out


def markdown(result: Mapping[str, Any]) -> str:
    """Render :func:`compare` per sample as the experiment's Markdown page."""
    lines = [
        "# ParallelMuse over a create_agent app vs the parallel-muse graph",
        "",
        f"Command: `{result['command']}`",
        "",
        "Same policy (smollm2-parallel), questions, seeds and settings. EM per join with "
        "the 95% paired bootstrap interval of wrapper - graph (wins / losses); costs are "
        "means per question as the engine counted tokens.",
        "",
    ]
    for name, part in result["samples"].items():
        errors = part["errors"]
        lines += [
            f"## {name} (n={part['n']}; identical runs {part['identical']}; errors wrapper "
            f"{errors[WRAPPER]}, graph {errors[GRAPH]})",
            "",
            "| join | wrapper | graph | difference [95%] | + / - |",
            "|---|---|---|---|---|",
        ]
        for key, j in part["joins"].items():
            interval = f"{j['diff']:+.3f} [{j['low']:+.3f}, {j['high']:+.3f}]"
            lines.append(
                f"| {key} | {j['wrapper']:.3f} | {j['graph']:.3f} | {interval} "
                f"| +{j['wins']} / -{j['losses']} |"
            )
        lines += ["", "| cost | wrapper | graph | ratio |", "|---|---|---|---|"]
        for key, c in part["costs"].items():
            lines.append(f"| {key} | {c['wrapper']} | {c['graph']} | {c['ratio']} |")
        lines.append("")
    return "\n".join(lines)


def _run(run: Run) -> None:
    result: dict[str, Any] = {"command": run.command, "settings": flags(COMMON), "samples": {}}
    everything: list[dict[str, Any]] = []
    for name, sample in datasets().items():
        folder = run.out / name
        fields = {**sample, **COMMON, "model": run.settings["model"], "graphs": (WRAPPER, GRAPH)}
        bench_chains(run, {**fields, "join": "select", "out": str(folder)})
        rows = results_in(folder)
        result["samples"][name] = compare(rows)
        everything += [{**r, "id": f"{name}/{r['id']}"} for r in rows]
    result["samples"]["all"] = compare(everything)
    Experiment.write_tables(run.out, "muse_agent", result, markdown(result), indent=1)


EXPERIMENT = Experiment(
    name="parallel-muse-agent",
    about="ParallelMuse over a create_agent app vs the parallel-muse graph, same policy and chains",
    out="benchmarks/parallel_muse/agent",
    run=_run,
    limit=34,
    limit_means="questions per sample",
    settings={"model": "smollm2-parallel", "concurrency": 4},
)
