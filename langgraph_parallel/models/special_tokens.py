"""Outside text stays text to the tokenizer: a model's special tokens made inert in messages.

A passage, a web page or a tool result that contains ``<|im_end|>`` (or any other special token
of the model's tokenizer) would otherwise be read by the tokenizer as that control token: the
turn ends early, a new turn opens, the document ends. :func:`outside_text` marks what comes from
outside (every message but the model's own ``AIMessage`` steps, which it wrote and must read
back byte for byte for the prefix cache and ParallelMuse's forks), and :class:`SpecialTokens`
writes a word joiner (U+2060, invisible, no width) after the first character of each special
token there, before the chat template adds its own. The text reads the same and decodes back
as written, joiner included; the tokenizer no longer matches the token.

The list is read from the tokenizer, never fixed: ``all_special_tokens`` (the named ones) with
every ``added_tokens_decoder`` entry marked special (SmolLM2 names 3, its tokenizer marks 17).
In process that is the engine's tokenizer (:meth:`SpecialTokens.of_tokenizer`); a client of a
server reads the served model's tokenizer files on this machine
(:func:`served_special_tokens`).

Written here because no library offers it where it is needed: vLLM's server takes no option
to keep special tokens of a message's content from matching (it renders the chat template and
tokenizes the result, or tokenizes a raw prompt whole), and transformers'
``split_special_tokens`` applies to a whole encode call, so it would also split the special
tokens the chat template writes, and it exists only where the tokenizer is in this process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_parallel.errors import UserError

__all__ = [
    "WORD_JOINER",
    "SpecialTokens",
    "outside_text",
    "served_special_tokens",
    "shipped_special_tokens",
]

WORD_JOINER = "\u2060"
"""What breaks a special token: invisible, no width, no line break (unlike U+200D, which joins
emoji)."""

_NAMED = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
"""The named special tokens of a ``tokenizer_config.json`` (besides the added and extra ones)."""


class SpecialTokens:
    """The special tokens of one tokenizer, and how to make them inert in a text.

    Tokens of one character are left out: there is no inside to break (no tokenizer this
    package ships has one).

    Args:
        tokens: The special tokens' strings.
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens = frozenset(t for t in tokens if len(t) > 1)
        # Longest first, so a token that contains another is broken as itself.
        ordered = sorted(self.tokens, key=lambda t: (-len(t), t))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def of_tokenizer(cls, tokenizer: Any) -> SpecialTokens:
        """Return the special tokens a Hugging Face tokenizer (or vLLM's wrapper of one) matches.

        ``all_special_tokens`` and every ``added_tokens_decoder`` entry marked special; then
        each one made inert is encoded once to check that the tokenizer reads no special token
        in it (a normalizer that dropped the joiner would make the rule fail silently).

        Raises:
            UserError: The tokenizer still reads a special token where one was made inert.
        """
        decoder: Mapping[int, Any] = getattr(tokenizer, "added_tokens_decoder", None) or {}
        special = {int(i): str(t.content) for i, t in decoder.items() if getattr(t, "special", 0)}
        names = set(getattr(tokenizer, "all_special_tokens", None) or ()) | set(special.values())
        found = cls(names)
        ids = set(special) | set(getattr(tokenizer, "all_special_ids", None) or ())
        for token in sorted(found.tokens):
            read = set(tokenizer.encode(found.inert(token), add_special_tokens=False)) & ids
            if read:
                raise UserError(
                    f"the tokenizer still reads special token ids {sorted(read)} in "
                    f"{found.inert(token)!r} (the special token {token!r} with a word joiner "
                    "inside), so outside text could carry it into the prompt; this tokenizer "
                    "needs another way to make its special tokens inert."
                )
        return found

    @classmethod
    def of_folder(cls, folder: str | Path) -> SpecialTokens:
        """Return the special tokens recorded in a model folder's tokenizer files.

        ``tokenizer.json``'s ``added_tokens`` marked special, ``tokenizer_config.json``'s
        ``added_tokens_decoder`` marked special, its named tokens (``bos_token``, ...) and its
        ``additional_special_tokens``/``extra_special_tokens``: what transformers and vLLM load
        as the tokenizer's special tokens, read as JSON (a client needs neither installed).

        Raises:
            UserError: The folder has neither file.
        """
        folder = Path(folder)
        tokenizer = _read_json(folder / "tokenizer.json")
        config = _read_json(folder / "tokenizer_config.json")
        if tokenizer is None and config is None:
            raise UserError(
                f"{folder} has no tokenizer.json or tokenizer_config.json, so its special "
                "tokens are unknown; pass special_tokens=[...] (the tokenizer's "
                "all_special_tokens) to the chat model."
            )
        tokens = {
            str(t["content"]) for t in (tokenizer or {}).get("added_tokens", []) if t.get("special")
        }
        config = config or {}
        decoder = config.get("added_tokens_decoder") or {}
        tokens.update(str(t["content"]) for t in decoder.values() if t.get("special"))
        named = [config.get(name) for name in _NAMED]
        for key in ("additional_special_tokens", "extra_special_tokens"):
            extra = config.get(key) or []
            named.extend(extra.values() if isinstance(extra, dict) else extra)
        for token in named:
            content = token.get("content") if isinstance(token, dict) else token
            if isinstance(content, str):
                tokens.add(content)
        return cls(tokens)

    def inert(self, text: str) -> str:
        """Return ``text`` with a word joiner after the first character of each special token.

        Repeated until none is left: breaking one token may leave another inside it (``<|a|>``
        broken is ``<`` + joiner + ``|a|>``, which holds ``|a|>`` if that is a token too).
        """
        if self._pattern is None:
            return text
        for _ in range(len(self.tokens) + 1):
            text, count = self._pattern.subn(lambda m: m[0][0] + WORD_JOINER + m[0][1:], text)
            if not count:
                return text
        raise RuntimeError(f"a special token of {sorted(self.tokens)} holds a word joiner")


def outside_text(message: BaseMessage) -> bool:
    """Whether a message's text comes from outside the model (all but its own ``AIMessage``).

    User questions, system prompts, observations and tool results are outside; an assistant
    step is the model's own output, read back as it wrote it.
    """
    return not isinstance(message, AIMessage)


def served_special_tokens(model: str) -> SpecialTokens:
    """Return the special tokens of the model a server serves as ``model``, read on this machine.

    An embedded name reads the list shipped for its tokenizer (:func:`shipped_special_tokens`),
    so a client needs neither the engine nor the model's package; a folder reads its tokenizer
    files; a hub name reads the tokenizer files in the Hugging Face cache, where
    ``huggingface_hub`` is installed.

    Raises:
        UserError: The tokenizer files are not on this machine; the message names the fix.
    """
    from langgraph_parallel.models.embedded import EMBEDDED_MODELS
    from langgraph_parallel.models.folders import resolve_model

    pass_them = (
        "Pass special_tokens=[...] to ChatVLLMServer (the served tokenizer's "
        "all_special_tokens and its added tokens marked special)"
    )
    if model in EMBEDDED_MODELS:
        # The shipped record, not the converted folder: a deployment's client has no engine,
        # transformers or GGUF package to convert the model with.
        return shipped_special_tokens(EMBEDDED_MODELS[model].package)
    if Path(model).expanduser().exists():
        try:
            return SpecialTokens.of_folder(resolve_model(model)[0])
        except UserError as exc:
            raise UserError(f"{exc} {pass_them}.") from exc
    folder = _hub_cache_folder(model)
    if folder is None:
        raise UserError(
            f"the tokenizer of {model!r} is not on this machine, so outside text could carry "
            f"its special tokens into the prompt. {pass_them}, or download the tokenizer here "
            f"(`huggingface-cli download {model} tokenizer.json tokenizer_config.json`)."
        )
    return SpecialTokens.of_folder(folder)


SHIPPED = "tokenizers"
"""The folder (in this package) of each embedded model's tokenizer record, one JSON file per
model package: ``{"package", "gguf_file", "special_tokens"}``, written from the converted
tokenizer with :meth:`SpecialTokens.of_folder` and checked against it by the integration tests
(``tests/integration/test_special_tokens_real.py``)."""


def shipped_special_tokens(package: str) -> SpecialTokens:
    """Return the special tokens recorded, in this package, for an embedded model's tokenizer.

    Args:
        package: The embedded model's package (:attr:`.EmbeddedModel.package`).

    Raises:
        UserError: No record ships for that package; the message names the fix.
    """
    path = Path(__file__).with_name(SHIPPED) / f"{package}.json"
    record = _read_json(path)
    if record is None:
        raise UserError(
            f"no special-token record ships for the embedded model package {package!r}; pass "
            "special_tokens=[...] (its tokenizer's all_special_tokens and its added tokens "
            "marked special) to ChatVLLMServer."
        )
    return SpecialTokens(record["special_tokens"])


def _hub_cache_folder(model: str) -> Path | None:
    """Return the cached snapshot folder of a hub model's tokenizer files, if one is here."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for name in ("tokenizer.json", "tokenizer_config.json"):
        try:
            found = try_to_load_from_cache(model, name)
        except ValueError:  # not a hub name at all (huggingface_hub's HFValidationError)
            return None
        if isinstance(found, str):
            return Path(found).parent
    return None


def _read_json(path: Path) -> Any:
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as f:
        return json.load(f)
