"""Policies compared on held-out questions with ParallelSearch: before and after GRPO.

``langgraph-parallel bench run grpo`` runs ``bench --graphs parallel-search`` once per model of
the setting ``models`` (``name=model`` pairs, the first the reference), each in its own process
and resumable (``OUT/<dataset>/<name>``), on the bundled HotpotQA evaluation sample (held out
from SFT and GRPO by id; ``--limit``) and on the 2Wiki sample over its own paragraphs (never
trained on; setting ``wiki_limit``). Then writes ``OUT/grpo.md``/``.json``: per dataset, class
and model, the first-search decomposition rate (of the questions that searched), LLM calls,
turns, answered rate, EM and F1; and, against the first model, how many questions each other
model turned from wrong to right and from right to wrong (greedy decoding, so a change is the
weights', not sampling noise).
"""

from __future__ import annotations

from typing import Any

from lab.base import Experiment, Run
from lab.experiments.sft.sft import samples
from lab.experiments.sft.sft_tables import analyse
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.eval.results import results_in

__all__ = ["EXPERIMENT", "changes", "markdown"]

COLUMNS = ("n", "first_search_decomposed", "llm_calls", "turns", "answered", "em", "f1")


def changes(rows: list[dict[str, Any]], first: str, other: str) -> dict[str, int]:
    """Questions ``other`` got right that ``first`` got wrong, and the reverse, by class."""
    em = {(r["graph"], r["id"]): r["em"] for r in rows}
    out: dict[str, int] = {}
    for r in rows:
        if r["graph"] != first or (other, r["id"]) not in em:
            continue
        before, after = em[(first, r["id"])], em[(other, r["id"])]
        key = "gained" if after > before else "lost" if after < before else None
        if key:
            out[f"{r['class']}_{key}"] = out.get(f"{r['class']}_{key}", 0) + 1
    return out


def markdown(result: dict[str, Any]) -> str:
    """Return the tables of ``grpo.md``."""
    named = ", ".join(f"{k} = `{v}`" for k, v in result["models"].items())
    lines = [
        "# Policies before and after GRPO, ParallelSearch graph, held-out questions",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Models: {named}",
        "",
    ]
    for dataset, part in result["datasets"].items():
        lines += [f"## {dataset}", ""]
        for cls, models in part["by_class"].items():
            lines += [
                f"### {cls}",
                "",
                "| model | " + " | ".join(COLUMNS) + " |",
                "|---" * (len(COLUMNS) + 1) + "|",
            ]
            for name in result["models"]:
                if name in models:
                    m = models[name]
                    cells = [f"{m[k]:.0f}" if k == "n" else f"{m[k]:.3f}" for k in COLUMNS]
                    lines.append(f"| {name} | " + " | ".join(cells) + " |")
            lines.append("")
        for name, diff in part["changes"].items():
            text = ", ".join(f"{k} {v}" for k, v in sorted(diff.items())) or "none"
            lines.append(f"- EM changes, {name} against {next(iter(result['models']))}: {text}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _run(run: Run) -> None:
    s = run.settings
    models = dict(item.split("=", 1) for item in s["models"].split(","))
    result: dict[str, Any] = {"command": run.command, "models": models, "datasets": {}}
    first = next(iter(models))
    for dataset_name, (dataset, limit, corpus) in samples(run).items():
        rows = []
        for name, model in models.items():
            folder = run.out / dataset_name / name
            spec = BenchSpec(
                dataset=dataset,
                seed=s["seed"],
                model=model,
                graphs=("parallel-search",),
                concurrency=s["concurrency"],
                out=str(folder),
                limit=limit,
                corpus=corpus or None,
            )
            run.bench(spec, child=True)
            rows += [{**r, "graph": name} for r in results_in(folder)]
        part = analyse(rows)
        part.pop("parallel_over_sequential", None)
        part["changes"] = {name: changes(rows, first, name) for name in models if name != first}
        result["datasets"][dataset_name] = part
    Experiment.write_tables(run.out, "grpo", result, markdown(result))


EXPERIMENT = Experiment(
    name="grpo",
    about="policies before and after GRPO (setting models), parallel-search, held-out questions",
    out="benchmarks/rl/sft_grpo",
    run=_run,
    limit=300,
    limit_means="HotpotQA questions; 2Wiki: setting wiki_limit",
    settings={
        "models": "sft=smollm2-parallel,grpo=runs/grpo/adapter",
        "wiki_limit": 50,
        "concurrency": 6,
        "seed": 0,
    },
)
"""The committed run's models: ``grpo`` is a local ``train grpo`` adapter folder."""
