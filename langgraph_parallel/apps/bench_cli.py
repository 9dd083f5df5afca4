"""The ``langgraph-parallel bench`` command: run named graphs over a question file.

Outputs in ``--out``: ``results.jsonl`` (one line per finished question, resumable),
``summary.json``, ``report.md`` with the command that produced the run, the PNG plots, and
``run.json``, the settings that decide the results. Rerunning into the same folder resumes; more
graphs or a larger ``--limit`` only run the new pairs, but other settings (model, dataset, seed,
...) are refused, since their rows would be mixed with the old ones.

The project's own benchmarks are declared once each and run by name: ``bench list``, ``bench run
NAME`` (:mod:`langgraph_parallel.apps.experiments`).
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from langgraph_parallel.apps.arguments import (
    retry_options,
)
from langgraph_parallel.apps.bench_muse import (
    MUSE_GRAPHS,
    fresh_cache_hook,
    muse_flags,
    muse_settings,
)
from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import source_commit
from langgraph_parallel.protocol import THINK_MAX_CHARS

__all__ = ["RUN_FILE", "bench_command", "cmd_bench", "source_commit"]

RUN_FILE = "run.json"


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def _graph_names(text: str) -> list[str]:
    from langgraph_parallel.apps.registry import GRAPH_NAMES

    names = _names(text)
    unknown = [name for name in names if name not in GRAPH_NAMES]
    if not names or unknown:
        raise UserError(
            f"Unknown graph(s) {', '.join(unknown) or repr(text)}; pass --graphs as a "
            f"comma-separated list of: {', '.join(GRAPH_NAMES)}."
        )
    return names


def bench_command(args: argparse.Namespace) -> str:
    """Return the command line that reproduces this run, with every setting explicit."""
    parts = ["langgraph-parallel", "bench", "--dataset", str(args.dataset)]
    if args.limit is not None:
        parts += ["--limit", str(args.limit)]
    if args.types:
        parts += ["--types", ",".join(_names(args.types))]
    parts += ["--graphs", ",".join(_names(args.graphs)), "--out", str(args.out)]
    parts += ["--concurrency", str(args.concurrency)]
    if args.seed is not None:
        parts += ["--seed", str(args.seed)]
    parts += ["--model", args.model, "--max-turns", str(args.max_turns)]
    parts += ["--top-k", str(args.top_k)]
    if args.think_max_chars != THINK_MAX_CHARS:
        parts += ["--think-max-chars", str(args.think_max_chars)]
    parts += [] if args.final_answer_step else ["--no-final-answer-step"]
    if args.corpus:
        parts += ["--corpus", str(args.corpus)]
    if args.passage_sentences != "auto":
        parts += ["--passage-sentences", str(args.passage_sentences or "all")]
    parts += ["--index", args.index, *muse_flags(args)]
    # Where the model runs and how long a call may wait for it: not in run.json, but part of
    # how the rows were made.
    if args.server:
        parts += ["--server", args.server]
    if args.retry_deadline is not None:
        parts += ["--retry-deadline", f"{args.retry_deadline:g}"]
    return shlex.join(parts)


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    """Refuse to resume into a folder whose rows were made with other settings.

    ``run.json`` also lists the commits whose code wrote rows into the folder (``commits``) and
    the adapter hashes of the models that wrote them (``adapters``).
    """
    from langgraph_parallel.models.identity import adapter_of

    path = out / RUN_FILE
    commits: list[str] = []
    adapters: dict[str, list[str]] = {}
    if path.exists():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UserError(f"{path} is not valid JSON; delete it or use another --out.") from exc
        previous.setdefault("index", "dense")  # runs older than the index choice were dense
        previous.setdefault("think_max_chars", THINK_MAX_CHARS)  # and than the think bound
        previous.setdefault("fresh_cache", False)  # and than ParallelMuse's settings
        previous.setdefault("muse", {})
        previous.setdefault("passage_sentences", "auto")  # and than the passage budget
        previous.setdefault("final_answer_step", False)  # and than the final answer-only step
        if f"{previous.get('corpus')}.gz" == settings.get("corpus"):
            previous["corpus"] = settings["corpus"]  # the same file, compressed since (contexts)
        changed = sorted(k for k in settings if previous.get(k) != settings[k])
        if changed:
            was = ", ".join(f"{k}={previous.get(k)!r}" for k in changed)
            raise UserError(
                f"{out} holds results made with {was}; use another --out to change them."
            )
        commits = list(previous.get("commits") or [])
        adapters = {m: list(h) for m, h in (previous.get("adapters") or {}).items()}
    commits = list(dict.fromkeys([*commits, source_commit()]))
    # The weights each model named when rows were written: a folder resumed after an adapter
    # changed lists both hashes, and the results index calls such a run stale.
    for model in dict.fromkeys((settings.get("models") or {}).values()):
        if digest := adapter_of(model):
            adapters[model] = list(dict.fromkeys([*adapters.get(model, []), digest]))
    out.mkdir(parents=True, exist_ok=True)
    record = {**settings, "commits": commits, **({"adapters": adapters} if adapters else {})}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmark, then write the summary, report and plots and print the means."""
    from langgraph_parallel.apps.registry import build_graph, default_model, load_model
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.eval.harness import RESULTS_FILE, load_results, run_benchmark
    from langgraph_parallel.eval.report import write_report
    from langgraph_parallel.models.served import find_server
    from langgraph_parallel.retrieval.indexes import corpus_index

    missing = [f"--{f}" for f in ("dataset", "graphs", "out") if not getattr(args, f)]
    if missing:
        raise UserError(
            f"bench needs {', '.join(missing)}; or run a declared experiment: bench list, "
            "bench run NAME."
        )
    names = _graph_names(args.graphs)
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1 (got {args.concurrency}).")
    types = _names(args.types) if args.types else None
    questions = load_questions(args.dataset, types=types, limit=args.limit, seed=args.seed)
    if not questions:
        raise UserError(f"No question selected from {args.dataset}; check --limit and --types.")
    chosen = {name: default_model(name) if args.model == "auto" else args.model for name in names}
    muse = muse_settings(args, names)
    corpus = args.corpus
    if corpus == "contexts":
        from langgraph_parallel.eval.contexts import context_corpus_of

        corpus = str(context_corpus_of(args.dataset))
    out = Path(args.out)
    settings = {
        "dataset": str(Path(args.dataset).resolve()),
        "types": types,
        "seed": args.seed,
        "model": args.model,
        "models": chosen,
        "max_turns": args.max_turns,
        "top_k": args.top_k,
        "think_max_chars": args.think_max_chars,
        "passage_sentences": args.passage_sentences,
        "final_answer_step": args.final_answer_step,
        "corpus": corpus and str(Path(corpus).resolve()),
        "index": args.index,
        "fresh_cache": args.fresh_cache,
        "muse": muse,  # always recorded, so a resume with other graphs keeps them in run.json
    }
    _check_settings(out, settings)
    # One engine per model; with --server, each model must be the one the server serves.
    models = {
        m: load_model(m, base_url=args.server and find_server(m, args.server), check=True)
        for m in dict.fromkeys(chosen.values())
    }
    # The direct baseline needs no index; loading it costs time and memory.
    needs_search = any(name != "direct" for name in names)
    search = corpus_index(corpus, kind=args.index) if needs_search else None
    options: dict[str, Any] = {"max_turns": args.max_turns, "top_k": args.top_k}
    options.update(retry_options(args))
    options["passage_sentences"] = args.passage_sentences  # the direct baseline ignores it
    options["final_answer_step"] = args.final_answer_step  # the direct baseline drops it
    if args.think_max_chars != THINK_MAX_CHARS:  # the direct baseline has no think bound
        options["think_max_chars"] = args.think_max_chars
    graphs = {
        name: build_graph(
            name, models[chosen[name]], search, **options, **(muse if name in MUSE_GRAPHS else {})
        )
        for name in names
    }
    before = fresh_cache_hook({n: models[chosen[n]] for n in names}) if args.fresh_cache else None
    summary = run_benchmark(
        questions, graphs, out, concurrency=args.concurrency, warmup=True, before_graph=before
    )

    wanted = {(name, q.id) for name in names for q in questions}
    rows = [r for r in load_results(out / RESULTS_FILE) if (r["graph"], r["id"]) in wanted]
    paths = write_report(summary, out, command=bench_command(args), rows=rows)
    for name, block in summary["graphs"].items():
        m = block["all"]
        tokens = m["prompt_tokens"] + m["completion_tokens"]
        print(
            f"{name}: n={m['n']} em={m['em']:.3f} f1={m['f1']:.3f} "
            f"llm_calls={m['llm_calls']:.2f} turns={m['turns']:.2f} "
            f"sub_queries={m['sub_queries']:.2f} tokens={tokens:.0f} "
            f"cached={m['cached_prompt_tokens']:.0f} wall_s={m['wall_s']:.2f}"
        )
    print("wrote " + ", ".join(str(p) for p in [out / RESULTS_FILE, out / "summary.json", *paths]))
    return 0
