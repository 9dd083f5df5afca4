"""The recalling drafter: vLLM's prompt lookup over a request with the engine's earlier replies."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from langgraph_parallel.models.drafter import RECALLING_SPECULATION, RecallingDrafter


def _drafter(k: int = 8) -> RecallingDrafter:
    ngram = pytest.importorskip("vllm.v1.spec_decode.ngram_proposer")
    found = ngram._find_longest_matched_ngram_and_propose_tokens
    config = SimpleNamespace(
        speculative_config=SimpleNamespace(num_speculative_tokens=k),
        model_config=SimpleNamespace(max_model_len=64),
    )
    return RecallingDrafter(config, lookup=getattr(found, "py_func", found))


class Batch:
    """The rows vLLM hands a drafter: each request's tokens so far, and what it just accepted."""

    def __init__(self, *prompts: list[int]) -> None:
        self.rows = [list(p) for p in prompts]

    def step(self, drafter: RecallingDrafter, *accepted: list[int]) -> list[list[int]]:
        for row, tokens in zip(self.rows, accepted, strict=True):
            row.extend(tokens)
        cpu = np.zeros((len(self.rows), 64), dtype=np.int32)
        for i, row in enumerate(self.rows):
            cpu[i, : len(row)] = row
        lengths = np.array([len(r) for r in self.rows], dtype=np.int32)
        return drafter.propose([list(a) for a in accepted], lengths, cpu)


def test_a_reply_the_engine_wrote_before_is_drafted_in_the_next_request() -> None:
    drafter = _drafter()
    first = Batch([50, 51, 52])
    first.step(drafter, [10])
    first.step(drafter, [11])
    first.step(drafter, [12, 13])
    assert not drafter.replies  # still running: nothing remembered yet
    second = Batch([60, 61])
    assert second.step(drafter, [10]) == [[]]  # a new request in the row: the first is kept
    assert list(drafter.replies) == [[10, 11, 12, 13]]
    draft = second.step(drafter, [11])[0]
    assert draft[:2] == [12, 13]  # "10 11" was followed by "12 13" in the earlier reply


def test_the_next_call_of_a_question_is_a_new_request_though_it_starts_the_same() -> None:
    drafter = _drafter()
    call = Batch([50, 51, 52])
    call.step(drafter, [10])
    call.step(drafter, [11, 12])
    # The next call: the same prompt, the reply and an observation, as one new request.
    again = Batch([50, 51, 52, 10, 11, 12, 70, 71])
    again.step(drafter, [10])
    assert list(drafter.replies) == [[10, 11, 12]]


def test_a_finished_request_whose_row_the_batch_no_longer_reaches_is_remembered() -> None:
    drafter = _drafter()
    both = Batch([50, 51], [60, 61])
    both.step(drafter, [1], [2])
    both.step(drafter, [3], [4, 5])
    both.rows.pop()  # the second request finished
    both.step(drafter, [6])
    assert list(drafter.replies) == [[2, 4, 5]]
    assert not both.step(drafter, [])[0]  # a prefill step drafts nothing


def test_the_engine_setting_names_this_class_for_vllms_custom_proposer() -> None:
    assert RECALLING_SPECULATION["method"] == "custom_class"
    module, name = RECALLING_SPECULATION["model"].rsplit(".", 1)
    assert getattr(__import__(module, fromlist=[name]), name) is RecallingDrafter
