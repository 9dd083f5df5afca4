"""Which committed folder under ``benchmarks/`` belongs to what: experiments, kept history, blocks.

The index (:mod:`~.results_index`) lists every experiment of the catalog with its folders: its
``out`` folder, or those :data:`FOLDERS` names where its committed data sits elsewhere or in
several places; :data:`KEPT_HISTORY` names, in this one place, the folders kept from runs that
no experiment makes any more. A folder *owns* everything below it down to the next owned folder
(``benchmarks/`` itself, reliability's ``out``, owns only its own files), so a run committed
into an experiment's folder shows up in the index on its own.

A *data folder* (any folder under ``benchmarks/`` holding a file) that nothing owns and no
generated block names (``benchmarks/PATH`` in a block's text names PATH and what is below it)
is an *orphan*: ``langgraph-parallel results --check`` fails on it. Give it an experiment, a
line in :data:`KEPT_HISTORY` saying why it stays, or delete it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from lab.base import Experiment

__all__ = [
    "BENCHMARKS",
    "FOLDERS",
    "KEPT_HISTORY",
    "block_named",
    "data_folders",
    "experiment_folders",
    "orphans",
    "owner_of",
]

BENCHMARKS = "benchmarks"

FOLDERS: dict[str, tuple[str, ...]] = {
    # The same experiment run again with another setting or model (`--set`, `--out`); the
    # folder's own files record which.
    "sft": (
        "benchmarks/sft",
        "benchmarks/sft/cpu-adapters",  # the first CPU-trained adapters, shipped until 2026-11-26
        "benchmarks/sft/h200-adapters",  # the H200-trained adapters, shipped 2026-11-26 to -30
        "benchmarks/sft/gpu",  # how the H200 adapters were trained, the passage lever
        "benchmarks/retrieval/titles_e2e/before",  # before the title lookup (f51a477)
        "benchmarks/sft/cpu",
        "benchmarks/sft/cpu2",
        "benchmarks/sft/chain",
        "benchmarks/sft/mix",
    ),
    "parallel-muse": (
        "benchmarks/parallel_muse",
        "benchmarks/parallel_muse/all-top1",
        "benchmarks/parallel_muse/later",
        "benchmarks/parallel_muse/chain",
        "benchmarks/parallel_muse/mix",
        "benchmarks/parallel_muse/gpu-policy",  # the policy shipped on 2026-11-26 (issue 41)
    ),
    # Every run of the defaults, each in its own folder (`--out`); the first is its `out`.
    "parallel-muse-defaults": ("benchmarks/parallel_muse/defaults",),
    # Its tables sit in parallel-muse's folder, its runs below it.
    "parallel-muse-sweep": ("benchmarks/parallel_muse/sweep",),
    "serving": (
        "benchmarks/serving/ngram",
        "benchmarks/serving/plain",
        "benchmarks/serving/blas",
        "benchmarks/serving/cpus/avx512_bf16",  # the blas protocol on a CPU with native bf16
    ),
    # The default engine setting alone on the policy shipped on 2026-11-26 (issue 40).
    "latency": ("benchmarks/latency", "benchmarks/latency/gpu-policy"),
}
"""Experiment name -> the folders of its committed data, where that is not just its ``out``."""

KEPT_HISTORY: dict[str, str] = {
    "benchmarks/create_agent": "issue 38: ParallelSearch inside `create_agent` vs the graph, "
    "same policy (its README)",
    "benchmarks/restructure": "issue 14: per-question counters before and after the restructure",
    "benchmarks/latency/e2e": "EM and F1 with speculative decoding on 100 questions "
    "(`benchmarks/latency/README.md`)",
    "benchmarks/latency/levers": "issue 17: token levers against accuracy",
    "benchmarks/retrieval/e2e": "the agent end to end on the dense and the hybrid index",
    "benchmarks/rl": "GRPO from the untrained model (`langgraph-parallel train`), the "
    "`rl-results` block",
}
"""Folder -> why it is kept though no experiment of the catalog makes it."""


def experiment_folders(experiment: Experiment) -> tuple[str, ...]:
    """Return the folders of an experiment's committed data (its ``out`` unless declared)."""
    return FOLDERS.get(experiment.name, (experiment.out.rstrip("/"),))


def data_folders(root: Path) -> list[str]:
    """Return every folder under ``benchmarks/`` holding a file, relative to ``root``."""
    bench = root / BENCHMARKS
    found = {p.parent for p in bench.rglob("*") if p.is_file()}
    return sorted(p.relative_to(root).as_posix() for p in found)


def _under(folder: str, owner: str) -> bool:
    """Whether ``owner`` owns ``folder``: itself, or below it unless it is ``benchmarks/``."""
    return folder == owner or (owner != BENCHMARKS and folder.startswith(owner + "/"))


def owner_of(folder: str, owners: Iterable[str]) -> str | None:
    """Return the deepest of ``owners`` owning ``folder`` (``None``: none does)."""
    held = [o for o in owners if _under(folder, o)]
    return max(held, key=len) if held else None


def block_named(texts: Iterable[str], root: Path) -> set[str]:
    """Return the folders the texts name as ``benchmarks/PATH`` (a file names its folder)."""
    named = set()
    for text in texts:
        for match in re.finditer(r"benchmarks(?:/[\w.-]+)*/?", text):
            path = match.group(0).rstrip("/.")
            while path != BENCHMARKS and not (root / path).is_dir():
                path = path.rsplit("/", 1)[0]
            named.add(path)
    return named


def orphans(
    root: Path,
    experiments: Mapping[str, Experiment],
    block_texts: Iterable[str],
) -> list[str]:
    """Return the data folders nothing owns and no block names (see the module docstring)."""
    owners = {f for e in experiments.values() for f in experiment_folders(e)} | set(KEPT_HISTORY)
    owners |= block_named(block_texts, root)
    return [
        folder
        for folder in data_folders(root)
        if folder != BENCHMARKS and owner_of(folder, owners) is None
    ]
