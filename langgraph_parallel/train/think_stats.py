"""``<think>`` statistics of GRPO rollouts: how long the reasoning is and how much of it is copied.

Search-R1-style runs are known to collapse with the ``<think>`` text degenerating (shrinking to
nothing, or turning into pasted passages) before EM drops, so every step logs both, for the
policy's own rollouts. "Copied" is the share of a think's word 5-grams that also occur in the
``<information>`` text the same rollout was shown: 0 for reasoning in the model's own words,
1 for a pasted passage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["COPY_NGRAM", "copied_share", "think_metrics", "think_texts"]

COPY_NGRAM = 5
"""Words per n-gram of the copy measure (short enough to catch pasted clauses, long enough that
names and stock phrases the question shares with a passage rarely count)."""

_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)
_WORD = re.compile(r"\w+")


def think_texts(steps: Sequence[str]) -> list[str]:
    """Return the body of every ``<think>`` block in the model's steps, in order."""
    return [body.strip() for step in steps for body in _THINK.findall(step)]


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + COPY_NGRAM]) for i in range(len(words) - COPY_NGRAM + 1)}


def copied_share(think: str, observations: str) -> float | None:
    """Share of ``think``'s word 5-grams found in ``observations`` (``None``: under 5 words)."""
    grams = _ngrams(think)
    if not grams:
        return None
    return len(grams & _ngrams(observations)) / len(grams)


def think_metrics(steps: Sequence[Sequence[str]], observations: Sequence[str]) -> dict[str, float]:
    """Mean words per think, share of steps without one, and mean copied share, per rollout set.

    Args:
        steps: Each rollout's model steps.
        observations: Each rollout's environment text (its ``<information>`` blocks).
    """
    words: list[int] = []
    copied: list[float] = []
    model_steps = missing = 0
    for rollout, seen in zip(steps, observations, strict=True):
        for step in rollout:
            model_steps += 1
            bodies = think_texts([step])
            if not bodies:
                missing += 1
            for body in bodies:
                words.append(len(_WORD.findall(body)))
                share = copied_share(body, seen)
                if share is not None:
                    copied.append(share)
    out = {"think/words": sum(words) / len(words) if words else 0.0}
    out["think/missing"] = missing / model_steps if model_steps else 0.0
    out["think/copied"] = sum(copied) / len(copied) if copied else 0.0
    return out
