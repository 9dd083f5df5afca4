"""The n-gram drafter replayed on the policies' own replies: engine steps a drafter setting takes.

Greedy speculative decoding keeps the model's own tokens: a drafted token is accepted exactly
when it is the token the model then writes. So from a request's prompt and reply token ids
(recorded one question at a time by ``bench run latency-policies``) the engine steps of any
drafter follow without the engine and without the machine's load: step by step, the drafter
proposes up to ``k`` tokens from the context so far, the longest run of them matching the reply
is accepted, and the step writes those plus one of its own. Each step is one forward pass of
the model over ``1 + drafted`` tokens, so at one question at a time the steps are most of the
decode time (:func:`replay` also counts the tokens the passes verified).

The drafters (:data:`VARIANTS`):

- ``shipped``: vLLM's prompt lookup as this machine's engine runs it (``k=8``, n-grams of 2 to
  5 tokens, vLLM's own matching function), the figure checked against the engine's counts;
- ``k4``, ``k4-min3``: fewer drafted tokens, or longer matches before drafting;
- ``history``: the shipped lookup over the context with the same policy's previous replies in
  front of it (the last :data:`HISTORY` of them): a policy that writes the same phrases in
  every question ("they are independent, so I search them at once", "is earlier than") finds
  them there, as vLLM's suffix decoding does across requests.

Not modelled: drafts the grammar rejects before the pass (vLLM drops them; here they fail at
the same token) and the step after a stop string (the frontend stops the request, the core may
already have scheduled it), so the engine counts a few steps more than ``shipped`` replays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HISTORY", "VARIANTS", "Drafter", "ngram_drafter", "replay", "replay_policy"]

HISTORY = 8
"""Earlier replies of the same policy the ``history`` drafter looks up."""

Propose = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Drafter:
    """One drafter setting: prompt lookup's ``k`` and n-gram bounds, and whether it remembers.

    Attributes:
        k: Tokens drafted at most a step.
        min_ngram: Shortest suffix that must match before drafting.
        max_ngram: Longest suffix matched.
        history: Look up the same policy's previous replies too.
    """

    k: int = 8
    min_ngram: int = 2
    max_ngram: int = 5
    history: bool = False


VARIANTS: dict[str, Drafter] = {
    "shipped": Drafter(),
    "k4": Drafter(k=4),
    "k4-min3": Drafter(k=4, min_ngram=3),
    "history": Drafter(history=True),
}


def _vllm_lookup() -> Callable[..., np.ndarray]:
    """Return vLLM's own matching function, as its engine runs it (numba-compiled)."""
    from vllm.v1.spec_decode import ngram_proposer

    return ngram_proposer._find_longest_matched_ngram_and_propose_tokens


def ngram_drafter(drafter: Drafter, lookup: Callable[..., np.ndarray] | None = None) -> Propose:
    """Return the proposer of ``drafter``'s prompt lookup over a context (``lookup``: vLLM's)."""
    match = lookup or _vllm_lookup()

    def propose(context: np.ndarray) -> np.ndarray:
        return match(context, drafter.min_ngram, drafter.max_ngram, 1 << 30, drafter.k)

    return propose


def replay(
    prompt: Sequence[int], reply: Sequence[int], propose: Propose, before: Sequence[int] = ()
) -> dict[str, int]:
    """Return the engine steps one greedy request takes with ``propose`` as its drafter.

    Args:
        prompt: The request's prompt token ids.
        reply: The tokens the model wrote.
        propose: Drafts from the context so far (its tokens, oldest first).
        before: Tokens put in front of the context (a drafter's memory), never written.

    Returns:
        ``steps`` (the prefill's included: it writes the first token), ``drafts``,
        ``draft_tokens``, ``accepted`` and ``verified`` (tokens the passes after the prefill
        ran: one a step plus its drafts).
    """
    counts = {"steps": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0, "verified": 0}
    if not reply:
        return counts
    context = np.array([*before, *prompt, reply[0]], dtype=np.int64)
    written, counts["steps"] = 1, 1
    while written < len(reply):
        draft = propose(context)
        accepted = 0
        while (
            accepted < len(draft)
            and written + accepted < len(reply)
            and int(draft[accepted]) == reply[written + accepted]
        ):
            accepted += 1
        step = min(accepted + 1, len(reply) - written)
        context = np.concatenate([context, np.asarray(reply[written : written + step])])
        written += step
        counts["steps"] += 1
        counts["verified"] += 1 + len(draft)
        if len(draft):
            counts["drafts"] += 1
            counts["draft_tokens"] += len(draft)
            counts["accepted"] += accepted
    return counts


def _add(total: dict[str, int], part: Mapping[str, int]) -> None:
    for key, value in part.items():
        total[key] = total.get(key, 0) + value


def replay_policy(
    questions: Iterable[Sequence[Mapping[str, Any]]],
    variants: Mapping[str, Drafter] = VARIANTS,
    lookup: Callable[..., np.ndarray] | None = None,
) -> dict[str, dict[str, Any]]:
    """Replay one policy's requests, question by question in order, under each drafter.

    Args:
        questions: Per question, its requests in order, each with ``prompt_ids`` and
            ``output_ids`` (a row's ``requests``).
        variants: Name -> drafter.
        lookup: The matching function (default vLLM's).

    Returns:
        Name -> summed counts over every request, with ``tokens`` written, ``questions`` and
        ``tokens_per_step``.
    """
    asked = [list(q) for q in questions]
    out: dict[str, dict[str, Any]] = {}
    for name, drafter in variants.items():
        propose = ngram_drafter(drafter, lookup)
        total: dict[str, int] = {}
        memory: list[list[int]] = []
        for requests in asked:
            for request in requests:
                reply = list(request["output_ids"])
                before = [t for past in memory[-HISTORY:] for t in past] if drafter.history else []
                _add(total, replay(request["prompt_ids"], reply, propose, before))
                total["tokens"] = total.get("tokens", 0) + len(reply)
                memory.append(reply)
        steps = total.get("steps", 0)
        out[name] = {
            **total,
            "questions": len(asked),
            "tokens_per_step": round(total.get("tokens", 0) / steps, 2) if steps else None,
        }
    return out
