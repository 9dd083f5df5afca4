"""Fixtures for integration tests: the real in-process engine and the real corpus index.

The engine is process-global (one per model and settings), so every test that uses
``chat_model`` shares one engine start per pytest run.
"""

from __future__ import annotations

import pytest

from langgraph_parallel.models.vllm_chat import ChatVLLM


@pytest.fixture(scope="session")
def chat_model() -> ChatVLLM:
    """The embedded SmolLM2 on the in-process vLLM engine (greedy, short outputs)."""
    model = ChatVLLM(model="smollm2", max_tokens=64)
    _ = model.worker  # start the engine once, outside any single test's timing
    return model


@pytest.fixture(scope="session")
def hotpot_index():  # type: ignore[no-untyped-def]
    """The default index over the bundled HotpotQA corpus (BM25 + the prebuilt MiniLM matrix)."""
    from langgraph_parallel.retrieval.indexes import default_index

    return default_index()
