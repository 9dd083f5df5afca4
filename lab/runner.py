"""Run one experiment: settings, the run itself, compressed rows, ``summary.json``."""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from lab.base import Experiment, Run, resolve_settings
from lab.record import earlier_records, write_record
from langgraph_parallel.eval.results import compress_results

__all__ = ["run_command", "run_experiment"]


def run_command(
    name: str, *, limit: int | None = None, out: str | None = None, pairs: Sequence[str] = ()
) -> str:
    """Return the ``langgraph-parallel bench run`` command line of these arguments (as given)."""
    words = ["langgraph-parallel", "bench", "run", name]
    words += ["--limit", str(limit)] if limit is not None else []
    words += ["--out", out] if out is not None else []
    for pair in pairs:
        words += ["--set", pair]
    return shlex.join(words)


def run_experiment(
    experiment: Experiment,
    *,
    limit: int | None = None,
    out: str | Path | None = None,
    pairs: Sequence[str] = (),
) -> Run:
    """Run (or resume) ``experiment``; compress its rows and write its ``summary.json``.

    Args:
        experiment: What to run.
        limit: ``--limit`` (default: the experiment's).
        out: ``--out`` (default: the experiment's folder).
        pairs: ``--set KEY=VALUE`` overrides of its settings.

    Returns:
        The run, with the models it used and the folders it wrote.

    Raises:
        UserError: A bad setting, or as the experiment's runs do. The rows written until then
            stay: the same command resumes.
    """
    settings = resolve_settings(experiment, pairs)
    folder = Path(out if out is not None else experiment.out)
    run = Run(
        experiment=experiment.name,
        out=folder,
        limit=limit if limit is not None else experiment.limit,
        settings=settings,
        command=run_command(
            experiment.name, limit=limit, out=None if out is None else str(out), pairs=pairs
        ),
    )
    earlier = earlier_records(folder)
    start = time.perf_counter()
    experiment.run(run)
    wall_s = time.perf_counter() - start
    for written in run.folders:
        compress_results(written)
    write_record(
        folder,
        experiment=experiment.name,
        command=run.command,
        settings=settings,
        models=run.models,
        wall_s=wall_s,
        earlier=earlier,
    )
    return run
