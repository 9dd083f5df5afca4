"""The trained policies against each other and against closed-book answering.

``langgraph-parallel bench run sft`` runs ``bench`` once per graph on its model
(``parallel-search`` on ``smollm2-parallel``, ``sequential`` on ``smollm2-sequential``, ``direct``
on the untrained ``smollm2``), each in its own process, on two samples, resumable:

- ``OUT/hotpotqa/<graph>``: a seeded sample of the bundled HotpotQA evaluation questions (held
  out from training by id) over the bundled corpus (``--limit``);
- ``OUT/2wiki/<graph>``: a seeded sample of 2WikiMultihopQA (never trained on: out of domain)
  over a corpus made of those questions' own paragraphs (setting ``wiki_limit``; 0 skips it).

Setting ``models`` (``GRAPH=MODEL`` pairs, comma-separated) runs a graph on a candidate policy
instead (an adapter folder from ``train sft``), to compare it with the shipped ones before
shipping it; ``update_cards`` writes the figures into the shipped adapters' cards (default
models only).

Then writes ``OUT/sft.md``/``.json``: per dataset, class and graph, LLM calls, search turns, the
decomposition rate of the first search (of the questions that searched), answered rate, EM, F1,
tokens and wall time; the calls and turns ratios of ``parallel-search`` to ``sequential`` on
parallelizable questions; and the prompt tokens the rules-only prompt saves over the few-shot one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE, GRAPHS, HARNESS
from lab.experiments.sft.sft_tables import GRAPH_MODELS, analyse, markdown
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.contexts import context_corpus, row_paragraphs
from langgraph_parallel.eval.datasets import QUESTION_FORMAT, load_questions
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import shared_data_dir

__all__ = ["EXPERIMENT", "graph_models", "samples", "wiki"]


def wiki() -> str:
    """Return the 2WikiMultihopQA sample (with paragraphs) of the trained-policy experiments."""
    return str(shared_data_dir() / "2wikimultihopqa_dev_sample500.jsonl.gz")


def wiki_corpus(limit: int, seed: int, out: Path) -> Path:
    """Write the paragraphs of the sampled 2Wiki questions as the corpus they are searched in."""
    chosen = {q.id for q in load_questions(wiki(), limit=limit, seed=seed)}
    rows = read_rows(wiki(), what="question file", fmt=QUESTION_FORMAT)
    return context_corpus((row_paragraphs(r) for r in rows if str(r["id"]) in chosen), out)


def samples(run: Run) -> dict[str, tuple[str, int | None, str | None]]:
    """Name -> (question file, limit, corpus) of the two samples (2Wiki unless ``wiki_limit`` 0).

    The HotpotQA one is the bundled sample over the bundled corpus; the 2Wiki one is searched
    among its own paragraphs, written into ``OUT/2wiki``.
    """
    from lab.experiments.hotpotqa import dataset

    runs: dict[str, tuple[str, int | None, str | None]] = {"hotpotqa": (dataset(), run.limit, None)}
    wiki_limit, seed = run.settings["wiki_limit"], run.settings["seed"]
    if wiki_limit:
        corpus = wiki_corpus(wiki_limit, seed, run.out / "2wiki")
        runs["2wiki"] = (wiki(), wiki_limit, str(corpus))
    return runs


def graph_models(pairs: list[str]) -> dict[str, str]:
    """Each graph's model: its default, or the one a ``GRAPH=MODEL`` pair names.

    Raises:
        ValueError: For a pair that names no known graph or no model.
    """
    models = dict(GRAPH_MODELS)
    for pair in pairs:
        graph, _, model = pair.partition("=")
        if graph not in models or not model:
            known = ",".join(GRAPH_MODELS)
            raise ValueError(f"models takes GRAPH=MODEL pairs, GRAPH one of {known} (got {pair!r})")
        models[graph] = model
    return models


def prompt_saving() -> dict[str, float]:
    """Mean prompt tokens of the few-shot and the rules-only first prompt on the HotpotQA sample."""
    from transformers import AutoTokenizer

    from lab.experiments.hotpotqa import dataset
    from langgraph_parallel.models.embedded import embedded_model_dir
    from langgraph_parallel.prompts import few_shot_prompt, rules_prompt

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir("smollm2"))
    questions = [q.question for q in load_questions(dataset())]
    few = mean_of([{"n": len(tokenizer.encode(few_shot_prompt(q, True)))} for q in questions], "n")
    rules = mean_of([{"n": len(tokenizer.encode(rules_prompt(q, True)))} for q in questions], "n")
    return {"few_shot": few, "rules": rules, "saved": few - rules}


def update_cards(result: dict[str, Any], out: Path) -> None:
    """Record each shipped policy's figures in its adapter card (``benchmarks`` key)."""
    from langgraph_parallel.models.adapters import MODEL_CARD, read_card
    from langgraph_parallel.models.embedded import ADAPTERS_DIR
    from langgraph_parallel.paths import portable_path

    keys = ("n", "llm_calls", "turns", "first_search_decomposed", "answered", "em", "f1")
    for graph in ("parallel-search", "sequential"):
        folder = ADAPTERS_DIR / GRAPH_MODELS[graph]
        card = read_card(folder)
        card["benchmarks"] = {
            "command": result["command"],
            "file": portable_path(out / "sft.json"),
            "graph": graph,
            "figures": {
                dataset: {
                    cls: {k: round(graphs[graph][k], 4) for k in keys}
                    for cls, graphs in part["by_class"].items()
                    if graph in graphs
                }
                for dataset, part in result["datasets"].items()
            },
        }
        (folder / MODEL_CARD).write_text(json.dumps(card, indent=2) + "\n")


def _run(run: Run) -> None:
    s = run.settings
    try:
        models = graph_models([p for p in s["models"].split(",") if p])
    except ValueError as exc:
        raise UserError(f"--set {exc}") from None
    if s["update_cards"] and models != GRAPH_MODELS:
        raise UserError("update_cards writes the shipped cards: run it on the default models only")
    result: dict[str, Any] = {"command": run.command, "models": models, "datasets": {}}
    for name, (dataset, limit, corpus) in samples(run).items():
        rows = []
        for graph, model in models.items():
            folder = run.out / name / graph
            spec = BenchSpec(
                dataset=dataset,
                seed=s["seed"],
                model=model,
                graphs=(graph,),
                concurrency=s["concurrency"],
                out=str(folder),
                limit=limit,
                corpus=corpus or None,
            )
            run.bench(spec, child=True)
            rows += results_in(folder)
        result["datasets"][name] = analyse(rows)
    result["prompt_tokens"] = prompt_saving()
    Experiment.write_tables(run.out, "sft", result, markdown(result))
    if s["update_cards"]:
        update_cards(result, run.out)


EXPERIMENT = Experiment(
    name="sft",
    about="the trained policies (parallel, sequential) and closed book, HotpotQA and 2Wiki",
    out="benchmarks/sft",
    run=_run,
    limit=100,
    limit_means="HotpotQA questions; 2Wiki: setting wiki_limit",
    measures=(*GRAPHS, *ENGINE, *HARNESS),
    settings={
        "wiki_limit": 50,
        "concurrency": 6,
        "seed": 0,
        "models": "",
        "update_cards": False,
    },
)
