"""Benchmarks as data: a :class:`BenchSpec` says what to run, :func:`run_benchmark` runs it.

Named graphs over a question file, resumable, into one folder: ``results.jsonl`` (one line per
finished question), ``summary.json``, ``report.md`` with the command that reproduces the run,
the PNG plots, and ``run.json``, the settings that decide the results. Running a spec into the
same folder again resumes; more graphs or a larger ``limit`` only run the new pairs, but other
settings (model, dataset, seed, ...) are refused, since their rows would be mixed with the old
ones.

The ``langgraph-parallel bench`` command turns its flags into a spec (``bench --spec FILE``
reads one written as JSON, which is how a child process gets it); Python builds one directly.
The project's own experiments (``bench run NAME``) build specs too, in the lab of a clone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_parallel.agent.context import PassageBudgetOption
from langgraph_parallel.apps.bench_muse import MUSE_OPTIONS, fresh_cache_hook
from langgraph_parallel.apps.registry import MUSE_GRAPHS
from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import source_commit
from langgraph_parallel.protocol import THINK_MAX_CHARS
from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX

__all__ = ["RUN_FILE", "BenchSpec", "cmd_bench", "run_benchmark", "source_commit"]

RUN_FILE = "run.json"


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


@dataclass(frozen=True)
class BenchSpec:
    """One benchmark run: which graphs, on which questions, with which settings, into where.

    The fields are the ``bench`` command's flags (``--max-turns`` is ``max_turns``); the
    defaults are its defaults.

    Attributes:
        dataset: Question file, normalised ``.jsonl(.gz)``.
        graphs: Graph names of the registry (``parallel-search``, ``sequential``, ...).
        out: Output folder; running into it again resumes.
        limit: The first N questions (after ``seed``); ``None``: all.
        types: Question types to keep; ``None``: all.
        concurrency: Questions in flight at once.
        seed: Shuffle seed; ``None``: file order.
        model: One model for every graph, or ``"auto"``: each graph's default.
        max_turns: Model steps per question.
        top_k: Documents per sub-query.
        think_max_chars: Most characters of a constrained step's ``<think>``.
        final_answer_step: End at ``max_turns`` with an answer-only step.
        corpus: Corpus file or folder, or ``"contexts"`` (the rows' own paragraphs);
            ``None``: the bundled one.
        index: Corpus index kind.
        passage_sentences: Sentences shown per passage: ``"auto"``, ``None`` (all) or N.
        server: A ``langgraph-parallel serve`` address to run the models on; ``None``: in
            process.
        retry_deadline: Seconds to ride out a model server's restart; ``None``: the default.
        fresh_cache: Empty the engine's prefix cache before each graph.
        muse: ParallelMuse settings (``MuseContext`` fields) for the ParallelMuse graphs.
    """

    dataset: str
    graphs: tuple[str, ...]
    out: str
    limit: int | None = None
    types: tuple[str, ...] | None = None
    concurrency: int = 1
    seed: int | None = None
    model: str = "auto"
    max_turns: int = 4
    top_k: int = 3
    think_max_chars: int = THINK_MAX_CHARS
    final_answer_step: bool = True
    corpus: str | None = None
    index: str = DEFAULT_INDEX
    passage_sentences: PassageBudgetOption = "auto"
    server: str | None = None
    retry_deadline: float | None = None
    fresh_cache: bool = False
    muse: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from langgraph_parallel.apps.registry import GRAPH_NAMES

        # Lists (from JSON or a caller) become tuples: a spec is a value.
        object.__setattr__(self, "graphs", tuple(dict.fromkeys(self.graphs)))
        if self.types is not None:
            object.__setattr__(self, "types", tuple(dict.fromkeys(self.types)))
        object.__setattr__(self, "out", str(self.out))
        object.__setattr__(self, "dataset", str(self.dataset))
        unknown = [name for name in self.graphs if name not in GRAPH_NAMES]
        if not self.graphs or unknown:
            raise UserError(
                f"Unknown graph(s) {', '.join(unknown) or repr(self.graphs)}; pass --graphs as a "
                f"comma-separated list of: {', '.join(GRAPH_NAMES)}."
            )
        if self.concurrency < 1:
            raise UserError(f"--concurrency must be at least 1 (got {self.concurrency}).")
        if self.limit is not None and self.limit < 1:
            raise UserError(f"--limit must be at least 1 (got {self.limit}).")
        bad = sorted(set(self.muse) - set(MUSE_OPTIONS))
        if bad:
            raise UserError(
                f"Unknown ParallelMuse setting(s) {', '.join(bad)}: {list(MUSE_OPTIONS)}."
            )
        if self.muse and not set(self.graphs) & set(MUSE_GRAPHS):
            flags = ", ".join("--" + key.replace("_", "-") for key in self.muse)
            raise UserError(f"{flags} apply to the graphs {', '.join(MUSE_GRAPHS)}; add one.")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BenchSpec:
        """Return the spec of ``bench``'s parsed flags (``--spec FILE``: the file's).

        Raises:
            UserError: A required flag is missing, or the spec file cannot be read.
        """
        if getattr(args, "spec", None):
            return cls.from_json(Path(args.spec))
        missing = [f"--{f}" for f in ("dataset", "graphs", "out") if not getattr(args, f)]
        if missing:
            raise UserError(
                f"bench needs {', '.join(missing)} (or --spec FILE); or run a declared "
                "experiment: bench list, bench run NAME."
            )
        fields = {f.name for f in dataclasses.fields(cls)} - {"graphs", "types", "muse"}
        muse = {key: getattr(args, key) for key in MUSE_OPTIONS if getattr(args, key) is not None}
        return cls(
            graphs=tuple(_names(args.graphs)),
            types=tuple(_names(args.types)) if args.types else None,
            muse=muse,
            **{name: getattr(args, name) for name in fields},
        )

    def to_json(self) -> str:
        """Return the spec as JSON (what :meth:`from_json` reads back)."""
        return json.dumps(dataclasses.asdict(self) | {"muse": dict(self.muse)}, indent=2)

    @classmethod
    def from_json(cls, path: Path) -> BenchSpec:
        """Read a spec written by :meth:`to_json`.

        Raises:
            UserError: The file is missing, not JSON, or names no field of a spec.
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise UserError(
                f"{path}: not a benchmark spec ({exc}); write one with to_json()."
            ) from exc

    def command(self) -> str:
        """Return the ``bench`` command line of this spec, with every setting explicit."""
        parts = ["langgraph-parallel", "bench", "--dataset", self.dataset]
        if self.limit is not None:
            parts += ["--limit", str(self.limit)]
        if self.types:
            parts += ["--types", ",".join(self.types)]
        parts += ["--graphs", ",".join(self.graphs), "--out", self.out]
        parts += ["--concurrency", str(self.concurrency)]
        if self.seed is not None:
            parts += ["--seed", str(self.seed)]
        parts += ["--model", self.model, "--max-turns", str(self.max_turns)]
        parts += ["--top-k", str(self.top_k)]
        if self.think_max_chars != THINK_MAX_CHARS:
            parts += ["--think-max-chars", str(self.think_max_chars)]
        parts += [] if self.final_answer_step else ["--no-final-answer-step"]
        if self.corpus:
            parts += ["--corpus", self.corpus]
        if self.passage_sentences != "auto":
            parts += ["--passage-sentences", str(self.passage_sentences or "all")]
        parts += ["--index", self.index]
        for key in MUSE_OPTIONS:
            if key in self.muse:
                parts += ["--" + key.replace("_", "-"), str(self.muse[key])]
        parts += ["--fresh-cache"] if self.fresh_cache else []
        # Where the model runs and how long a call may wait for it: not in run.json, but part of
        # how the rows were made.
        if self.server:
            parts += ["--server", self.server]
        if self.retry_deadline is not None:
            parts += ["--retry-deadline", f"{self.retry_deadline:g}"]
        return shlex.join(parts)


def _check_settings(out: Path, settings: dict[str, Any], server: str | None = None) -> None:
    """Refuse to resume into a folder whose rows were made with other settings.

    ``run.json`` also lists the commits whose code wrote rows into the folder (``commits``),
    the adapter hashes of the models that wrote them (``adapters``) and the machines they ran
    on with the in-process engine's dtype (``machines``): a run resumed in pieces names each.
    """
    from langgraph_parallel.models.identity import adapter_of

    path = out / RUN_FILE
    commits: list[str] = []
    adapters: dict[str, list[str]] = {}
    machines: list[dict[str, Any]] = []
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
        machines = list(previous.get("machines") or [])
    commits = list(dict.fromkeys([*commits, source_commit()]))
    if (here := machine_record(server)) not in machines:
        machines.append(here)
    # The weights each model named when rows were written: a folder resumed after an adapter
    # changed lists both hashes, and the results index calls such a run stale.
    for model in dict.fromkeys((settings.get("models") or {}).values()):
        if digest := adapter_of(model):
            adapters[model] = list(dict.fromkeys([*adapters.get(model, []), digest]))
    out.mkdir(parents=True, exist_ok=True)
    record = {
        **settings,
        "commits": commits,
        **({"adapters": adapters} if adapters else {}),
        "machines": machines,
    }
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def machine_record(server: str | None = None) -> dict[str, Any]:
    """Describe this machine for ``run.json``: CPU, cores, native bfloat16, GPU, engine dtype.

    Args:
        server: The ``serve`` address the models ran on, if any. Its engine, not this process,
            chose the dtype then, so the record says ``served`` rather than this machine's.
    """
    from langgraph_parallel.models.cpu import machine
    from langgraph_parallel.models.engine import engine_defaults

    dtype = "served" if server else str(engine_defaults().get("dtype", "auto"))
    return {**machine(), "dtype": dtype}


def run_benchmark(spec: BenchSpec) -> Path:
    """Run (or resume) ``spec``; write its rows, summary, report and plots; return its folder.

    Raises:
        UserError: A setting the folder's earlier rows were not made with, a missing file, no
            question selected, or a model a ``server`` does not serve. Rows written until
            then stay: the same spec resumes.
    """
    from langgraph_parallel.apps.arguments import retry_options
    from langgraph_parallel.apps.registry import build_graph, default_model, load_model
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.eval.harness import RESULTS_FILE, load_results, run_graphs
    from langgraph_parallel.eval.report import write_report
    from langgraph_parallel.models.served import find_server
    from langgraph_parallel.retrieval.indexes import corpus_index

    types = list(spec.types) if spec.types else None
    questions = load_questions(spec.dataset, types=types, limit=spec.limit, seed=spec.seed)
    if not questions:
        raise UserError(f"No question selected from {spec.dataset}; check --limit and --types.")
    names = list(spec.graphs)
    chosen = {name: default_model(name) if spec.model == "auto" else spec.model for name in names}
    muse = dict(spec.muse)
    corpus = spec.corpus
    if corpus == "contexts":
        from langgraph_parallel.eval.contexts import context_corpus_of

        corpus = str(context_corpus_of(spec.dataset))
    out = Path(spec.out)
    settings = {
        "dataset": str(Path(spec.dataset).resolve()),
        "types": types,
        "seed": spec.seed,
        "model": spec.model,
        "models": chosen,
        "max_turns": spec.max_turns,
        "top_k": spec.top_k,
        "think_max_chars": spec.think_max_chars,
        "passage_sentences": spec.passage_sentences,
        "final_answer_step": spec.final_answer_step,
        "corpus": corpus and str(Path(corpus).resolve()),
        "index": spec.index,
        "fresh_cache": spec.fresh_cache,
        "muse": muse,  # always recorded, so a resume with other graphs keeps them in run.json
    }
    _check_settings(out, settings, spec.server)
    # One engine per model; with a server, each model must be the one the server serves.
    models = {
        m: load_model(m, base_url=spec.server and find_server(m, spec.server), check=True)
        for m in dict.fromkeys(chosen.values())
    }
    # The direct baseline needs no index; loading it costs time and memory.
    needs_search = any(name != "direct" for name in names)
    search = corpus_index(corpus, kind=spec.index) if needs_search else None
    options: dict[str, Any] = {"max_turns": spec.max_turns, "top_k": spec.top_k}
    options.update(retry_options(spec.retry_deadline))
    options["passage_sentences"] = spec.passage_sentences  # the direct baseline ignores it
    options["final_answer_step"] = spec.final_answer_step  # the direct baseline drops it
    if spec.think_max_chars != THINK_MAX_CHARS:  # the direct baseline has no think bound
        options["think_max_chars"] = spec.think_max_chars
    graphs = {
        name: build_graph(
            name, models[chosen[name]], search, **options, **(muse if name in MUSE_GRAPHS else {})
        )
        for name in names
    }
    before = fresh_cache_hook({n: models[chosen[n]] for n in names}) if spec.fresh_cache else None
    summary = run_graphs(
        questions, graphs, out, concurrency=spec.concurrency, warmup=True, before_graph=before
    )

    wanted = {(name, q.id) for name in names for q in questions}
    rows = [r for r in load_results(out / RESULTS_FILE) if (r["graph"], r["id"]) in wanted]
    paths = write_report(summary, out, command=spec.command(), rows=rows)
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
    return out


def cmd_bench(args: argparse.Namespace) -> int:
    """``bench``: run the spec of the command's flags (or of ``--spec FILE``)."""
    run_benchmark(BenchSpec.from_args(args))
    return 0
