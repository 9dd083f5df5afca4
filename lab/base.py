"""What an experiment is (:class:`Experiment`) and what one run of it gets (:class:`Run`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.bench_runs import bench_here, bench_in_child
from langgraph_parallel.apps.bench import BenchSpec
from langgraph_parallel.errors import UserError

__all__ = ["Experiment", "Run", "resolve_settings"]


@dataclass
class Run:
    """One invocation of an experiment: where it writes, how far it goes, with what settings.

    Attributes:
        experiment: The experiment's name.
        out: Output folder (created by the runs).
        limit: The ``--limit`` given, else the experiment's default (its meaning is the
            experiment's ``limit_means``).
        settings: The experiment's settings with the ``--set`` overrides applied.
        command: The command line that reproduces this run (recorded in the tables).
        models: Models the run used, as ``--model`` names them (their hashes go to
            ``summary.json``); :meth:`bench` adds its own.
        folders: Harness folders the run wrote (their rows are compressed when it ends).
    """

    experiment: str
    out: Path
    limit: int | None
    settings: dict[str, Any]
    command: str
    models: list[str] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)

    def bench(
        self, spec: BenchSpec, *, child: bool = False, engine: Mapping[str, Any] | None = None
    ) -> Path:
        """Run (or resume) ``spec``; return its output folder.

        Args:
            spec: What the harness runs.
            child: In a child process (one engine per process, resumed after a crash), else
                in this one.
            engine: Engine settings of the child (``LANGGRAPH_PARALLEL_ENGINE``); only with
                ``child``, since this process's engine may already be running.

        Raises:
            ValueError: ``engine`` without ``child``.
        """
        if engine is not None and not child:
            raise ValueError("engine settings apply to a child run only (child=True)")
        folder = Path(spec.out)
        if spec.model == "auto":
            from langgraph_parallel.apps.registry import default_model

            self.uses(*(default_model(g) for g in spec.graphs))
        else:
            self.uses(spec.model)
        if folder not in self.folders:
            self.folders.append(folder)
        if child:
            bench_in_child(spec, engine=engine)
        else:
            bench_here(spec)
        return folder

    def uses(self, *models: str) -> None:
        """Record models the run used (for ``summary.json``)."""
        self.models += [m for m in models if m not in self.models]


@dataclass(frozen=True)
class Experiment:
    """A benchmark declared once: run with ``langgraph-parallel bench run NAME``.

    Attributes:
        name: The name ``bench run`` takes.
        about: One line for ``bench list``: what it measures, on what.
        out: Default output folder (``--out``), relative to the working directory.
        run: Runs (or resumes) it and writes its tables into ``run.out``.
        limit: Default ``--limit`` (``None``: everything).
        limit_means: What ``--limit`` counts (``questions per sample``, ``repeats``, ...).
        settings: Its settings and their defaults (those of the committed run);
            ``--set KEY=VALUE`` overrides one for a run, typed as its default.
        measures: The files and folders its figures depend on, relative to the checkout: a
            run older than a change to their code is stale (:mod:`lab.code_age`). What runs
            the graphs and times them, not the analysis that reads the rows again, nor the
            module declaring the experiment (each run records the settings it ran with).
    """

    name: str
    about: str
    out: str
    run: Callable[[Run], None]
    limit: int | None = None
    limit_means: str = "questions"
    settings: Mapping[str, Any] = field(default_factory=dict)
    measures: tuple[str, ...] = ()

    @staticmethod
    def write_tables(
        out: Path,
        name: str,
        result: Mapping[str, Any],
        page: str | None = None,
        *,
        indent: int = 2,
        page_name: str | None = None,
    ) -> Path:
        """Write a result's tables into ``out``: ``NAME.json``, and its page ``NAME.md``.

        What every experiment and analysis of the lab does when it ends, written once: the
        folder is made, the JSON written with ``indent`` and a final newline, the page (when
        given) beside it and printed; without a page, where the JSON went is printed.

        Args:
            out: The folder (made if missing).
            name: The files' stem.
            result: What the JSON holds.
            page: The Markdown page of ``result`` (``None``: a JSON file alone).
            indent: The JSON's indent (the committed files' own: 1 or 2).
            page_name: The page's file name, where it is not ``NAME.md``.

        Returns:
            The JSON file's path.
        """
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.json"
        path.write_text(json.dumps(result, indent=indent) + "\n", encoding="utf-8")
        if page is None:
            print(f"wrote {path}")
            return path
        (out / (page_name or f"{name}.md")).write_text(page, encoding="utf-8")
        print(page)
        return path


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _typed(key: str, text: str, default: Any) -> Any:
    if isinstance(default, bool):
        if text.lower() not in _TRUE | _FALSE:
            raise UserError(f"--set {key}={text}: {key} is true or false.")
        return text.lower() in _TRUE
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(text)
            except ValueError:
                raise UserError(f"--set {key}={text}: {key} is a number.") from None
    return text


def resolve_settings(experiment: Experiment, pairs: Sequence[str]) -> dict[str, Any]:
    """Return the experiment's settings with ``KEY=VALUE`` overrides, each typed as its default.

    Raises:
        UserError: A pair without ``=`` or naming no setting of the experiment.
    """
    settings = dict(experiment.settings)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in settings:
            known = ", ".join(settings) or "none"
            raise UserError(
                f"--set {pair!r}: give KEY=VALUE with KEY a setting of {experiment.name} ({known})."
            )
        settings[key] = _typed(key, text.strip(), settings[key])
    return settings
