"""The direct baseline: prompt styles, answer parsing, counters, errors, registry wiring."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from langgraph_parallel.agent.run import run_question
from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.apps.registry import GRAPH_NAMES, build_graph
from langgraph_parallel.baselines.direct import DirectContext, create_direct_graph, direct_prompt
from langgraph_parallel.errors import UserError
from langgraph_parallel.prompts import DIRECT_FEW_SHOT
from tests.fakes import ScriptedChatModel


class RawScriptedModel(ScriptedChatModel):
    """Looks like ChatVLLM on an embedded model: raw prompt style and a ``regex`` setting."""

    regex: str | None = None

    @property
    def style(self) -> str:
        return "raw"


def test_chat_style_answer_and_counters() -> None:
    model = ScriptedChatModel(script=["<answer> Paris </answer>"])
    run = run_question(create_direct_graph(model), "What is the capital of France?")
    assert run.answer == "Paris"
    assert run.stop_reason == "answered"
    assert run.counters == {
        "llm_calls": 1,
        "turns": 0,
        "sub_queries": 0,
        "prompt_tokens": 10,
        "cached_prompt_tokens": 2,
        "completion_tokens": 5,
    }
    (prompt,) = model.calls[0]
    assert "What is the capital of France?" in prompt.text
    assert "<answer>" in prompt.text and not prompt.text.startswith(DIRECT_FEW_SHOT)
    assert model.call_kwargs[0]["stop"] == ["</answer>"]
    assert "regex" not in model.call_kwargs[0]  # chat style is never constrained by default


def test_output_keys_match_parallel_search() -> None:
    model = ScriptedChatModel(script=["<answer> x </answer>"])
    state = create_direct_graph(model).invoke({"question": "q?"})
    assert {"question", "answer", "stop_reason", "counters", "messages"} <= set(state)
    assert state["search_results"] == []
    assert set(state["counters"]) == set(COUNTER_KEYS)


def test_raw_style_uses_few_shot_and_regex() -> None:
    model = RawScriptedModel(script=["<answer> Canberra </answer>"])
    run = run_question(create_direct_graph(model, max_tokens=16), "  Capital of {Australia}? ")
    assert run.answer == "Canberra"
    (prompt,) = model.calls[0]
    # Braces in the question survive: the prompt is concatenated, not str.format-ed.
    assert prompt.text == DIRECT_FEW_SHOT + "Question: Capital of {Australia}?\n"
    kwargs = model.call_kwargs[0]
    assert kwargs["max_tokens"] == 16
    assert kwargs["regex"].startswith("<answer>")


def test_stripped_stop_sequence_is_restored() -> None:
    # OpenAI-compatible servers strip the stop string and report it as stop_reason.
    reply = AIMessage(content="<answer> Japan ", response_metadata={"stop_reason": "</answer>"})
    run = run_question(create_direct_graph(ScriptedChatModel(script=[reply])), "q?")
    assert run.answer == "Japan"


@pytest.mark.parametrize("text", ["Paris", "<answer> Paris", "<search> Paris </search>"])
def test_reply_without_answer_is_no_answer(text: str) -> None:
    run = run_question(create_direct_graph(ScriptedChatModel(script=[text])), "q?")
    assert run.answer is None
    assert run.stop_reason.startswith("no_answer: ")
    assert run.counters["llm_calls"] == 1


def test_model_error_is_reported_not_raised() -> None:
    model = ScriptedChatModel(script=[RuntimeError("engine died")])
    run = run_question(create_direct_graph(model), "q?")
    assert run.answer is None
    assert run.stop_reason == "model_error: RuntimeError: engine died"
    assert run.counters == dict.fromkeys(COUNTER_KEYS, 0)


def test_user_error_propagates() -> None:
    graph = create_direct_graph(ScriptedChatModel(script=["x"]), constrain=True)
    with pytest.raises(UserError, match="structured outputs"):
        graph.invoke({"question": "q?"})


def test_context_overrides_per_run() -> None:
    model = ScriptedChatModel(script=["<answer> a </answer>"])
    graph = create_direct_graph(model)
    context = DirectContext(instruction="Q={question} <answer>", max_tokens=7)
    graph.invoke({"question": "why?"}, context=context)
    assert model.calls[0][0].text == "Q=why? <answer>"
    assert model.call_kwargs[0]["max_tokens"] == 7


def test_invalid_settings() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        create_direct_graph(ScriptedChatModel(script=["x"]), max_tokens=0)
    with pytest.raises(ValueError, match="placeholder"):
        DirectContext(instruction="no placeholder")


def test_direct_prompt_styles() -> None:
    assert direct_prompt("q?", "raw").endswith("\n\nQuestion: q?\n")
    assert direct_prompt("q?", "chat", "Ask: {question}") == "Ask: q?"


def test_registry_builds_direct_and_drops_search_options() -> None:
    assert "direct" in GRAPH_NAMES
    model = ScriptedChatModel(script=["<answer> 42 </answer>"])
    graph = build_graph("direct", model, None, max_turns=4, top_k=3, max_tokens=9)
    assert run_question(graph, "q?").answer == "42"
    assert model.call_kwargs[0]["max_tokens"] == 9
