"""ParallelMuse over a ``create_agent`` app on the real engine: forks share the parent's prefix.

The agent is the embedded ParallelSearch policy (``smollm2-parallel``) as a tool-calling model
in ``create_agent`` with a checkpointer, over the bundled HotpotQA index. The wrapper runs it
once (sampled), ranks its steps by the uncertainty of the tokens the engine generated, and forks
it at the first-ranked step through the agent's checkpoints. Each prompt the engine receives is
recorded with the run's seed (a trajectory's seed is its index), so every fork's prompts can be
compared with its parent's byte for byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from langgraph_parallel import ChatVLLM, ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.models.replies import raw_text
from langgraph_parallel.parallel_muse.uncertainty import select_branch_points
from tests.fakes import muse_agent

pytestmark = [pytest.mark.integration, pytest.mark.engine]

QUESTION = "Which magazine was published first, Woman's Day or The Lady?"


class RecordingChatVLLM(ChatVLLM):
    """The in-process policy, recording each prompt it submits to the engine with its seed."""

    _prompts: list[tuple[Any, str]] = PrivateAttr(default_factory=list)

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        self._prompts.append((kwargs.get("seed"), raw_text(messages)))
        return super()._submit(messages, stop, **kwargs)


def test_forks_start_from_the_parents_prompt_and_read_it_from_the_cache(hotpot_index: Any) -> None:
    model = RecordingChatVLLM(model="smollm2-parallel", max_tokens=96)
    agent = create_agent(
        model,
        tools=[parallel_search_tool(hotpot_index, passage_sentences=model.passage_sentences)],
        middleware=[ParallelSearchMiddleware(max_turns=2)],
        checkpointer=InMemorySaver(),
    )
    # min_branch_step=0: any step may be the fork point, as select_branch_points ranks them.
    muse = muse_agent(
        agent, budget=3, top_k_steps=1, samples_per_step=2, region="all", min_branch_step=0
    )
    out = muse.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert model.style == "raw"  # the engine's prompt is the text recorded, tokenized

    first, *forks = out["trajectories"]
    # The fork point is the step of t0 its token uncertainty ranks first.
    (point,) = out["branch_points"]
    assert [point] == select_branch_points([first], "all", "ppl", 1)
    assert first["steps"][point["step"]]["logprobs"]
    assert len(forks) == 2 and all(f["parent"] == "t0" for f in forks)

    prompts: dict[int, list[str]] = {}
    for seed, prompt in model._prompts:
        prompts.setdefault(seed, []).append(prompt)
    parent = prompts[0][point["step"]]  # t0's prompt for the step forked
    for fork in forks:
        assert fork["branch_step"] == point["step"]
        own = prompts[fork["index"]]
        assert own[0] == parent  # the fork re-generates the step from the parent's prompt ...
        assert all(p.startswith(parent) for p in own)  # ... and goes on from it
        step = next(s for s in fork["steps"] if s["origin"] == fork["id"])
        usage = step["usage"]
        # The engine served the parent's prefix from its cache (whole 32-token blocks).
        assert usage["cached_prompt_tokens"] >= usage["prompt_tokens"] - 64, usage
    assert out["counters"]["cached_prompt_tokens"] > 0

    # The join picked an answer one of the trajectories gave.
    record = out["aggregation"]
    assert record["join"] == "majority" and record["chosen"] is not None, record
    chosen = next(t for t in out["trajectories"] if t["id"] == record["chosen"])
    assert out["answer"] == chosen["answer"] and out["answer"]
    assert out["messages"][-1].text.strip() == out["answer"]
