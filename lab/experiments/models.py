r"""Models compared on the same questions: by default SmolLM2-135M-Instruct vs Gemma-3-270M.

``langgraph-parallel bench run models`` runs ``bench`` with the sequential and ParallelSearch
graphs once per model (each in OUT/<model>, resumable) on the same seeded HotpotQA sample, then
writes ``OUT/models.md``/``.json``: per model and question class, LLM calls, turns,
decomposition rate, invalid steps, answered rate, EM and F1. The project's default model is the
one this table shows better at the ParallelSearch protocol (see docs/guides/models.md).

Before/after GRPO training, on questions held out from training::

    langgraph-parallel bench run models --set models=smollm2,runs/rl/model \\
        --set graphs=parallel-search --limit 100 --out benchmarks/rl/eval
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.experiments.hotpotqa import analyse, dataset, markdown
from lab.paths import checkout_dir
from lab.provenance import markdown_command, pct, shown_command
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.eval.results import results_in

__all__ = ["EXPERIMENT", "render_models"]


def _run(run: Run) -> None:
    s = run.settings
    results: dict[str, Any] = {}
    sections = [f"# Models on ParallelSearch\n\nCommand: `{run.command}`\n"]
    for model in s["models"].split(","):
        out = run.out / Path(model).name
        spec = BenchSpec(
            dataset=dataset(),
            limit=run.limit,
            seed=s["seed"],
            model=model,
            concurrency=s["concurrency"],
            graphs=tuple(s["graphs"].split(",")),
            out=str(out),
        )
        run.bench(spec)
        results[model] = analyse(results_in(out))
        body = markdown(results[model], run.command).split("\n", 4)[4]  # no title, no command
        sections.append(f"## {model}\n\n" + body.replace("## ", "### "))
    Experiment.write_tables(run.out, "models", results, "\n".join(sections))


EXPERIMENT = Experiment(
    name="models",
    about="base models compared (SmolLM2 vs Gemma-3) on ParallelSearch, HotpotQA",
    out="benchmarks/models",
    run=_run,
    limit=60,
    settings={
        "models": "smollm2,gemma3",
        "graphs": "sequential,parallel-search",
        "concurrency": 6,
        "seed": 0,
    },
)


def render_models(root: Path | None = None) -> str:
    """Why SmolLM2 is the base (README block ``models-results``)."""
    root = root or checkout_dir() / "benchmarks" / "models"
    result: dict[str, Any] = json.loads((root / "models.json").read_text())
    smol, gemma = (result[m]["by_class"]["all"]["parallel-search"] for m in ("smollm2", "gemma3"))
    decomposed = {
        m: result[m]["by_class"]["all"]["parallel-search"]["decomposition_rate"] for m in result
    }
    return (
        "SmolLM2 is the base because it did better on our ParallelSearch benchmark "
        f"(`benchmarks/models/models.md`, {smol['n']} HotpotQA questions, "
        f"{shown_command(markdown_command(root / 'models.md'))}"
        f"): EM {smol['em']:.3f} vs {gemma['em']:.3f} "
        f"for Gemma, which searched less ({gemma['turns']:.2f} turns per question vs "
        f"{smol['turns']:.2f}) and answered from memory. Share of questions with a `##` "
        f"decomposition under our few-shot prompt: SmolLM2 {pct(decomposed['smollm2'])}, "
        f"Gemma {pct(decomposed['gemma3'])}."
    )
