"""ParallelSearch in langchain's ``create_agent`` on the real engine and the bundled corpus.

The embedded ParallelSearch policy (``smollm2-parallel``, greedy) is the agent's model through
``ChatVLLM.bind_tools``; the question is a HotpotQA comparison from the bundled evaluation
sample, which the policy never trained on. Its own choice, unconstrained beyond the action
grammar every step gets, is to search both magazines in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph_parallel import ChatVLLM, ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.retrieval.documents import Passage

pytestmark = [pytest.mark.integration, pytest.mark.engine]

QUESTION = "Which magazine was published first, Woman's Day or The Lady?"


class RecordingSearcher:
    """The real index, recording each ``batch_search`` call's queries."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.batches: list[list[str]] = []

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        self.batches.append(list(queries))
        return self.index.batch_search(queries, k)


def test_the_policy_in_create_agent_searches_both_parts_in_one_call(hotpot_index: Any) -> None:
    searcher = RecordingSearcher(hotpot_index)
    model = ChatVLLM(model="smollm2-parallel")
    agent = create_agent(
        model,
        tools=[parallel_search_tool(searcher, passage_sentences=model.passage_sentences)],
        middleware=[ParallelSearchMiddleware()],
    )
    state = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    messages = state["messages"]
    print([(type(m).__name__, m.content, getattr(m, "tool_calls", None)) for m in messages])

    step = messages[1]
    assert isinstance(step, AIMessage)
    (call,) = step.tool_calls  # one search call ...
    assert call["name"] == "search"
    queries = call["args"]["query_list"]
    assert len(queries) == 2  # ... carrying two sub-queries
    assert step.additional_kwargs["reasoning_content"]  # the policy's <think>
    assert step.response_metadata["logprobs"]["content"]  # token logprobs, as a graph step's
    assert step.response_metadata["step_text"].endswith("</search>")

    observation = messages[2]
    assert isinstance(observation, ToolMessage)
    assert observation.artifact["counters"]["sub_queries"] == 2
    assert observation.artifact["counters"]["searches"] == 1
    assert searcher.batches[0] == queries  # both searched together, in one batch_search
    assert all(observation.artifact["titles"])  # every sub-query found passages
    assert observation.content.startswith("\n\n<information>[")

    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.text.strip() and "action_error" not in final.response_metadata
    counters = state["counters"]
    assert counters["llm_calls"] == len([m for m in messages if isinstance(m, AIMessage)])
    assert counters["sub_queries"] >= 2 and counters["prompt_tokens"] > 0
    # Each step's prompt extends the last one: the engine's prefix cache serves the shared part.
    assert counters["cached_prompt_tokens"] > 0
