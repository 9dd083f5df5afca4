"""A trajectory as token ids and a loss mask (the training side of ``train sft``).

Apart from :mod:`.synth` so that training from a trajectory file imports the tokenizer and
nothing of the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def encode_transcript(
    messages: Sequence[dict[str, str]], tokenizer: Any, *, last_step_only: bool = False
) -> tuple[list[int], list[int]]:
    """Token ids of the joined transcript and a mask that is 1 on the model's own tokens.

    The ids are ``tokenizer.encode("".join(contents))``, the exact ids ``ChatVLLM`` feeds the
    engine in raw style. A token belongs to the model when it starts inside an assistant step;
    with ``last_step_only``, inside the last one (the reading that gives the answer).
    """
    text = "".join(m["content"] for m in messages)
    spans, at = [], 0
    for m in messages:
        if m["role"] == "assistant":
            spans.append((at, at + len(m["content"])))
        at += len(m["content"])
    spans = spans[-1:] if last_step_only else spans
    encoded = tokenizer(text, return_offsets_mapping=True)
    ids = list(encoded["input_ids"])
    mask = [
        int(end > start and any(a <= start < b for a, b in spans))
        for start, end in encoded["offset_mapping"]
    ]
    return ids, mask
