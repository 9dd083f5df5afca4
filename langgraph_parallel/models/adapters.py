"""Trained LoRA adapters: written by ``train sft``, merged into a cached model folder on use.

An adapter folder holds ``adapter_config.json``, ``adapter_model.safetensors`` and the card
``langgraph_parallel.json`` (``base_model``, ``prompt_style``, ``raw_prompt``, how it was
trained). :func:`merged_model_dir` merges it into its base once and caches the result under
:func:`~langgraph_parallel.paths.cache_dir`, keyed by the adapter's hash, so a new adapter
(a package upgrade) is merged again and an old merge is never reused by mistake.

Merging, not vLLM's LoRA serving, because the merged folder is an ordinary model: the CPU
engine runs it at the base model's speed with prefix caching as before, and every other path
(transformers, a vLLM server, GRPO from it) loads it with no adapter support needed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.quiet import quiet_preparation
from langgraph_parallel.paths import build_model_dir, cache_dir

MODEL_CARD = "langgraph_parallel.json"
"""File in a model or adapter folder that records how to prompt it and where it came from."""
ADAPTER_CARD_KEYS = ("base_model", "prompt_style", "raw_prompt", "command", "data", "excluded")
"""Keys every adapter card has."""


def is_adapter_dir(folder: Path) -> bool:
    """Whether ``folder`` holds a PEFT adapter (``adapter_config.json``)."""
    return (folder / "adapter_config.json").is_file()


def read_card(folder: Path) -> dict[str, Any]:
    """Read the card of a model or adapter folder (``{}`` without one)."""
    card = folder / MODEL_CARD
    return dict(json.loads(card.read_text())) if card.is_file() else {}


def write_adapter(model: Any, folder: Path, card: dict[str, Any]) -> Path:
    """Save a PEFT model's adapter as float16 safetensors with ``card``; returns ``folder``.

    float16 halves the file (r=16 on every linear layer of SmolLM2-135M: 9.8 MB instead of 19.5)
    and is merged into float32 weights, where the rounding is far below the base's own
    quantisation error.
    """
    from safetensors.torch import load_file, save_file

    model.save_pretrained(str(folder), safe_serialization=True)
    # PEFT records the local path of the base and writes a template README; the card says both
    # properly, and a shipped adapter must not carry one machine's paths.
    config_file = folder / "adapter_config.json"
    config = json.loads(config_file.read_text())
    config["base_model_name_or_path"] = card["base_model"]
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (folder / "README.md").unlink(missing_ok=True)
    weights = folder / "adapter_model.safetensors"
    tensors = {k: v.half().contiguous() for k, v in load_file(str(weights)).items()}
    save_file(tensors, str(weights), metadata={"format": "pt"})
    (folder / MODEL_CARD).write_text(json.dumps(card, indent=2) + "\n")
    return folder


def adapter_hash(folder: Path) -> str:
    """SHA-256 of the adapter's weights and config (first 12 hex digits)."""
    digest = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:12]


def merged_model_dir(adapter: Path, base_dir: Path, name: str) -> Path:
    """Merge ``adapter`` into the model at ``base_dir`` once; return the cached merged folder.

    The merge writes into a temporary sibling and renames it into place, so an interrupted or
    concurrent first run never leaves a half-written model. The card is copied along, so the
    merged folder keeps its prompt style and provenance.
    """
    if not is_adapter_dir(adapter):
        raise UserError(f"{adapter} is not an adapter folder (no adapter_config.json).")
    target = cache_dir() / "models" / f"{name}-{adapter_hash(adapter)}"
    if (target / "config.json").is_file():
        return target
    try:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise UserError(
            f"Merging a trained adapter needs peft and transformers: "
            f"{install_hint('train')} ({exc})"
        ) from exc

    def write(tmp: Path) -> None:
        with quiet_preparation():
            model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
            merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
            merged.save_pretrained(str(tmp), safe_serialization=True)
            AutoTokenizer.from_pretrained(str(base_dir)).save_pretrained(str(tmp))
        shutil.copy(adapter / MODEL_CARD, tmp / MODEL_CARD)

    return build_model_dir(target, write)
