"""A prompt-lookup drafter that also looks up the model's earlier replies (a vLLM custom proposer).

vLLM's n-gram drafter (prompt lookup, the CPU engine's default speculation) proposes the tokens
that followed the longest recent n-gram wherever it occurred earlier in the request: the
prompt and the reply so far. A trained policy writes the same phrases in every question ("I
need A and B; they are independent, so I search them at once", "1923 is earlier than 1939 ->")
and none of them is in its prompt, so each costs an engine step a token. This drafter runs the
same lookup (vLLM's own function) over the request with the engine's last :data:`HISTORY`
replies in front of it, so a phrase the policy wrote before is proposed again. The model
verifies every draft as before: greedy replies are unchanged.

Measured on the CPU engine (``bench run latency-policies`` on 3 HotpotQA comparison questions,
``benchmarks/latency/policies/recalling-drafter/``): the same replies, token for token, in 22%
fewer engine steps for the parallel policy (202 -> 158) and 14% fewer for the sequential one
(326 -> 280); a step is one forward pass, most of a question's decode time. Replaying drafters
offline on recorded replies (:mod:`lab.experiments.latency.drafts` in a clone, which gives the
engine's own step counts exactly for vLLM's drafter) found no other setting that helps: 4
drafted tokens instead of 8, or 3-token matches, take more steps.

Opt in with the engine setting
``{"speculative_config": {"method": "custom_class", "model":
"langgraph_parallel.models.drafter.RecallingDrafter", "num_speculative_tokens": 8}}``
(``LANGGRAPH_PARALLEL_ENGINE``, or :data:`RECALLING_SPECULATION`); vLLM builds it in the engine
core's process and calls :meth:`RecallingDrafter.propose` once a step with the batch.

Which reply is a row's: vLLM hands the drafter only the batch's rows (each request's tokens,
the accepted ones included, and the tokens it just accepted), no request ids. A row holds the
same request as at the last step when it grew by exactly the tokens accepted and its earlier
tokens end as they did (a request's every call starts with the same instructions, so its
first tokens tell nothing); else a new request took it. The tokens accepted in a row since its
request came are its reply, remembered when the row changes or the batch no longer reaches it.
A request moved to another row when the batch is compacted is then remembered in two parts:
only a draft's chances suffer, never its correctness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["HISTORY", "RECALLING_SPECULATION", "RecallingDrafter"]

HISTORY = 8
"""Earlier replies looked up (about 500 tokens for the shipped policies)."""
MIN_NGRAM, MAX_NGRAM = 2, 5
"""The n-gram bounds of the CPU engine's prompt lookup (``engine.CPU_ENGINE_DEFAULTS``)."""
_TAIL = 16  # last tokens of a row compared from one step to the next

RECALLING_SPECULATION: dict[str, Any] = {
    "method": "custom_class",
    "model": f"{__name__}.RecallingDrafter",
    "num_speculative_tokens": 8,
}
"""The engine's ``speculative_config`` that runs this drafter."""


@dataclass
class _Row:
    """What one batch row held at the last step: its length, its last tokens, its reply."""

    length: int
    tail: bytes
    reply: list[int] = field(default_factory=list)


def _vllm_lookup() -> Callable[..., np.ndarray]:
    from vllm.v1.spec_decode.ngram_proposer import (
        _find_longest_matched_ngram_and_propose_tokens as lookup,
    )

    return lookup


class RecallingDrafter:
    """vLLM's prompt lookup over a request with the engine's earlier replies in front of it.

    Args:
        vllm_config: The engine's config (vLLM passes it); its ``speculative_config`` gives
            ``num_speculative_tokens``.
        lookup: The matching function (default vLLM's ``ngram_proposer`` one); tests pass its
            Python body.
    """

    def __init__(self, vllm_config: Any, lookup: Callable[..., np.ndarray] | None = None) -> None:
        self.k = int(vllm_config.speculative_config.num_speculative_tokens)
        self.max_model_len = int(vllm_config.model_config.max_model_len)
        self.lookup = lookup or _vllm_lookup()
        self.replies: deque[list[int]] = deque(maxlen=HISTORY)
        self._rows: list[_Row | None] = []

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        """Load nothing (vLLM calls it on every drafter; this one has no model)."""

    def _track(self, row: int, tokens: np.ndarray, length: int, sampled: Sequence[int]) -> None:
        """Follow row ``row``: remember its old request's reply if a new one took it."""
        while len(self._rows) <= row:
            self._rows.append(None)
        held = self._rows[row]
        same = (
            held is not None
            and length == held.length + len(sampled)
            and tokens[max(held.length - _TAIL, 0) : held.length].tobytes() == held.tail
        )
        if not same:
            if held is not None and held.reply:
                self.replies.append(held.reply)
            held = self._rows[row] = _Row(length, b"")
        assert held is not None
        held.length = length
        held.tail = tokens[max(length - _TAIL, 0) : length].tobytes()
        held.reply.extend(int(t) for t in sampled)

    def _forget_rows_from(self, first: int) -> None:
        """Remember the replies of rows the batch no longer reaches (finished requests)."""
        for held in self._rows[first:]:
            if held is not None and held.reply:
                self.replies.append(held.reply)
        del self._rows[first:]

    def propose(
        self,
        sampled_token_ids: Sequence[Sequence[int]],
        num_tokens_no_spec: np.ndarray,
        token_ids_cpu: np.ndarray,
        slot_mappings: Any = None,
    ) -> list[list[int]]:
        """Return each row's draft (vLLM's custom-proposer interface; empty: no draft).

        Args:
            sampled_token_ids: Per row, the tokens accepted this step (empty while a prompt is
                still being prefilled).
            num_tokens_no_spec: Per row, its tokens so far.
            token_ids_cpu: Per row, its token ids (the first ``num_tokens_no_spec`` hold).
            slot_mappings: Unused (a drafter with a model of its own reads it).
        """
        memory = [t for reply in self.replies for t in reply]
        before = np.asarray(memory, dtype=token_ids_cpu.dtype)
        drafts: list[list[int]] = []
        for row, sampled in enumerate(sampled_token_ids):
            length = int(num_tokens_no_spec[row])
            context = token_ids_cpu[row, :length]
            self._track(row, context, length, sampled)
            if not sampled or length >= self.max_model_len:
                drafts.append([])
                continue
            tokens = np.concatenate([before, context]) if before.size else context
            room = self.max_model_len + before.size  # the lookup's bound counts the memory too
            draft = self.lookup(tokens, MIN_NGRAM, MAX_NGRAM, room, self.k)
            drafts.append([int(t) for t in draft[: self.max_model_len - length]])
        self._forget_rows_from(len(sampled_token_ids))
        return drafts
