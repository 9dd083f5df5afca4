"""The engine is asked to continue the very token ids the policy was trained on (real tokenizer).

SmolLM2's tokenizer splits ``"\\n\\n"`` by what follows it: one token at the end of a prompt, two
before the model's ``<think>``. Training tokenizes each trajectory whole
(:func:`~langgraph_parallel.train.encode.encode_transcript`), so every prompt ``ChatVLLM``
renders in raw style must be a prefix of its trajectory's training ids. The tokenizer is vLLM's
own (``get_tokenizer``); the engine is replaced at its one seam, so no engine starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from langgraph_parallel.models.boundary import context_ids
from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.replies import message_text
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.train.encode import encode_transcript
from tests.fakes import CountingSearcher
from tests.integration.test_special_tokens_real import QUESTION, chat_vllm

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(resolve_model("smollm2-parallel")[0])


def test_every_prompt_of_a_run_is_a_prefix_of_the_ids_its_trajectory_trains_on(
    tokenizer: Any,
) -> None:
    model, worker = chat_vllm(tokenizer, model="smollm2-parallel")
    graph = create_parallel_search_graph(model, CountingSearcher(), max_turns=4)
    state = graph.invoke({"question": QUESTION})
    assert state["answer"] == "Arthur's Magazine" and len(worker.prompts) == 2
    messages = [
        {"role": "assistant" if m.type == "ai" else "user", "content": message_text(m)}
        for m in state["transcript"]
    ]
    trained, _ = encode_transcript(messages, tokenizer)
    for prompt in worker.prompts:
        assert trained[: len(prompt)] == prompt
    # The second prompt ends after an observation: encoded alone it would end otherwise.
    second = "".join(m["content"] for m in messages[:3])
    assert second.endswith("\n\n")
    assert tokenizer.encode(second) != trained[: len(tokenizer.encode(second))]


def test_text_ending_in_a_word_or_in_whitespace_the_probe_would_join_is_encoded_plainly(
    tokenizer: Any,
) -> None:
    for text in ("Question: who?", "a b  ", ""):
        assert context_ids(tokenizer, text) == tokenizer.encode(text)
    ids = context_ids(tokenizer, "</information>\n\n")
    assert tokenizer.decode(ids) == "</information>\n\n"
    assert ids != tokenizer.encode("</information>\n\n")


def test_a_tokenizer_without_offsets_gets_the_plain_encoding() -> None:
    class Slow:
        def encode(self, text: str) -> list[int]:
            return [len(text)]

        def __call__(self, text: str, **kwargs: Any) -> Any:
            raise NotImplementedError("return_offsets_mapping is not available")

    assert context_ids(Slow(), "x\n\n") == [3]
