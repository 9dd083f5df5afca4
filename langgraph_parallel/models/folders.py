"""Which model a name means, and how its folder says to prompt it.

A name is an embedded model (converted, and a trained policy merged, on first use), a model
folder, an adapter folder written by ``train sft``, or a hub name vLLM loads; a folder's model
card (``langgraph_parallel.json``) records its prompt style, raw prompt and the observation
budget it was trained with (``passage_sentences``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import is_adapter_dir, merged_model_dir, read_card
from langgraph_parallel.models.embedded import (
    ADAPTERS_DIR,
    EMBEDDED_MODELS,
    embedded_model_dir,
    validate_model_dir,
)

__all__ = [
    "RawPrompt",
    "folder_prompt_style",
    "folder_raw_prompt",
    "model_card",
    "model_folder",
    "resolve_model",
    "served_prompt",
]

RawPrompt = Literal["rules", "few_shot"]
"""A card's raw prompt: the ``rules`` alone (trained policies) or ``few_shot`` demos. The same
type as :data:`langgraph_parallel.prompts.RawPrompt`, written here because the models do not
import the prompts (they only carry the card's choice to whoever renders it)."""


def resolve_model(model: str) -> tuple[str, Literal["chat", "raw"]]:
    """Turn a model argument into an engine path and its default prompt style.

    ``smollm2``/``gemma3``/``smollm2-parallel``/... name an embedded model (converted, and a
    trained policy merged, on first use); an existing or path-like argument must be a model
    folder (``chat`` style unless its model card says otherwise, see
    :func:`folder_prompt_style`) or an adapter folder written by ``train sft`` (merged into the
    base its card names); anything else is passed to vLLM as a hub name.
    """
    if model in EMBEDDED_MODELS:
        return str(embedded_model_dir(model)), EMBEDDED_MODELS[model].prompt_style
    path = Path(model).expanduser()
    if path.exists() or model.startswith((".", "/", "~")):
        if is_adapter_dir(path):
            base = str(read_card(path).get("base_model") or "")
            if not base:
                raise UserError(f"{path}'s card names no base_model; retrain with train sft.")
            base_path, _ = resolve_model(base)
            merged = merged_model_dir(path, Path(base_path), path.name or "adapter")
            return str(merged), folder_prompt_style(merged)
        folder = validate_model_dir(path)
        return str(folder), folder_prompt_style(folder)
    return model, "chat"


def folder_prompt_style(folder: Path) -> Literal["chat", "raw"]:
    """Return the prompt style recorded in a model folder's card; ``chat`` without one.

    ``langgraph-parallel train`` writes ``raw`` for the models it trains.
    """
    return "raw" if read_card(folder).get("prompt_style") == "raw" else "chat"


def folder_raw_prompt(folder: Path) -> RawPrompt:
    """Return the raw prompt a folder's card asks for: ``rules`` for SFT policies."""
    return "rules" if read_card(folder).get("raw_prompt") == "rules" else "few_shot"


def model_card(model: str) -> dict[str, Any]:
    """Return the card of the model a name means, without loading or converting it.

    Embedded names read their shipped adapter's card (a merged folder carries a copy), folders
    and adapter folders their own; any other name (a hub model) has none (``{}``).
    """
    if model in EMBEDDED_MODELS:
        spec = EMBEDDED_MODELS[model]
        return read_card(ADAPTERS_DIR / spec.adapter) if spec.adapter else {}
    folder = Path(model).expanduser()
    return read_card(folder) if folder.is_dir() else {}


def served_prompt(model: str) -> tuple[Literal["chat", "raw"], RawPrompt]:
    """Return how to prompt ``model`` (style, raw prompt) without loading or converting it.

    A client of a server (``serve --model NAME`` serves under ``NAME``) needs the same answer as
    the in-process engine, which reads the card of the resolved folder (:func:`model_card`);
    any other name is a ``chat`` model.
    """
    card = model_card(model)
    raw_prompt: RawPrompt = "rules" if card.get("raw_prompt") == "rules" else "few_shot"
    if model in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[model].prompt_style, raw_prompt
    if Path(model).expanduser().is_dir():
        return folder_prompt_style(Path(model).expanduser()), raw_prompt
    return "chat", "few_shot"


def model_folder(model: str) -> Path:
    """Return the local folder of an embedded model, a model folder or an adapter (merged).

    Unlike :func:`resolve_model`, a hub name is refused: training needs the weights on disk.
    """
    if model not in EMBEDDED_MODELS:
        given = Path(model).expanduser()
        if not (given / "adapter_config.json").is_file():
            validate_model_dir(given)
    return Path(resolve_model(model)[0])
