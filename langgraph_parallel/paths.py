"""Where the project keeps caches and its bundled data, and which commit the code is."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parent
_BUILD_LOCK = threading.RLock()
"""One model build at a time in a process (:func:`build_model_dir`)."""


def cache_dir() -> Path:
    """Return the cache directory, creating it if needed.

    ``LANGGRAPH_PARALLEL_CACHE`` sets it; the default is ``~/.cache/langgraph-parallel``.
    """
    root = os.environ.get("LANGGRAPH_PARALLEL_CACHE") or str(
        Path.home() / ".cache" / "langgraph-parallel"
    )
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def repo_data_dir() -> Path:
    """Return the ``data/`` folder of a source checkout (corpus, question sample, embeddings).

    ``LANGGRAPH_PARALLEL_DATA`` overrides it, for installs that are not a checkout.
    """
    override = os.environ.get("LANGGRAPH_PARALLEL_DATA")
    if override:
        return Path(override).expanduser()
    return _PACKAGE_ROOT.parent / "data"


def shared_data_dir() -> Path:
    """Return the team's benchmark files, ``../shared/data`` beside a source checkout.

    ``LANGGRAPH_PARALLEL_SHARED_DATA`` overrides it.
    """
    override = os.environ.get("LANGGRAPH_PARALLEL_SHARED_DATA")
    if override:
        return Path(override).expanduser()
    return _PACKAGE_ROOT.parent.parent / "shared" / "data"


def portable_path(path: str | os.PathLike[str]) -> str:
    """Return ``path`` relative to the source checkout when it is beside or inside it.

    Records that ship (adapter cards) then name ``data/...`` and ``../shared/data/...`` instead
    of one machine's absolute paths; anything else stays absolute.
    """
    resolved = Path(path).expanduser().resolve()
    root = _PACKAGE_ROOT.parent
    if resolved.is_relative_to(root.parent):
        return os.path.relpath(resolved, root)
    return str(resolved)


def build_model_dir(target: Path, write: Callable[[Path], None]) -> Path:
    """Build a model folder at ``target`` once: ``write`` fills a temporary sibling, renamed.

    An interrupted run never leaves a half-written model behind, and concurrent first runs
    cannot corrupt each other: the first rename wins and the others reuse its folder. A folder
    with ``config.json`` already there is returned as is.

    Threads of one process build one at a time and the later ones reuse the first one's folder:
    transformers' ``from_pretrained`` is not thread-safe (concurrent loads put each other's
    weights on the meta device, "Cannot copy out of meta tensor"), and the samplers and servers
    that first ask for a model do so from many threads at once. Re-entrant, as a merge builds
    its base first.
    """
    if (target / "config.json").is_file():
        return target
    with _BUILD_LOCK:
        if (target / "config.json").is_file():  # built by the thread we waited for
            return target
        return _build(target, write)


def _build(target: Path, write: Callable[[Path], None]) -> Path:
    """Build ``target`` with ``write`` (:func:`build_model_dir`, which holds the lock)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    # Once per machine and cache, silent otherwise for tens of seconds: say what runs and when
    # it is done (stderr, so a program's output stays its own).
    print(f"preparing {target.name} once, into {target.parent} ...", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    try:
        write(tmp)
        print(f"prepared {target.name} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        try:
            os.replace(tmp, target)
        except OSError:
            # Another process finished first; its folder is as good as ours.
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def source_commit(root: Path | None = None) -> str:
    """Return the checkout's commit (``-dirty`` if tracked code differs; ``unknown`` outside).

    Recorded in ``run.json`` and benchmark summaries so a figure says which code made it. Only
    the library, the lab (the experiments and analyses that make the figures), the tools and
    the package metadata count as code: the benchmark's own output files, which a re-run
    rewrites while it runs, do not make the code dirty.

    Args:
        root: The checkout (default: the one this package is imported from).
    """
    root = root or _PACKAGE_ROOT.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        code = ["langgraph_parallel", "lab", "tools", "pyproject.toml"]
        diff = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *code], cwd=root)
        dirty = diff.returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")
