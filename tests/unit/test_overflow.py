"""A step whose prompt no longer fits the model's context: answer over a trimmed transcript."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.overflow import LEFT_OUT, is_context_overflow
from langgraph_parallel.agent.policy import PolicySpec
from tests.fakes import CountingSearcher, ScriptedChatModel

VLLM_REFUSAL = (
    "This model's maximum context length is 256 tokens. However, your prompt contains 401 input "
    "tokens, which exceeds this limit even without any output tokens. Please reduce the length "
    "of the input prompt. (parameter=input_tokens, value=401)"
)  # what vLLM 0.32 raised here for a 256-token engine


class SmallContext(ScriptedChatModel):
    """Refuses a prompt holding more than ``room`` observations' passages or more than
    ``max_messages`` messages, in vLLM's words."""

    room: int = 2
    max_messages: int = 100
    prompt_style: str = "raw"
    regex: str | None = None  # decodes under a grammar, as ChatVLLM does

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        full = sum("<information>" in m.text and m.text != LEFT_OUT for m in messages[1:])
        if full > self.room or len(messages) > self.max_messages:
            self._calls.append(list(messages))
            self._kwargs.append(dict(kwargs))
            raise ValueError(VLLM_REFUSAL)
        return super()._generate(messages, *args, **kwargs)


SEARCHES = [f"<think>more</think><search> q{i} </search>" for i in range(4)]


def run(model: ScriptedChatModel) -> dict[str, Any]:
    graph = create_parallel_search_graph(model, CountingSearcher(), max_turns=6)
    return graph.invoke({"question": "Q?"})


def test_a_full_context_ends_in_an_answer_over_the_trimmed_transcript() -> None:
    model = SmallContext(script=[*SEARCHES[:3], "<answer> long </answer>", "<answer> a </answer>"])
    state = run(model)
    assert state["answer"] == "a" and state["stop_reason"] == "answered"
    assert state["counters"]["trimmed_steps"] == 1
    refused, answered = model.calls[-2], model.calls[-1]
    assert len(refused) == len(answered)  # the same step, the older passages left out
    assert sum(m.text == LEFT_OUT for m in answered) == 2
    assert "<information>" in answered[-1].text and answered[-1].text != LEFT_OUT
    # The answer-only grammar, where the step before it could search.
    assert "search" in model.call_kwargs[-2]["regex"]
    assert "search" not in model.call_kwargs[-1]["regex"]
    # The state keeps every observation; only the call was trimmed.
    kept = state["transcript"][1:]
    assert sum("<information>" in m.text and m.text != LEFT_OUT for m in kept) == 3


def test_when_even_the_trimmed_transcript_is_too_long_the_error_is_reported() -> None:
    model = SmallContext(max_messages=2, script=[SEARCHES[0], "<answer> x </answer>"])
    state = run(model)
    assert state["answer"] is None and "maximum context length" in state["stop_reason"]
    assert state["stop_reason"].startswith("model_error: ")
    # The first step; the second, refused; with its one observation left out, refused again
    # (keeping the last observation leaves nothing to cut: not sent).
    assert len(model.calls) == 3 and model.calls[-1][-1].text == LEFT_OUT


class DiesOnRetry(SmallContext):
    """Refuses the full prompt, then fails outright on the trimmed retry (an engine that died)."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if any(m.text == LEFT_OUT for m in messages):
            self._calls.append(list(messages))
            raise RuntimeError("engine died")
        return super()._generate(messages, *args, **kwargs)


def test_a_trimmed_retry_that_fails_is_reported_not_raised() -> None:
    # Found by fault injection (sequential graph, fuzzed model): the retry ran inside the
    # handler of the first failure, so its own failure escaped the graph.
    model = DiesOnRetry(script=[*SEARCHES[:3], "<answer> a </answer>"])
    state = run(model)
    assert state["answer"] is None
    assert (
        state["stop_reason"].startswith("model_error: ") and "engine died" in state["stop_reason"]
    )
    assert model.calls[-1][-1].text != LEFT_OUT and any(m.text == LEFT_OUT for m in model.calls[-1])


def test_an_answer_only_step_that_searches_ends_the_run_with_the_reason() -> None:
    model = SmallContext(script=[*SEARCHES[:3], "<search> again </search>"])
    state = run(model)
    assert state["answer"] is None and state["stop_reason"].startswith("context_full: ")
    assert "searched again" in state["stop_reason"]


def test_overflow_is_read_from_each_providers_words_and_causes() -> None:
    assert is_context_overflow(ValueError(VLLM_REFUSAL))
    assert is_context_overflow(RuntimeError("Error code: 400 - context_length_exceeded"))
    assert is_context_overflow(ValueError("prompt is too long: 210000 tokens > 200000 maximum"))
    wrapped = RuntimeError("request failed")
    wrapped.__cause__ = ValueError(VLLM_REFUSAL)
    assert is_context_overflow(wrapped)
    assert not is_context_overflow(ConnectionError("connection refused"))


class Windowed(ScriptedChatModel):
    """Declares a window and counts a prompt's tokens (its words here); it refuses, as vLLM
    does, any prompt it is sent that would not fit, and records every size it was sent."""

    window: int = 323
    policy: PolicySpec = PolicySpec(style="raw")
    sent: list[int] = []

    def model_post_init(self, context: Any) -> None:
        self.policy = PolicySpec(style="raw", context_tokens=self.window)
        self.sent = []

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return sum(len(m.text.split()) for m in messages)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(self.get_num_tokens_from_messages(messages))
        if self.sent[-1] + kwargs["max_tokens"] > self.window:
            raise ValueError(VLLM_REFUSAL)
        return super()._generate(messages, *args, **kwargs)


def run_windowed(model: Windowed) -> dict[str, Any]:
    graph = create_parallel_search_graph(model, CountingSearcher(), max_turns=6, max_tokens=32)
    return graph.invoke({"question": "Q?"})


def test_a_model_that_declares_its_window_is_never_sent_a_prompt_it_must_refuse() -> None:
    # Words of the prompts (268, then 12 more a turn: the step and its 9-word observation) + 32
    # to generate: the third step's 292 would not fit 323; with its older observation left out
    # (7 words) it does, so it is made answer-only over that prompt, never sent whole.
    model = Windowed(script=[*SEARCHES[:2], "<answer> a </answer>"])
    state = run_windowed(model)
    assert state["answer"] == "a" and state["counters"]["trimmed_steps"] == 1
    assert "context_refusals" not in state["counters"]
    assert len(model.sent) == 3 and max(model.sent) + 32 <= 323
    assert sum(m.text == LEFT_OUT for m in model.calls[-1]) == 1  # the older observation


def test_with_no_room_even_trimmed_no_call_is_made_and_the_run_says_why() -> None:
    # The second step (280 + 32) does not fit 305, nor with its one observation left out.
    model = Windowed(window=305, script=[SEARCHES[0], "<answer> a </answer>"])
    state = run_windowed(model)
    assert state["answer"] is None and state["stop_reason"].startswith("context_full: ")
    assert "no call was made" in state["stop_reason"] and "305 tokens" in state["stop_reason"]
    assert model.sent == [268]  # only the first step was sent


def test_a_refused_prompt_is_counted_when_the_model_declares_no_window() -> None:
    model = SmallContext(script=[*SEARCHES[:3], "<answer> long </answer>", "<answer> a </answer>"])
    assert run(model)["counters"]["context_refusals"] == 1
