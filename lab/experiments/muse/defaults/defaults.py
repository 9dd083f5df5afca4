"""ParallelMuse under its shipped defaults vs 8 independent rollouts: the experiment's spec.

``langgraph-parallel bench run parallel-muse-defaults`` runs the one harness, ``bench``, with
``--graphs parallel-muse,rollouts-majority`` on the first ``--limit`` HotpotQA bridge questions
of the ``parallel-muse`` experiment's held-out sample (seed 0), BM25, ``max_turns`` 6,
concurrency 4, every ParallelMuse default, the prefix cache warm across questions as a user's is,
8 GiB of it, the engine pinned to float32 (:data:`ENGINE`: a run resumed in pieces on CPUs with
and without native bfloat16 would otherwise mix two dtypes' trajectories in one table; each
piece's CPU is in ``run.json``). It resumes the rows of ``--out``, then writes ``joins.json`` and
``joins.md`` beside them (:mod:`.joins`, :mod:`.page`).

Its settings:

- ``graphs``: ``parallel-muse`` alone tries one ParallelMuse setting against the independent
  rollouts of ``base``'s rows (the same questions), which it does not run again;
- ``muse``: that setting, as ``KEY=VALUE,...`` of ``bench``'s ParallelMuse flags
  (``branch_temperature=1.0``, ``budget=11,samples_per_step=5``);
- ``base``: an earlier run's folder beside ``--out``, whose ParallelMuse rows this run's are
  paired with (``before`` in ``joins.json``);
- ``fresh_cache``: empty the prefix cache before each question (the paper's comparison).

The committed runs are the folders of ``benchmarks/parallel_muse/defaults/`` (its README says
which command made each). ``python -m lab.experiments.muse.defaults.defaults FOLDER [BASE]``
writes a committed folder's tables again from its rows, naming the command that makes them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import ENGINE as ENGINE_CODE
from lab.code_age import GRAPHS, HARNESS, MUSE, MUSE_HARNESS
from lab.experiments.muse.defaults.joins import against, analyse
from lab.experiments.muse.defaults.page import markdown
from lab.paths import checkout_dir
from lab.runner import run_command
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.apps.bench_muse import MUSE_OPTIONS
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.paths import repo_data_dir

__all__ = [
    "ENGINE",
    "EXPERIMENT",
    "bridge_spec",
    "command_for",
    "main",
    "muse_settings",
    "write_joins",
]

NAME = "parallel-muse-defaults"
ENGINE = {"kv_cache_memory_bytes": 8 << 30, "dtype": "float32"}
"""The in-process engine of these runs (``LANGGRAPH_PARALLEL_ENGINE``)."""
GRAPH_PAIR = f"{PARTIAL},{INDEPENDENT}"


def muse_settings(text: str) -> dict[str, Any]:
    """``budget=11,samples_per_step=5`` -> ``{"budget": 11, "samples_per_step": 5}``.

    Each value is typed as ``bench``'s flag of that name takes it.

    Raises:
        UserError: A part that is not ``KEY=VALUE`` of a ParallelMuse flag.
    """
    out: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        key = key.strip().replace("-", "_")
        option = MUSE_OPTIONS.get(key)
        if option is None or not value:
            raise UserError(
                f"--set muse={text}: write KEY=VALUE,... with KEY one of {', '.join(MUSE_OPTIONS)}."
            )
        try:
            out[key] = option.get("type", str)(value.strip())
        except ValueError:
            raise UserError(f"--set muse={text}: {key} takes a number.") from None
    return out


def bridge_spec(**fields: Any) -> BenchSpec:
    """Return a spec on these runs' questions and agent settings, with ``fields`` added.

    The held-out HotpotQA bridge questions (seed 0), BM25, ``max_turns`` 6 and each graph's
    default model; ``bench run parallel-muse-repeats`` runs the same.
    """
    return BenchSpec(
        dataset=str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
        types=("bridge",),
        index="bm25",
        max_turns=6,
        seed=0,
        model="auto",
        **fields,
    )


def _spec(run: Run) -> BenchSpec:
    s = run.settings
    return bridge_spec(
        limit=run.limit,
        graphs=tuple(filter(None, s["graphs"].split(","))),
        concurrency=s["concurrency"],
        fresh_cache=s["fresh_cache"],
        muse=muse_settings(s["muse"]),
        out=str(run.out),
    )


def write_joins(folder: Path, command: str | None = None, base: Path | None = None) -> str:
    """Write ``folder``'s ``joins.json`` and ``joins.md`` from its rows; return the command.

    Args:
        folder: A run's rows (with its ``run.json``).
        command: The command that made the rows, which the page names (``None``: the ``bench
            run`` command that makes them, :func:`command_for`).
        base: An earlier run of the same questions, whose ParallelMuse rows this run's are
            compared with (``before``); a run of ParallelMuse alone takes its independent
            rollouts from it (``rollouts_from``).
    """
    rows = results_in(folder)
    before = results_in(base) if base else []
    rollouts_from = base if base and not any(r["graph"] == INDEPENDENT for r in rows) else None
    if rollouts_from:
        rows = [*rows, *(r for r in before if r["graph"] == INDEPENDENT)]
    run_json = folder / "run.json"
    settings = json.loads(run_json.read_text()) if run_json.exists() else {}
    result = analyse(rows)
    result["fresh_cache"] = bool(settings.get("fresh_cache"))
    if settings.get("muse"):
        result["muse"] = settings["muse"]
    if rollouts_from:
        result["rollouts_from"] = rollouts_from.name
    if base:
        result["before"] = {"folder": base.name, **against(rows, before)}
    command = command or command_for(result, folder)
    Experiment.write_tables(folder, "joins", result, markdown(result, command), indent=1)
    return command


def command_for(result: Mapping[str, Any], folder: Path) -> str:
    """Return the ``bench run`` command that makes the rows of ``folder``, from its ``joins.json``.

    ``result`` is that file: a ParallelMuse-only run names its independent rollouts' folder
    (``rollouts_from``), an earlier run compared with names its own (``before``).
    """
    pairs = [f"graphs={PARTIAL}"] if result.get("rollouts_from") else []
    if muse := result.get("muse"):
        pairs.append("muse=" + ",".join(f"{k}={v}" for k, v in muse.items()))
    if before := result.get("before"):
        pairs.append(f"base={before['folder']}")
    if result.get("fresh_cache"):
        pairs.append("fresh_cache=true")
    where = folder.resolve()
    root = checkout_dir()
    out = where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
    n = result["n"]
    return run_command(
        NAME,
        limit=None if n == EXPERIMENT.limit else n,
        out=None if out == EXPERIMENT.out else out,
        pairs=pairs,
    )


def _run(run: Run) -> None:
    """Run (or resume) the rows into ``run.out``, then write their tables beside them."""
    base = run.out.parent / run.settings["base"] if run.settings["base"] else None
    if base and not (base / "run.json").exists():
        raise UserError(f"--set base={run.settings['base']}: {base} holds no run.")
    run.bench(_spec(run), child=True, engine=ENGINE)
    write_joins(run.out, run.command, base)


def main(argv: Sequence[str] | None = None) -> int:
    """Write a committed folder's tables again: ``FOLDER [BASE]`` (``BASE``: as ``base``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        print("usage: python -m lab.experiments.muse.defaults.defaults FOLDER [BASE]")
        return 2
    write_joins(Path(args[0]), base=Path(args[1]) if len(args) > 1 else None)
    return 0


EXPERIMENT = Experiment(
    name=NAME,
    about="ParallelMuse under its shipped defaults vs 8 independent rollouts, HotpotQA bridge, "
    "the cache warm",
    out="benchmarks/parallel_muse/defaults/hotpotqa",
    run=_run,
    limit=25,
    limit_means="held-out HotpotQA bridge questions",
    settings={
        "graphs": GRAPH_PAIR,
        "muse": "",
        "base": "",
        "fresh_cache": False,
        "concurrency": 4,
    },
    measures=(*GRAPHS, *MUSE, *ENGINE_CODE, *HARNESS, *MUSE_HARNESS),
)


if __name__ == "__main__":
    raise SystemExit(main())
