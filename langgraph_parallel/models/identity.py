"""Which weights a ``--model`` value names, by hash, without loading them.

Written into every record of a measurement (an experiment's ``summary.json``, a benchmark
folder's ``run.json``) so the results index can tell a figure of today's shipped adapter from one
of an adapter the package no longer ships (``apps/experiments/staleness.py``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path
from typing import Any

from langgraph_parallel.models.adapters import adapter_hash, is_adapter_dir, read_card
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS

__all__ = ["adapter_of", "model_identity"]

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


def adapter_of(model: str) -> str | None:
    """Return the hash of the adapter ``model`` names (a trained policy, an adapter folder).

    ``None`` for a model without one (a base model, a full model folder, a hub name).

    Never hashes a full model's weights, so a benchmark can call it on every start.
    """
    if model in EMBEDDED_MODELS:
        spec = EMBEDDED_MODELS[model]
        return adapter_hash(ADAPTERS_DIR / spec.adapter) if spec.adapter else None
    folder = Path(model).expanduser()
    return adapter_hash(folder) if folder.is_dir() and is_adapter_dir(folder) else None


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
            out["adapter"] = adapter_of(model)
        return out
    folder = Path(model).expanduser()
    if folder.is_dir() and is_adapter_dir(folder):
        base = str(read_card(folder).get("base_model") or "")
        return {"adapter": adapter_of(model), "base": model_identity(base) if base else None}
    if folder.is_dir():
        return {"folder": _folder_hash(folder)}
    return {"name": model}
