"""ParallelMuse partial rollouts vs independent rollouts on long multi-hop trajectories.

``langgraph-parallel bench run parallel-muse`` runs the one harness, ``bench``, with ``--graphs
parallel-muse,rollouts-majority`` on three samples of multi-hop chains (``--limit`` each,
seeded), ``max_turns`` 6, budget 8 trajectories, the shipped policy (``smollm2-parallel``;
setting ``model`` another, for both systems), join ``select`` (reports + analyst), the prefix
cache emptied before each graph and 8 GiB of it (:data:`KV_CACHE`), BM25 over:

- ``OUT/musique``: MuSiQue (2-4 hops), the file's own paragraphs as the corpus;
- ``OUT/2wiki``: 2WikiMultihopQA ``compositional``/``inference``, its paragraphs as the corpus;
- ``OUT/hotpotqa``: the bundled HotpotQA sample's ``bridge`` questions, the bundled corpus.

(BM25 rather than the hybrid default: the dense half would embed the two context corpora, ~9k
paragraphs, for about 9 minutes on this CPU; both systems search the same index. Reports in
style ``extract``, written from each trajectory without a model call: the shipped policy, trained
only on the agent's own format, writes no report. Asked for one, in style ``model`` or
``continue``, it repeats its ``<think>``/``<answer>`` lines until the 256-token limit (every
report of the earlier runs did), about 2k generated tokens a question the analyst then reads as
noise.) The setting ``setting`` picks one of :data:`SWEEP` as ParallelMuse's branching (the
committed run: ``ppl-top1``; empty: the graph's defaults).

Then writes ``OUT/parallel_muse.md``/``.json``: per dataset and over all questions, the agent
phase (uncached prefill, generated, their sum = cost, cached prefill, reasoning/exploration
tokens, trajectory shape) and the reduction apart, EM of each join, of the first rollout alone
and of "any trajectory right", the partial-over-independent ratios on the same questions, and
``OUT/muse_saving.png`` (per question, the cost ratio and EM against trajectory length).

``bench run parallel-muse-sweep`` runs ``parallel-muse`` alone on the first ``--limit`` MuSiQue
questions of the same sample once per setting in :data:`SWEEP` (``OUT/sweep/<name>``, ``--join
majority --reports contested``: the agent phase only, no reports; setting ``settings`` picks
some) and compares each with independent rollouts of the same questions that it runs first
(``OUT/sweep/independent``; tables in ``OUT/sweep.md``/``.json``); ``extract-select`` keeps the
default agent settings and joins with ``select`` over extracted reports (no report calls), to set
the reduction's cost and accuracy beside the main run's model-written reports. Both resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE, GRAPHS, HARNESS, MUSE, MUSE_HARNESS
from lab.experiments.muse.muse_analysis import INDEPENDENT, PARTIAL, analyse
from lab.experiments.muse.muse_tables import SWEEP, flags, markdown, sweep_markdown
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.apps.bench_muse import MUSE_OPTIONS
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.paths import repo_data_dir, shared_data_dir

__all__ = [
    "EXPERIMENT",
    "KV_CACHE",
    "SWEEP_EXPERIMENT",
    "bench_chains",
    "datasets",
    "draw_saving",
    "sample_limits",
]

COMMON: dict[str, Any] = {
    "index": "bm25",
    "max_turns": 6,
    "budget": 8,
    "report_style": "extract",
    "fresh_cache": True,
    "seed": 0,
}
"""The settings both systems of every run share (spec fields; ParallelMuse's among them)."""
KV_CACHE = {"kv_cache_memory_bytes": 8 << 30}
"""The in-process engine's KV cache for these runs (the default is 2 GiB). At 4 questions in
flight, 8 trajectories each of up to ~3k tokens, 2 GiB holds ~46k fp32 tokens of SmolLM2: on
MuSiQue partial rollout cost 1.04x the independent rollouts there and 0.87x at 8 GiB (eviction
of the initial rollouts' blocks before their forks ran is the likely cause; runs are noisy)."""


def datasets() -> dict[str, dict[str, Any]]:
    """Sample name -> its spec fields (question file, types, corpus)."""
    shared = shared_data_dir()
    return {
        "musique": {
            "dataset": str(shared / "musique_dev_with_paragraphs200.jsonl.gz"),
            "corpus": "contexts",
        },
        "2wiki": {
            "dataset": str(shared / "2wikimultihopqa_dev_sample500.jsonl.gz"),
            "types": ("compositional", "inference"),
            "corpus": "contexts",
        },
        "hotpotqa": {
            "dataset": str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
            "types": ("bridge",),
        },
    }


def _names(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in SWEEP]
    if unknown:
        raise UserError(f"--set setting(s)=: names of {', '.join(SWEEP)}; got {unknown}")
    return names


def sample_limits(text: str) -> dict[str, int]:
    """``musique:40,2wiki:40`` -> {sample: limit}: samples whose held-out room is smaller.

    The training data holds out only the first 40 MuSiQue and 40 2Wiki chains of the seeded
    order (``train chains heldout``), so a run past 40 a sample takes these two at 40 and more
    HotpotQA bridge questions (all 150 of the sample are held out).
    """
    limits: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        name, _, count = part.partition(":")
        if name not in datasets() or not count.isdigit():
            raise UserError(
                f"--set sample_limits={text}: write SAMPLE:N,... with SAMPLE one of "
                f"{', '.join(datasets())}, e.g. musique:40,2wiki:40."
            )
        limits[name] = int(count)
    return limits


def bench_chains(run: Run, fields: dict[str, Any], limit: int | None = None) -> None:
    """Run the spec of ``fields`` in a child: this experiment's KV cache, limit, concurrency.

    ``fields`` are :class:`~langgraph_parallel.apps.bench.BenchSpec` fields with ParallelMuse's
    settings among them, later keys winning. ``limit`` (a sample's own,
    :func:`sample_limits`) replaces the run's ``--limit`` where it is smaller.
    """
    given = [n for n in (limit, run.limit) if n is not None]
    muse = {k: v for k, v in fields.items() if k in MUSE_OPTIONS}
    rest = {k: v for k, v in fields.items() if k not in MUSE_OPTIONS}
    spec = BenchSpec(
        **rest,
        muse=muse,
        limit=min(given) if given else None,
        concurrency=run.settings["concurrency"],
    )
    run.bench(spec, child=True, engine=KV_CACHE)


TABLE = "parallel_muse.json"
SAVING_PLOT = "muse_saving.png"


def _plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    from langgraph_parallel.eval.muse_report import plot_saving_vs_length

    return plot_saving_vs_length(rows, path)


def draw_saving(out: Path) -> Path | None:
    """Draw ``OUT/muse_saving.png`` from the rows of the samples ``OUT/parallel_muse.json`` names.

    The run draws it this way when it ends, and ``langgraph-parallel results --draw`` again
    from the committed rows (the plot is not committed).

    Returns:
        The plot, or ``None`` where no question has both systems' rows.
    """
    names = json.loads((out / TABLE).read_text(encoding="utf-8"))["datasets"]
    rows = [{**r, "dataset": name} for name in names for r in results_in(out / name)]
    return _plot(rows, out / SAVING_PLOT)


def _run_main(run: Run) -> None:
    """Run (or resume) the three samples and analyse them apart and together."""
    names = _names(run.settings["setting"])
    if len(names) > 1:
        raise UserError(
            f"--set setting=: one of {', '.join(SWEEP)} (got {names}); the sweep takes several"
        )
    setting = SWEEP[names[0]] if names else {}
    model = run.settings["model"]
    limits = sample_limits(run.settings["sample_limits"])
    everything: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "command": run.command,
        "settings": {
            "common": flags(COMMON),
            "datasets": {name: flags(fields) for name, fields in datasets().items()},
            "limit": run.limit,
            "sample_limits": limits,
            "parallel_muse": flags(setting),
            "model": model,
        },
        "datasets": {},
    }
    for name, sample in datasets().items():
        folder = run.out / name
        # A setting's fields are ParallelMuse's own; the independent rollouts ignore them.
        fields = {**sample, **COMMON, "model": model, "graphs": (PARTIAL, INDEPENDENT)}
        fields |= {"join": "select", **setting, "out": str(folder)}
        bench_chains(run, fields, limits.get(name))
        rows = [{**r, "dataset": name} for r in results_in(folder)]
        result["datasets"][name] = analyse(rows)
        everything += rows
    result["all"] = analyse(everything)
    Experiment.write_tables(run.out, Path(TABLE).stem, result, markdown(result))
    draw_saving(run.out)


def _run_sweep(run: Run) -> None:
    """Run each :data:`SWEEP` setting of ``parallel-muse`` against independent rollouts."""
    chosen = _names(run.settings["settings"]) or list(SWEEP)
    model = run.settings["model"]
    result: dict[str, Any] = {"command": run.command, "settings": SWEEP, "model": model, "runs": {}}

    def one(graph: str, name: str, setting: dict[str, Any]) -> list[dict[str, Any]]:
        folder = run.out / "sweep" / name
        # Later keys win: a setting's own join/reports replace these.
        fields = {**datasets()["musique"], **COMMON, "model": model, "graphs": (graph,)}
        fields |= {"join": "majority", "reports": "contested", **setting, "out": str(folder)}
        bench_chains(run, fields)
        return results_in(folder)

    # The independent rollouts are re-run here, by the same code and engine as the settings,
    # rather than taken from the main run, which may predate them.
    baseline = one(INDEPENDENT, "independent", {})
    for name in chosen:
        rows = one(PARTIAL, name, SWEEP[name])
        ids = {r["id"] for r in rows}
        result["runs"][name] = analyse(rows + [r for r in baseline if r["id"] in ids])
    Experiment.write_tables(run.out, "sweep", result, sweep_markdown(result))


EXPERIMENT = Experiment(
    name="parallel-muse",
    about="ParallelMuse partial rollouts vs 8 independent rollouts, MuSiQue/2Wiki/HotpotQA chains",
    out="benchmarks/parallel_muse",
    run=_run_main,
    limit=17,
    limit_means="questions per sample",
    settings={"setting": "ppl-top1", "model": "auto", "concurrency": 4, "sample_limits": ""},
    measures=(*GRAPHS, *MUSE, *ENGINE, *HARNESS, *MUSE_HARNESS),
)
SWEEP_EXPERIMENT = Experiment(
    name="parallel-muse-sweep",
    about="ParallelMuse branching settings (SWEEP) vs independent rollouts, MuSiQue",
    out="benchmarks/parallel_muse",
    run=_run_sweep,
    limit=8,
    settings={"settings": "", "model": "auto", "concurrency": 4},
)
