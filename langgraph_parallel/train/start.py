"""Where a GRPO run starts, and the adapter it leaves behind.

With ``--lora`` and a start that is a trained adapter (an embedded policy such as
``smollm2-parallel``, or an adapter folder from ``train sft``), GRPO keeps training *that*
adapter on its base rather than stacking a second LoRA on the merged weights. The result is
again one adapter of the base, the same rank and size as the SFT adapters (about 10 MB in
float16), so a GRPO policy ships exactly like them: copy ``OUT/adapter`` into
``langgraph_parallel/adapters/``. The merged ``OUT/model`` folder is what ``ask --model`` and
``bench --model`` load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import (
    ADAPTER_CARD_KEYS,
    is_adapter_dir,
    read_card,
    write_adapter,
)
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS
from langgraph_parallel.models.folders import model_folder
from langgraph_parallel.paths import portable_path

__all__ = ["adapter_card", "inherit", "lineage", "load_policy", "start_adapter", "save_adapter"]


def start_adapter(model: str) -> Path | None:
    """Return the adapter behind ``model``: an embedded policy's shipped one, or an adapter folder.

    Returns ``None`` for a plain model (the untrained ``smollm2``, a model folder).
    """
    if model in EMBEDDED_MODELS:
        name = EMBEDDED_MODELS[model].adapter
        return ADAPTERS_DIR / name if name else None
    path = Path(model).expanduser()
    return path if is_adapter_dir(path) else None


def load_policy(model: str, *, lora: bool, dtype: Any) -> tuple[Any, Any]:
    """Load the starting policy for GRPO; returns ``(model, peft_config)`` for the trainer.

    With ``lora`` and an adapter start, the base is loaded and the adapter attached trainable
    (``peft_config`` is then ``None``: the model already is a PEFT model). With ``lora`` and a
    plain start, a fresh rank-16 LoRA is added by the trainer. Without ``lora``, every weight
    of the (merged) start trains.
    """
    from transformers import AutoModelForCausalLM

    from langgraph_parallel.train.policy import lora_config

    adapter = start_adapter(model) if lora else None
    if adapter is None:
        weights = AutoModelForCausalLM.from_pretrained(model_folder(model), dtype=dtype)
        return weights, (lora_config() if lora else None)
    from peft import PeftModel

    base = str(read_card(adapter).get("base_model") or "")
    if not base:
        raise UserError(f"{adapter}'s card names no base_model; retrain it with train sft.")
    weights = AutoModelForCausalLM.from_pretrained(model_folder(base), dtype=dtype)
    return PeftModel.from_pretrained(weights, str(adapter), is_trainable=True), None


def adapter_card(
    start: str,
    *,
    raw_prompt: str,
    command: str,
    data: dict[str, Any],
    excluded: dict[str, Any],
) -> dict[str, Any]:
    """Return the card of a GRPO adapter trained from ``start``: base, prompt and provenance.

    An adapter start passes on its base, policy and its own training (``init``), and its held-out
    ids join ``excluded``, so the card names every question the weights have seen excluded.
    """
    init, excluded = inherit(start, excluded)
    card: dict[str, Any] = {
        "base_model": init.get("base_model")
        or (start if start in EMBEDDED_MODELS else portable_path(start)),
        "policy": init.get("policy", "parallel"),
        "prompt_style": "raw",
        "raw_prompt": raw_prompt,
        "method": "GRPO (ParallelSearch reward) on rollouts of the real graph, LoRA",
        "trained_from": start,
        "command": command,
        "data": data,
        "excluded": excluded,
    }
    return {**card, **lineage(init)}


def lineage(init: dict[str, Any]) -> dict[str, Any]:
    """Return the ``init`` entry for a card trained from the adapter whose card is ``init``."""
    if not init:
        return {}
    return {"init": {k: init[k] for k in ("method", "command", "data") if k in init}}


def inherit(start: str, excluded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the card of ``start``'s adapter (``{}`` for a plain model) and ``excluded`` widened.

    A policy trained from an adapter has seen what that adapter saw, so the new card's held-out
    ids are this run's and the start's together.
    """
    adapter = start_adapter(start)
    init = read_card(adapter) if adapter else {}
    ids = sorted({*excluded.get("ids", ()), *init.get("excluded", {}).get("ids", ())})
    return init, {**excluded, "ids": ids}


def save_adapter(model: Any, folder: Path, card: dict[str, Any]) -> Path | None:
    """Write ``model``'s LoRA adapter with ``card`` (``None`` when it has no adapter).

    Call it before merging: ``merge_and_unload`` folds the adapter into the base in place.
    """
    if not hasattr(model, "peft_config"):
        return None
    missing = set(ADAPTER_CARD_KEYS) - set(card)
    if missing:
        raise ValueError(f"adapter card lacks {sorted(missing)}")
    return write_adapter(model, folder, card)
