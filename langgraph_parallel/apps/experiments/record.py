"""What made a figure: the commit, the models and adapters by hash, the machine, the wall time.

Written into the output folder's ``summary.json``, under ``experiments`` -> the experiment's
name, beside what the harness puts there (the graphs' means) and the records of other
experiments writing into the same folder. Read back and extended when a run is resumed:
``invocations`` lists every piece of the run that finished (commit, machine, wall time), so
figures from two machines or two commits say so. A piece killed before its end leaves no entry:
its rows stay, and the harness folders' ``run.json`` list the commits that wrote them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.results import SUMMARY_FILE
from langgraph_parallel.models.adapters import adapter_hash, is_adapter_dir, read_card
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS
from langgraph_parallel.paths import source_commit

__all__ = ["earlier_records", "model_identity", "write_record"]

_WEIGHTS = ("config.json", "*.safetensors", "*.gguf")


def _distribution(module: str) -> str:
    """``name==version`` of the installed distribution providing ``module``."""
    names = importlib.metadata.packages_distributions().get(module) or [module]
    try:
        return f"{names[0]}=={importlib.metadata.version(names[0])}"
    except importlib.metadata.PackageNotFoundError:
        return f"{module} (not installed)"


def _folder_hash(folder: Path) -> str:
    """SHA-256 of a model folder's config and weights (first 12 hex digits)."""
    digest = hashlib.sha256()
    for pattern in _WEIGHTS:
        for path in sorted(folder.glob(pattern)):
            digest.update(path.name.encode())
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:12]


def model_identity(model: str) -> dict[str, Any]:
    """Say exactly which weights ``model`` (a ``--model`` value) names, without loading them.

    An embedded name gives the distribution carrying its GGUF and, for a trained policy, its
    shipped adapter's hash; an adapter folder its hash and its base's identity; a model folder
    the hash of its config and weights; anything else (a hub name, a server) only its name.
    """
    if model in EMBEDDED_MODELS:
        spec = EMBEDDED_MODELS[model]
        out: dict[str, Any] = {"base": _distribution(spec.package)}
        if spec.adapter:
            out["adapter"] = adapter_hash(ADAPTERS_DIR / spec.adapter)
        return out
    folder = Path(model).expanduser()
    if folder.is_dir() and is_adapter_dir(folder):
        base = str(read_card(folder).get("base_model") or "")
        return {"adapter": adapter_hash(folder), "base": model_identity(base) if base else None}
    if folder.is_dir():
        return {"folder": _folder_hash(folder)}
    return {"name": model}


def _read(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def earlier_records(out: Path) -> dict[str, Any]:
    """Return the experiments' records in ``out/summary.json`` (name -> record).

    Read before a run starts: the harness rewrites ``summary.json`` when it resumes.
    """
    return dict(_read(out / SUMMARY_FILE).get("experiments") or {})


def write_record(
    out: Path,
    *,
    experiment: str,
    command: str,
    settings: Mapping[str, Any],
    models: list[str],
    wall_s: float,
    earlier: Mapping[str, Any],
) -> Path:
    """Merge the run's record into ``out/summary.json`` (atomically) and return its path.

    The record, under ``experiments`` -> ``experiment``: ``command``, ``settings``, ``commit``
    and ``machine`` (of this piece), ``models`` (name -> :func:`model_identity`), ``wall_s``
    (all pieces) and ``invocations``, the earlier pieces taken from ``earlier`` (what
    :func:`earlier_records` read before the run), as are the other experiments' records.
    Everything else in the file stays.
    """
    path = out / SUMMARY_FILE
    here = machine()
    piece = {
        "commit": source_commit(),
        "machine": here,
        "wall_s": round(wall_s, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    invocations = [*(earlier.get(experiment) or {}).get("invocations", []), piece]
    summary = _read(path)
    summary["experiments"] = {
        **earlier,
        **(summary.get("experiments") or {}),
        experiment: {
            "command": command,
            "settings": dict(settings),
            "commit": piece["commit"],
            "machine": here,
            "models": {m: model_identity(m) for m in models},
            "wall_s": round(sum(float(p.get("wall_s") or 0) for p in invocations), 1),
            "invocations": invocations,
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
