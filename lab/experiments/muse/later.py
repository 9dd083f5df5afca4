"""ParallelMuse forking from step 1 on ``gpu-policy``'s questions, paired with that run's rows.

``langgraph-parallel bench run parallel-muse-later`` runs partial rollouts only (``--graphs
parallel-muse``) with the settings of ``bench run parallel-muse``'s run on the shipped policy
(``benchmarks/parallel_muse/gpu-policy/``: :data:`~.muse.COMMON`, ``--join select``, KV cache
8 GiB) and its branching ``ppl-top1`` but ``min_branch_step`` 1 (the sweep's
``ppl-top1-later``, the graph's default since), on the same questions: 40 MuSiQue, 40 2Wiki
and 70 HotpotQA bridge (``--limit`` a sample, ``sample_limits`` the smaller ones).

The independent rollouts these are measured against are the baseline folder's (setting
``baseline``, beside ``--out``), run by the same code, engine settings and seeds on the same
questions; "step 0 allowed" is its partial rollouts (the rule of the committed run). The
experiment's own :func:`~.muse_analysis.analyse` does the pairing; this writes ``later.json``
and ``later.md``: per sample and over all questions.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE, GRAPHS, HARNESS, MUSE, MUSE_HARNESS
from lab.experiments.muse.muse import COMMON, bench_chains, datasets, sample_limits
from lab.experiments.muse.muse_analysis import analyse
from lab.experiments.muse.muse_tables import SWEEP
from lab.paired import PairedDifference, paired_by_id
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.results import results_in

__all__ = ["EXPERIMENT", "later_tables", "markdown"]

SAMPLES = ("musique", "2wiki", "hotpotqa")
JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_single", "em_any")


def _rows(folder: Path, graph: str, sample: str) -> list[dict[str, Any]]:
    """One graph's rows of a sample folder, tagged with the sample."""
    return [{**r, "dataset": sample} for r in results_in(folder / sample) if r["graph"] == graph]


def later_tables(out: Path, baseline: Path) -> dict[str, Any]:
    """Return ``later.json``: ``out``'s partial rollouts paired with ``baseline``'s rows."""
    later = {s: _rows(out, PARTIAL, s) for s in SAMPLES}
    independent = {s: _rows(baseline, INDEPENDENT, s) for s in SAMPLES}
    step0 = {s: _rows(baseline, PARTIAL, s) for s in SAMPLES}
    result: dict[str, Any] = {"samples": {}}
    for name in (*SAMPLES, "all"):
        names = SAMPLES if name == "all" else (name,)
        mine = [r for s in names for r in later[s]]
        theirs = [r for s in names for r in independent[s]]
        before = [r for s in names for r in step0[s]]
        part = analyse(mine + theirs)
        cost = {r["id"]: r["agent_cost"] for r in before}
        ids = [r["id"] for r in mine if r["id"] in cost]
        part["later_over_step0_agent_cost"] = sum(
            r["agent_cost"] for r in mine if r["id"] in cost
        ) / sum(cost[i] for i in ids)
        part["later_vs_step0"] = {
            key: asdict(
                paired_by_id(
                    {r["id"]: float(r[key]) for r in mine if r.get(key) is not None},
                    {r["id"]: float(r[key]) for r in before if r.get(key) is not None},
                )
            )
            for key in JOINS
        }
        result["samples"][name] = part
    return result


def markdown(result: dict[str, Any], command: str, baseline: str) -> str:
    """Render ``later.json`` as ``later.md``."""
    lines = [
        f"# ParallelMuse, min_branch_step=1, on ../{baseline}'s 150 questions",
        "",
        f"Made by `{command}` from its rows and those of `../{baseline}`.",
        "",
    ]
    for name, part in result["samples"].items():
        p, i = part["graphs"][PARTIAL], part["graphs"][INDEPENDENT]
        ratio = part["partial_over_independent"]
        lines += [
            f"## {name} (n={p['n']})",
            "",
            f"- agent cost vs independent rollouts {ratio['agent_cost']:.3f}x, exploration tokens "
            f"{ratio['exploration_tokens']:.3f}x; vs partial rollouts forking at step 0 too "
            f"{part['later_over_step0_agent_cost']:.3f}x",
            "- EM select / majority / weighted / first rollout / any right: "
            + " / ".join(f"{p[k]:.3f}" for k in JOINS)
            + f"; independent majority {i['em_join_majority']:.3f}, any {i['em_any']:.3f}",
        ]
        for key, d in part["paired"].items():
            lines.append(f"- {key}: {PairedDifference(**d)}")
        for key, d in part["later_vs_step0"].items():
            lines.append(f"- {key}, min_branch_step 1 - 0: {PairedDifference(**d)}")
        lines.append("")
    return "\n".join(lines)


def _run(run: Run) -> None:
    """Run (or resume) the three samples' partial rollouts, then pair them with the baseline's."""
    baseline = run.out.parent / run.settings["baseline"]
    if not baseline.is_dir():
        raise UserError(f"--set baseline={run.settings['baseline']}: no folder {baseline}.")
    limits = sample_limits(run.settings["sample_limits"])
    for name, sample in datasets().items():
        fields = {**sample, **COMMON, "model": run.settings["model"], "graphs": (PARTIAL,)}
        fields |= {"join": "select", **SWEEP["ppl-top1-later"], "out": str(run.out / name)}
        bench_chains(run, fields, limits.get(name))
    result = later_tables(run.out, baseline)
    page = markdown(result, run.command, run.settings["baseline"])
    Experiment.write_tables(run.out, "later", result, page)


EXPERIMENT = Experiment(
    name="parallel-muse-later",
    about="ParallelMuse forking from step 1 (min_branch_step=1) on gpu-policy's chains, paired",
    out="benchmarks/parallel_muse/gpu-policy-later",
    run=_run,
    limit=70,
    limit_means="questions per sample (setting sample_limits: MuSiQue and 2Wiki at 40)",
    settings={
        "baseline": "gpu-policy",
        "model": "auto",
        "concurrency": 4,
        "sample_limits": "musique:40,2wiki:40",
    },
    measures=(*GRAPHS, *MUSE, *ENGINE, *HARNESS, *MUSE_HARNESS),
)
