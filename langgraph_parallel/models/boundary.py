r"""A raw prompt's token ids as the same text is split inside a longer document.

Why: byte-level BPE tokenizers (SmolLM2's among them) split a run of whitespace by what follows
it. ``"</information>\n\n"`` at the end of a string ends in one ``"\n\n"`` token, but inside a
trajectory, before the model's ``<think>``, the same two newlines are two ``"\n"`` tokens. Every
trajectory a policy was trained on is tokenized whole (:func:`~langgraph_parallel.train.encode.
encode_transcript`, TRL's trainers), so the model learned to write each step after two ``"\n"``
tokens, and an engine fed ``tokenizer.encode(prompt)`` asked it to write after a ``"\n\n"``
token it never saw there. :func:`context_ids` gives the engine the ids the training saw; a
cached prefix also matches the next step's prompt further, as that prompt holds the same text
split the same way. No tokenizer API says how a string's end would split in context, hence this
probe.

``ChatVLLMServer`` still sends the prompt as text, which the server encodes plainly: it holds no
tokenizer of its own to do this with, so a served policy keeps the mismatch for now.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROBE", "context_ids"]

PROBE = "<"
"""What follows a raw prompt: the model's next step opens with a tag."""


def context_ids(tokenizer: Any, text: str) -> list[int]:
    """Return ``tokenizer.encode(text)`` with a trailing whitespace split as before :data:`PROBE`.

    ``text + PROBE`` is encoded and the probe's tokens dropped. Where a token would straddle
    the end of ``text`` (a tokenizer that joins whitespace to the word after it), or the
    tokenizer gives no offsets, the plain encoding is returned: it is then the only honest one.

    Args:
        tokenizer: A Hugging Face tokenizer (a fast one, for offsets).
        text: The prompt.
    """
    plain = list(tokenizer.encode(text))
    if not text or not text[-1].isspace():
        return plain
    try:
        encoded = tokenizer(text + PROBE, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError):  # a slow tokenizer has no offsets
        return plain
    ids, offsets = list(encoded["input_ids"]), list(encoded["offset_mapping"])
    end = len(text)
    # Special tokens (a BOS) have empty offsets and stay; text tokens must end by ``end``.
    keep = 0
    while keep < len(ids) and (offsets[keep][1] <= end or offsets[keep][0] == offsets[keep][1]):
        keep += 1
    if any(start < end for start, stop in offsets[keep:] if stop > start):
        return plain
    kept = ids[:keep]
    same = tokenizer.decode(kept, skip_special_tokens=True)
    return kept if same == tokenizer.decode(plain, skip_special_tokens=True) else plain
