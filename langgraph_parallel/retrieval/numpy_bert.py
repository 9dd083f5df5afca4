"""The forward pass of a BERT sentence encoder in numpy, for queries.

Written by hand, not taken from transformers, because of what importing it costs: in
transformers 5, ``from transformers import AutoModel`` pulls in ``torch._dynamo`` and
``torch.distributed`` and took 2.2 s of a new process on the 2-core CPU (torch alone 0.9 s),
while a whole question on a running ``langgraph-parallel serve`` takes about 2 s. Loading these
weights with ``safetensors.numpy`` and the tokenizer with ``tokenizers`` takes ~0.1 s, and for
a few short texts this forward is as fast as torch's (one query 6.7 vs 8.2 ms, four 15.5 vs
15.9 ms). It reproduces transformers' vectors to within 3e-7 (tested against it), so an index
built with one is searched with the other. Long batches stay on transformers, which is about
2x faster there (torch's fused kernels); see ``MiniLMEmbeddings``.

Only what all-MiniLM-L6-v2 and its BERT siblings use: absolute positions, exact (erf) GELU,
post-layer-norm blocks, mean pooling over the attention mask, unit-length output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NumpyBert"]


class NumpyBert:
    """A BERT encoder folder (``config.json``, ``model.safetensors``, ``tokenizer.json``) in numpy.

    Args:
        model_dir: The folder; check it with :meth:`supports` first.
        max_length: Tokens kept per text, special tokens included (longer texts are truncated,
            as transformers' tokenizer does with ``truncation=True``).
    """

    def __init__(self, model_dir: Path, max_length: int) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        weights = {
            name.removeprefix("bert."): np.asarray(value, dtype=np.float32)
            for name, value in load_file(str(model_dir / "model.safetensors")).items()
        }
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length)
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._embeddings = {
            part: weights[f"embeddings.{part}"]
            for part in (
                "word_embeddings.weight",
                "position_embeddings.weight",
                "token_type_embeddings.weight",
                "LayerNorm.weight",
                "LayerNorm.bias",
            )
        }
        self._layers = [
            _layer(weights, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))
        ]
        self.dimension = int(self._embeddings["word_embeddings.weight"].shape[1])
        """Length of each vector."""

    @staticmethod
    def supports(model_dir: Path) -> bool:
        """Whether ``model_dir`` is a BERT this forward reproduces, with its files present."""
        try:
            config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return (
            config.get("model_type") == "bert"
            and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and (model_dir / "model.safetensors").is_file()
            and (model_dir / "tokenizer.json").is_file()
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit-length float32 row per text (mean of the last layer over its tokens)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        batch, width = len(encodings), max(lengths)
        ids = np.zeros((batch, width), dtype=np.int64)
        mask = np.zeros((batch, width), dtype=np.float32)
        for row, (encoding, length) in enumerate(zip(encodings, lengths, strict=True)):
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1.0
        emb = self._embeddings
        x = (
            emb["word_embeddings.weight"][ids]
            + emb["position_embeddings.weight"][:width]
            + emb["token_type_embeddings.weight"][0]  # one segment per text
        )
        x = self._norm(x, emb["LayerNorm.weight"], emb["LayerNorm.bias"]).reshape(batch * width, -1)
        hidden = x.shape[-1]
        head = hidden // self._heads
        scale = np.float32(1.0 / np.sqrt(head))
        padding = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in self._layers:
            qkv = x @ layer["qkv_w"] + layer["qkv_b"]
            q, k, v = qkv.reshape(batch, width, 3, self._heads, head).transpose(2, 0, 3, 1, 4)
            scores = (q * scale) @ k.transpose(0, 1, 3, 2) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * width, hidden)
            x = self._norm(attended @ layer["out_w"] + layer["out_b"] + x, *layer["norm1"])
            inner = x @ layer["up_w"] + layer["up_b"]
            inner = 0.5 * inner * (1.0 + _erf(inner * np.float32(1.0 / np.sqrt(2.0))))
            x = self._norm(inner @ layer["down_w"] + layer["down_b"] + x, *layer["norm2"])
        tokens = x.reshape(batch, width, hidden) * mask[..., None]
        pooled = tokens.sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32)

    def _norm(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
        centred = x - x.mean(-1, keepdims=True)
        variance = (centred * centred).mean(-1, keepdims=True)
        return np.asarray(centred / np.sqrt(variance + np.float32(self._eps)) * weight + bias)


def _layer(weights: dict[str, np.ndarray], prefix: str) -> dict[str, Any]:
    """One block's weights, transposed once into the ``x @ w`` layout (query/key/value fused)."""

    def get(name: str) -> np.ndarray:
        return weights[prefix + name]

    def dense(name: str) -> np.ndarray:
        return np.ascontiguousarray(get(f"{name}.weight").T)

    parts = ("attention.self.query", "attention.self.key", "attention.self.value")
    return {
        "qkv_w": np.ascontiguousarray(np.concatenate([get(f"{p}.weight") for p in parts]).T),
        "qkv_b": np.concatenate([get(f"{p}.bias") for p in parts]),
        "out_w": dense("attention.output.dense"),
        "out_b": get("attention.output.dense.bias"),
        "norm1": (get("attention.output.LayerNorm.weight"), get("attention.output.LayerNorm.bias")),
        "up_w": dense("intermediate.dense"),
        "up_b": get("intermediate.dense.bias"),
        "down_w": dense("output.dense"),
        "down_b": get("output.dense.bias"),
        "norm2": (get("output.LayerNorm.weight"), get("output.LayerNorm.bias")),
    }


def _erf(x: np.ndarray) -> np.ndarray:
    """Return erf(x) (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7); numpy has no erf."""
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (
        np.float32(0.254829592)
        + t
        * (
            np.float32(-0.284496736)
            + t * (np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * 1.061405429))
        )
    )
    return np.asarray(np.sign(x) * (1.0 - poly * np.exp(-a * a)))
