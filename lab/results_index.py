"""The results index: every experiment of the catalog, its folders, and whether each is stale.

Two generated blocks, both from the committed files alone (:mod:`~.run_records`):
``benchmarks-index`` (``benchmarks/README.md``) lists, per experiment of
:data:`~.catalog.EXPERIMENTS` and per folder kept as history (:mod:`~.index_folders`), every
run folder with the commits its figures were made at, its models, its number of questions and
its verdict; ``results-index`` (the top of ``docs/results.md``) gives one row per experiment
folder with the experiment's headline (:mod:`~.headlines`). An experiment added to the catalog
appears in both at once, with its ``out`` folder ("not committed yet" until it has run).

The verdicts (**stale**, unshipped, unknown, current) and their rule are
:mod:`~.staleness`'s; a folder's verdict counts its runs'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.base import Experiment
from lab.catalog import EXPERIMENTS
from lab.headlines import headline
from lab.index_folders import (
    BENCHMARKS,
    KEPT_HISTORY,
    data_folders,
    experiment_folders,
    owner_of,
)
from lab.paths import checkout_dir
from lab.provenance import short_commit
from lab.run_records import RunRecord, read_run
from lab.staleness import (
    CURRENT,
    SEVERITY,
    STALE,
    Shipped,
    run_verdict,
    shipped_adapters,
)

__all__ = [
    "INDEX_BLOCKS",
    "Judged",
    "judged_runs",
    "render_benchmarks_index",
    "render_results_index",
]

INDEX_BLOCKS = ("results-index", "benchmarks-index")
"""The names of the two index blocks (they name every owned folder, so they own nothing)."""


@dataclass(frozen=True)
class Judged:
    """A run folder with its verdict (``None``: it recorded no model)."""

    run: RunRecord
    verdict: tuple[str, tuple[str, ...]] | None


def judged_runs(
    root: Path,
    shipped: Mapping[str, Shipped],
    experiments: Mapping[str, Experiment] = EXPERIMENTS,
) -> dict[str, list[Judged]]:
    """Return each owned folder (experiments' and kept history's) -> its judged runs."""
    owners = {f for e in experiments.values() for f in experiment_folders(e)} | set(KEPT_HISTORY)
    out: dict[str, list[Judged]] = {o: [] for o in owners}
    for folder in data_folders(root):
        owner = owner_of(folder, owners)
        run = read_run(root / folder) if owner else None
        if owner and run:
            verdict = run_verdict(run.models, run.commits, run.hashes, shipped, root)
            out[owner].append(Judged(run, verdict))
    return out


def _commits(runs: Sequence[Judged]) -> str:
    commits = list(dict.fromkeys(c for j in runs for c in j.run.commits))
    if not commits:
        return "not recorded"
    shown = ", ".join(short_commit(c) for c in commits[:3])
    return shown + (f" (+{len(commits) - 3} more)" if len(commits) > 3 else "")


def _models(runs: Sequence[Judged]) -> str:
    models = list(dict.fromkeys(m for j in runs for m in j.run.models))
    return ", ".join(f"`{m}`" for m in models) or "not recorded"


def _n(runs: Sequence[Judged]) -> str:
    ns = sorted({j.run.n for j in runs if j.run.n is not None})
    if not ns:
        return "—"
    return str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"


def _label(verdict: str, models: Sequence[str] = ()) -> str:
    word = f"**{verdict}**" if verdict == STALE else verdict
    return word if verdict == CURRENT or not models else f"{word} ({', '.join(models)})"


def _status(runs: Sequence[Judged]) -> str:
    judged = [j.verdict for j in runs if j.verdict is not None]
    if not judged:
        return "model not recorded"
    counts = Counter(v for v, _ in judged)
    if len(counts) == 1:
        models = list(dict.fromkeys(m for _, which in judged for m in which))
        return _label(judged[0][0], models)
    parts = [f"{_label(v)} {counts[v]}" for v in SEVERITY if counts[v]]
    return ", ".join(parts) + f" of {len(judged)} runs"


def _shipped_line(shipped: Mapping[str, Shipped]) -> str:
    parts = [
        f"`{s.model}`, adapter `{s.hash}` ("
        + (f"trained at {short_commit(s.trained)}, " if s.trained else "")
        + (f"in the tree since {short_commit(s.since)}" if s.since else "no git history here")
        + ")"
        for s in shipped.values()
    ]
    return (
        "Shipped today: "
        + "; ".join(parts)
        + ". **stale**: measured on a shipped policy's earlier adapter (re-run it); "
        "unshipped: a candidate model the package never shipped; unknown: no commit to tell "
        "by. The rule: `lab/staleness.py`."
    )


def _cell(text: str | None) -> str:
    return (text or "—").replace("|", "\\|")


def render_results_index(root: Path | None = None) -> str:
    """Render docs/results.md's table: one row per experiment folder, with its headline."""
    root = root or checkout_dir()
    shipped = shipped_adapters(root)
    runs = judged_runs(root, shipped)
    lines = [
        _shipped_line(shipped),
        "",
        "| experiment | folder | commits | models | n | headline | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, experiment in EXPERIMENTS.items():
        first = f"`bench run {name}`"
        for i, folder in enumerate(experiment_folders(experiment)):
            found = runs[folder]
            where = f"`{folder}/`"
            if not found:
                lines.append(f"| {first if i == 0 else ''} | {where} | not committed yet |||||")
                continue
            head = _cell(headline(name, root)) if i == 0 else ""
            lines.append(
                f"| {first if i == 0 else ''} | {where} | {_commits(found)} | {_models(found)} "
                f"| {_n(found)} | {head} | {_status(found)} |"
            )
    for folder in KEPT_HISTORY:
        found = runs[folder]
        lines.append(
            f"| kept history | `{folder}/` | {_commits(found)} | {_models(found)} | {_n(found)} "
            f"| — | {_status(found)} |"
        )
    return "\n".join(lines)


def _link(folder: str) -> str:
    relative = folder.removeprefix(BENCHMARKS).lstrip("/")
    return f"[{relative or '.'}/]({relative or '.'}/)"


def _run_table(found: Sequence[Judged], root: Path) -> list[str]:
    lines = ["| folder | commits | models | n | status |", "|---|---|---|---|---|"]
    for j in found:
        one = [j]
        folder = j.run.folder.relative_to(root).as_posix()
        lines.append(
            f"| {_link(folder)} | {_commits(one)} | {_models(one)} | {_n(one)} | {_status(one)} |"
        )
    return lines


def render_benchmarks_index(root: Path | None = None) -> str:
    """Render benchmarks/README.md's index: every experiment and kept folder, run by run."""
    root = root or checkout_dir()
    shipped = shipped_adapters(root)
    runs = judged_runs(root, shipped)
    lines = [_shipped_line(shipped)]
    for name, experiment in EXPERIMENTS.items():
        command = f"`langgraph-parallel bench run {name}`, default `--out {experiment.out}`."
        lines += ["", f"### `{name}`", "", f"{experiment.about}. {command}"]
        head = headline(name, root)
        lines += [f"Headline: {head}."] if head else []
        found = [j for folder in experiment_folders(experiment) for j in runs[folder]]
        if not found:
            lines += ["", "Not committed yet."]
            continue
        lines += ["", *_run_table(found, root)]
    lines += [
        "",
        "### Kept history",
        "",
        "Folders no experiment of the catalog makes any more, "
        "kept for the figures the docs quote from them.",
    ]
    for folder, why in KEPT_HISTORY.items():
        lines += ["", f"{_link(folder)}: {why}."]
        found = runs[folder]
        lines += ["", *_run_table(found, root)] if found else []
    return "\n".join(lines)
