"""ParallelMuse and 8 independent rollouts with and without the repeat rule, paired.

``langgraph-parallel bench run parallel-muse-repeats`` runs ``parallel-muse`` and
``rollouts-majority`` (a folder a graph: rows of one model setting) with the repeat rule (a
sub-query already searched in the trajectory is not searched again) on the questions and
settings of ``bench run parallel-muse-defaults``'s first run: the first 25 HotpotQA bridge
questions of the held-out sample (seed 0), BM25, ``max_turns`` 6, concurrency 4, KV cache
8 GiB. It resumes the folders' rows, then pairs them with the rows of setting ``before`` (a
folder beside ``--out``: ``defaults/hotpotqa``, the same seeds, before the rule) and writes
``compare.md``/``compare.json``: per graph, how often the rule fired (``repeat_skips``), full
contexts (``model_error`` ends, trimmed answer steps, refused prompts), every join's EM with
its paired 95% bootstrap interval and the cost a user pays (agent + reduction, warm cache);
then ParallelMuse against the rollouts with the rule, paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE, GRAPHS, HARNESS, MUSE, MUSE_HARNESS
from lab.experiments.muse.defaults.defaults import bridge_spec
from lab.experiments.muse.muse import KV_CACHE
from lab.paired import paired_by_id
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of

__all__ = ["EXPERIMENT", "compare", "markdown", "summary"]

GRAPHS_RUN = (PARTIAL, INDEPENDENT)
EMS = ("em", "em_single", "em_join_majority", "em_join_evidence", "em_any")
COUNTS = ("repeat_skips", "trimmed_steps", "context_refusals", "turns", "sub_queries")
COSTS = ("agent_cost", "reduction_cost", "agent_uncached_prefill", "agent_generated", "llm_calls")
Rows = Sequence[Mapping[str, Any]]


def _rows(folder: Path, graph: str) -> list[dict[str, Any]]:
    return [r for r in results_in(folder) if r["graph"] == graph]


def summary(after: Rows, before: Rows) -> dict[str, Any]:
    """Return counts, paired EM differences (after - before) and mean costs on shared ids."""
    ids = {r["id"] for r in after} & {r["id"] for r in before}
    after = [r for r in after if r["id"] in ids]
    before = [r for r in before if r["id"] in ids]
    out: dict[str, Any] = {"n": len(ids), "counts": {}, "em": {}, "cost": {}}
    for name, rows in (("after", after), ("before", before)):
        counts = {k: sum(int(r.get(k) or 0) for r in rows) for k in COUNTS}
        counts["model_errors"] = sum("model_error" in str(r.get("stop_reason")) for r in rows)
        counts["questions_with_repeat_skips"] = sum(bool(r.get("repeat_skips")) for r in rows)
        out["counts"][name] = counts
        out["cost"][name] = {k: round(mean_of(rows, k), 1) for k in COSTS}
        out["cost"][name]["user_cost"] = round(
            out["cost"][name]["agent_cost"] + out["cost"][name]["reduction_cost"], 1
        )
    for key in EMS:
        diff = paired_by_id(
            {r["id"]: float(r.get(key) or 0) for r in after},
            {r["id"]: float(r.get(key) or 0) for r in before},
        )
        out["em"][key] = {
            "after": sum(float(r.get(key) or 0) for r in after),
            "before": sum(float(r.get(key) or 0) for r in before),
            "difference": round(diff.diff, 3),
            "interval": [round(diff.low, 3), round(diff.high, 3)],
        }
    return out


def markdown(s: Mapping[str, Any]) -> str:
    """Return the tables of ``compare.md``."""
    lines = [f"n = {s['n']} questions, the same seeds before and after the rule.", ""]
    after, before = s.get("after_label", "after"), s.get("before_label", "before")
    lines += ["| | " + " | ".join(s["counts"]["after"]) + " |"]
    lines += ["|---" * (len(s["counts"]["after"]) + 1) + "|"]
    for name in ("before", "after"):
        label = before if name == "before" else after
        lines += [f"| {label} | " + " | ".join(str(v) for v in s["counts"][name].values()) + " |"]
    lines += ["", f"| EM (questions right) | {before} | {after} | difference [95% CI] |"]
    lines += ["|---|---|---|---|"]
    for key, e in s["em"].items():
        low, high = e["interval"]
        lines += [
            f"| {key} | {e['before']:g} | {e['after']:g} | "
            f"{e['difference']:+.3f} [{low:+.3f}, {high:+.3f}] |"
        ]
    keys = list(s["cost"]["after"])
    lines += ["", "| mean a question | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name in ("before", "after"):
        label = before if name == "before" else after
        values = " | ".join(f"{v:g}" for v in s["cost"][name].values())
        lines += [f"| {label} | {values} |"]
    return "\n".join(lines) + "\n"


def compare(out: Path, old: Path) -> tuple[dict[str, Any], str]:
    """Return ``compare.json`` and ``compare.md`` of ``out``'s rows against ``old``'s."""
    result: dict[str, Any] = {}
    text = []
    for graph in GRAPHS_RUN:
        s = summary(_rows(out / graph, graph), _rows(old, graph))
        s.update(after_label="with the rule", before_label="before it")
        result[graph] = s
        text += [f"## {graph}: with the repeat rule against before it", "", markdown(s)]
    muse, rollouts = GRAPHS_RUN
    s = summary(_rows(out / muse, muse), _rows(out / rollouts, rollouts))
    s.update(after_label=muse, before_label=rollouts)
    result["muse_vs_rollouts"] = s
    ratio = s["cost"]["after"]["user_cost"] / s["cost"]["before"]["user_cost"]
    agent = s["cost"]["after"]["agent_cost"] / s["cost"]["before"]["agent_cost"]
    result["muse_vs_rollouts"]["user_cost_ratio"] = round(ratio, 3)
    result["muse_vs_rollouts"]["agent_cost_ratio"] = round(agent, 3)
    text += [f"## {muse} against {rollouts}, both with the rule", "", markdown(s)]
    text += [f"User cost (agent + reduction) ratio: {ratio:.2f}x; agent alone: {agent:.2f}x.", ""]
    return result, "\n".join(text)


def _run(run: Run) -> None:
    """Run (or resume) both graphs with the rule, a folder each; then pair them with ``before``."""
    for graph in GRAPHS_RUN:
        spec = bridge_spec(
            limit=run.limit,
            graphs=(graph,),
            concurrency=run.settings["concurrency"],
            out=str(run.out / graph),
        )
        run.bench(spec, child=True, engine=KV_CACHE)
    result, page = compare(run.out, run.out.parent / run.settings["before"])
    Experiment.write_tables(run.out, "compare", result, page, indent=1)


EXPERIMENT = Experiment(
    name="parallel-muse-repeats",
    about="ParallelMuse and independent rollouts with the repeat rule vs before it, HotpotQA",
    out="benchmarks/parallel_muse/repeats",
    run=_run,
    limit=25,
    limit_means="held-out HotpotQA bridge questions",
    settings={"before": "defaults/hotpotqa", "concurrency": 4},
    measures=(*GRAPHS, *MUSE, *ENGINE, *HARNESS, *MUSE_HARNESS),
)
